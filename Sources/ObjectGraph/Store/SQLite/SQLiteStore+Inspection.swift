import Foundation
import GRDB
import GRDBSQLite

// Before a store opens a file for writing (GRDB's pool switches it to WAL and writes to check it
// can), the file is read through a connection that cannot write: refusing a file never changes it.

extension SQLiteStore {
    /// Refuses, without touching it, a file that exists, is not empty and is not an SQLite database.
    static func checkHeader(of url: URL) throws {
        guard let handle = try? FileHandle(forReadingFrom: url) else { return }
        defer { try? handle.close() }
        let header = (try? handle.read(upToCount: 16)) ?? Data()
        if header.isEmpty { return }
        if header != Data("SQLite format 3\0".utf8) {
            throw ObjectGraphError(.notADatabase, "The file at \(url.path) is not an SQLite database; it was left as it was", url: url)
        }
    }

    /// Checks an existing SQLite file through a read-only connection: it must be an ObjectGraph
    /// store written with `model` (or an SQLite database with no tables, which becomes one), and its
    /// metadata and tables must be readable. Throws `.notADatabase` or `.incompatibleModel`, naming
    /// the file, and leaves it as it was.
    ///
    /// The connection opens the file `immutable` (no lock, no -wal or -shm file created) unless a
    /// -wal file is beside it, whose content must then be read too.
    static func inspect(_ url: URL, model: ManagedObjectModel) throws {
        let path = url.path
        let hasWAL = FileManager.default.fileExists(atPath: path + "-wal")
        let encoded = path.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? path
        let uri = "file:\(encoded)?" + (hasWAL ? "mode=ro" : "immutable=1")
        var connection: OpaquePointer?
        defer { sqlite3_close_v2(connection) }
        func failure(_ code: CInt) -> any Error {
            let message = connection.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(code))
            return translate(DatabaseError(resultCode: ResultCode(rawValue: code), message: message), url: url, while: "checking the file")
        }
        let opened = sqlite3_open_v2(uri, &connection, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, nil)
        guard opened == SQLITE_OK, let connection else { throw failure(opened) }
        func rows(_ sql: String) throws -> [[String]] {
            var statement: SQLiteStatement?
            let prepared = sqlite3_prepare_v2(connection, sql, -1, &statement, nil)
            defer { sqlite3_finalize(statement) }
            guard prepared == SQLITE_OK, let statement else { throw failure(prepared) }
            var result: [[String]] = []
            while true {
                let code = sqlite3_step(statement)
                if code == SQLITE_DONE { return result }
                guard code == SQLITE_ROW else { throw failure(code) }
                result.append((0..<sqlite3_column_count(statement)).map { Value.text(statement, $0) })
            }
        }

        let tables = try rows("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name").map { $0[0] }
        if tables.isEmpty { return }
        guard tables.contains(SQLiteSchema.metadataTable) else {
            throw ObjectGraphError(
                .incompatibleModel,
                "The file at \(path) is an SQLite database with tables (\(tables.prefix(3).joined(separator: ", "))), but not an ObjectGraph store; it was left as it was",
                url: url)
        }
        var metadata: [String: String] = [:]
        for row in try rows("SELECT key, value FROM \(SQLiteSchema.metadataTable)") where row.count == 2 { metadata[row[0]] = row[1] }
        guard let hash = metadata[PersistentStore.metadataModelHashKey] else {
            throw ObjectGraphError(
                .incompatibleModel,
                "The store at \(path) has no model version hash in its metadata, so the model it was written with is unknown; it was left as it was",
                url: url)
        }
        if hash != model.versionHash {
            throw ObjectGraphError(
                .incompatibleModel,
                "The store at \(path) was written with another model (version hash \(hash), this model's is \(model.versionHash)); migrate it before opening it with this model",
                url: url)
        }
        // Read the first row of every table, so a damaged file is refused now rather than at a fetch.
        for table in tables { _ = try rows("SELECT 1 FROM \(SQLiteSchema.quote(table)) LIMIT 1") }
    }
}
