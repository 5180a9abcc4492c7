import Foundation
import GRDB

/// The store tools of `objectgraph` (`verify`, `vacuum`, `checkpoint`) on SQLite stores.
package enum StoreTools {
    /// See ``SQLiteStore/verify(at:model:progress:)``.
    package static func verify(at url: URL, model: ManagedObjectModel, progress: (Int, Int) -> Void = { _, _ in }) throws -> StoreVerification {
        try SQLiteStore.verify(at: url, model: model, progress: progress)
    }

    package struct VacuumResult: Sendable, Codable {
        /// The database and its write-ahead log, before and after.
        package var bytesBefore: Int
        package var bytesAfter: Int
    }

    /// Checkpoints the write-ahead log, then rebuilds the file without its free pages (`VACUUM`).
    ///
    /// - Throws: ``ObjectGraphError`` (`.notADatabase`, `.busy`, `.io`) naming the file.
    package static func vacuum(at url: URL, progress: (Int, Int) -> Void = { _, _ in }) throws -> VacuumResult {
        let before = size(of: url)
        try withConnection(to: url, doing: "vacuuming") { db in
            progress(0, 3)
            try db.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)")
            progress(1, 3)
            try db.execute(sql: "VACUUM")
            progress(2, 3)
            try db.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)")
            progress(3, 3)
        }
        return VacuumResult(bytesBefore: before, bytesAfter: size(of: url))
    }

    package struct CheckpointResult: Sendable, Codable {
        /// Whether another connection kept the checkpoint from finishing.
        package var busy: Bool
        package var framesInLog: Int
        package var framesCheckpointed: Int
        package var walBytesBefore: Int
        package var walBytesAfter: Int
    }

    /// Moves the write-ahead log into the database and truncates it (`wal_checkpoint(TRUNCATE)`).
    ///
    /// - Throws: ``ObjectGraphError`` (`.notADatabase`, `.busy`, `.io`) naming the file.
    package static func checkpoint(at url: URL) throws -> CheckpointResult {
        let wal = URL(fileURLWithPath: url.path + "-wal")
        let before = fileSize(wal)
        let row = try withConnection(to: url, doing: "checkpointing") { db in
            try Row.fetchOne(db, sql: "PRAGMA wal_checkpoint(TRUNCATE)")
        }
        let busy: Int = row?[0] ?? 0
        let log: Int = row?[1] ?? 0
        let done: Int = row?[2] ?? 0
        return CheckpointResult(busy: busy != 0, framesInLog: max(0, log), framesCheckpointed: max(0, done), walBytesBefore: before, walBytesAfter: fileSize(wal))
    }

    /// Pretty, sorted JSON of a result, for `--json`.
    package static func json(_ value: some Encodable) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        return try encoder.encode(value)
    }

    private static func withConnection<T>(to url: URL, doing: String, _ body: (Database) throws -> T) throws -> T {
        guard FileManager.default.fileExists(atPath: url.path) else {
            throw ObjectGraphError(.io, "There is no store at \(url.path)", url: url)
        }
        try SQLiteStore.checkHeader(of: url)
        do {
            var configuration = Configuration()
            configuration.busyMode = .timeout(5)
            let queue = try DatabaseQueue(path: url.path, configuration: configuration)
            defer { try? queue.close() }
            return try queue.writeWithoutTransaction(body)
        } catch let error as ObjectGraphError {
            throw error
        } catch {
            throw SQLiteStore.translate(error, url: url, while: doing)
        }
    }

    private static func fileSize(_ url: URL) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: url.path)[.size]) as? Int) ?? 0
    }

    private static func size(of url: URL) -> Int {
        fileSize(url) + fileSize(URL(fileURLWithPath: url.path + "-wal"))
    }
}
