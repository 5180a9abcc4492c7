import Foundation
import GRDB
import ObjectGraphBenchCore

/// `frc_merge` through GRDB: what a `ValueObservation` of the sorted request does when the writer
/// commits — the request fetched again from the pool (served by an index on the sort keys) — then
/// the same diff as the raw side's, the IDs the writer updated being known.
extension GRDBSide {
    /// The IDs and identities (`i1`) of the results, in order.
    private static func sortedItems(_ db: Database) throws -> (ids: [Int64], rows: [Int64]) {
        var ids: [Int64] = [], rows: [Int64] = []
        let cursor = try Row.fetchCursor(db, sql: RawSide.selectSortedItems)
        while let row = try cursor.next() {
            ids.append(row[0])
            rows.append(row[1])
        }
        return (ids, rows)
    }

    /// Applies `changes` to a database seeded with rows 0..<rows (row `r` has id `r + 1`), in one
    /// write; the IDs of the rows updated.
    private static func save(_ changes: BenchResultsChanges, to pool: DatabasePool) throws -> [Int64] {
        try pool.write { db in
            for row in changes.deleted { try db.execute(sql: "DELETE FROM item WHERE id = ?", arguments: [Int64(row + 1)]) }
            for change in changes.updated {
                try db.execute(sql: "UPDATE item SET i0 = ? WHERE id = ?", arguments: [change.key, Int64(change.row + 1)])
            }
            for change in changes.inserted {
                let v = Int64(change.row)
                try db.execute(sql: RawSide.insertItem, arguments: [change.key, v, v, v, v, v, v, v, v, v])
            }
        }
        return changes.updated.map { Int64($0.row + 1) }
    }

    func resultsMerge(rows: Int, changes: BenchResultsChanges) throws -> BenchSample? {
        let (pool, remove) = try newDatabase("frc")
        defer { remove() }
        try pool.write { db in
            try Self.insertItems(db, count: rows)
            try db.execute(sql: RawSide.indexItemsBySortKeys)
        }
        let before = try pool.read { db in try Self.sortedItems(db) }
        guard before.ids.count == rows else { throw BenchError("frc_merge: \(before.ids.count) rows, expected \(rows)") }
        let updated = try Self.save(changes, to: pool)

        let (seconds, (after, diff)) = try BenchClock.measure {
            let after = try pool.read { db in try Self.sortedItems(db) }
            return (after, BenchResultsDiff(old: before.ids, new: after.ids, updated: updated))
        }
        return BenchSample(seconds: seconds, rows: diff.total, checksum: BenchResultsChanges.checksum(after.rows))
    }
}
