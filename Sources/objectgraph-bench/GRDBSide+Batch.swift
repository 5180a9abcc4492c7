import Foundation
import GRDB
import ObjectGraphBenchCore

/// The batch rows through GRDB, as a Swift user would write bulk work with it: plain SQL through a
/// cached statement for the insert, and the query interface's own batch APIs, `updateAll` and
/// `deleteAll`, for the update and the delete.
extension GRDBSide {
    /// A new database of its own, with the item table, and a function that closes it and removes its files.
    func newDatabase(_ name: String) throws -> (DatabasePool, remove: () -> Void) {
        let file = "\(name)-\(UUID().uuidString).sqlite"
        let pool = try open(file)
        try pool.write { db in try Self.createItems(db) }
        let directory = self.directory
        return (pool, {
            try? pool.close()
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(at: directory.appendingPathComponent(file + suffix)) }
        })
    }

    /// Inserts item rows 0..<count (each attribute equal to its row) through one cached statement.
    static func insertItems(_ db: Database, count: Int) throws {
        let statement = try db.cachedStatement(sql: RawSide.insertItem)
        for row in 0..<count {
            let v = Int64(row)
            try statement.execute(arguments: [v, v, v, v, v, v, v, v, v, v])
        }
    }

    /// The items whose `i1` is in `BenchData.batchRange(of: rows)`.
    private static func batchRange(rows: Int) -> QueryInterfaceRequest<GRDBItem> {
        let range = BenchData.batchRange(of: rows)
        return GRDBItem.filter((Int64(range.lowerBound)..<Int64(range.upperBound)).contains(Column("i1")))
    }

    func batchInsert(count: Int, access _: BenchAccess) throws -> BenchSample {
        let (pool, remove) = try newDatabase("batch-insert")
        defer { remove() }
        let seconds = try BenchClock.seconds {
            try pool.write { db in try Self.insertItems(db, count: count) }
        }
        let (rows, checksum) = try readAllItems(pool)
        return BenchSample(seconds: seconds, rows: rows, checksum: checksum)
    }

    func batchUpdate(rows: Int, run: Int) throws -> BenchSample {
        let pool = try database("batch", rows: rows)
        let value = BenchData.batchUpdateValue(run: run)
        let (seconds, updated) = try BenchClock.measure {
            try pool.write { db in try Self.batchRange(rows: rows).updateAll(db, Column("i0").set(to: value)) }
        }
        let holding = try pool.read { db in try GRDBItem.filter(Column("i0") == value).fetchCount(db) }
        return BenchSample(seconds: seconds, rows: updated, checksum: Int64(holding))
    }

    func batchStoreChecksum(rows: Int) throws -> Int64 {
        try database("batch", rows: rows).read { db in try Int64.fetchOne(db, sql: "SELECT SUM(i0) FROM item") ?? 0 }
    }

    func batchDelete(rows: Int) throws -> BenchSample {
        let (pool, remove) = try newDatabase("batch-delete")
        defer { remove() }
        try pool.write { db in try Self.insertItems(db, count: rows) }
        let (seconds, deleted) = try BenchClock.measure {
            try pool.write { db in try Self.batchRange(rows: rows).deleteAll(db) }
        }
        return BenchSample(seconds: seconds, rows: deleted, checksum: Int64(try pool.read { db in try GRDBItem.fetchCount(db) }))
    }
}
