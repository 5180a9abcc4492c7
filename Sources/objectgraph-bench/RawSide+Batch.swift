import Foundation
import ObjectGraphBenchCore

/// The batch rows through the SQLite C API: the same set-based work as ObjectGraph's batch
/// requests, as plain SQL — a prepared INSERT stepped per row in one transaction, one UPDATE, one
/// DELETE.
extension RawSide {
    static let updateBatchRange = "UPDATE item SET i0 = ? WHERE i1 >= ? AND i1 < ?"
    static let deleteBatchRange = "DELETE FROM item WHERE i1 >= ? AND i1 < ?"

    /// A new database of its own, with the item table, and a function that removes its files.
    func newDatabase(_ name: String) throws -> (RawConnection, remove: () -> Void) {
        let file = "\(name)-\(UUID().uuidString).sqlite"
        let connection = try open(file)
        try connection.execute(Self.createItems)
        let directory = self.directory
        return (connection, {
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(at: directory.appendingPathComponent(file + suffix)) }
        })
    }

    /// Runs a prepared statement bound to the bounds of `BenchData.batchRange(of: rows)` (and
    /// `value` first, if given); the rows it changed.
    private static func changeBatchRange(_ connection: RawConnection, _ sql: String, rows: Int, value: Int64? = nil) throws -> Int {
        let range = BenchData.batchRange(of: rows)
        let statement = try connection.prepare(sql)
        var index: Int32 = 1
        if let value { statement.bind(index, value); index += 1 }
        statement.bind(index, Int64(range.lowerBound))
        statement.bind(index + 1, Int64(range.upperBound))
        try statement.run()
        return connection.changes
    }

    /// The floor of a bulk insert is `insert`'s: a prepared INSERT stepped per row, one transaction.
    func batchInsert(count: Int, access _: BenchAccess) throws -> BenchSample {
        try insert(count: count, access: .keyValue)
    }

    func batchUpdate(rows: Int, run: Int) throws -> BenchSample {
        let connection = try database("batch", rows: rows)
        let value = BenchData.batchUpdateValue(run: run)
        let (seconds, updated) = try BenchClock.measure {
            try Self.changeBatchRange(connection, Self.updateBatchRange, rows: rows, value: value)
        }
        let count = try connection.prepare("SELECT COUNT(*) FROM item WHERE i0 = ?")
        count.bind(1, value)
        guard try count.step() else { throw BenchError("batch_update: no count") }
        return BenchSample(seconds: seconds, rows: updated, checksum: count.int64(0))
    }

    func batchStoreChecksum(rows: Int) throws -> Int64 {
        try database("batch", rows: rows).int64("SELECT SUM(i0) FROM item")
    }

    func batchDelete(rows: Int) throws -> BenchSample {
        let (connection, remove) = try newDatabase("batch-delete")
        defer { remove() }
        try connection.execute("BEGIN")
        try Self.insertItems(connection, count: rows)
        try connection.execute("COMMIT")
        let (seconds, deleted) = try BenchClock.measure {
            try Self.changeBatchRange(connection, Self.deleteBatchRange, rows: rows)
        }
        return BenchSample(seconds: seconds, rows: deleted, checksum: try connection.int64("SELECT COUNT(*) FROM item"))
    }
}
