import Foundation
import ObjectGraphBenchCore

/// `frc_merge` through the SQLite C API: what a hand-written list does when another connection
/// commits — its sorted query run again (served by an index on the sort keys), and the new IDs
/// diffed against the old ones, the IDs the writer updated being known (as a save notification
/// would tell them).
extension RawSide {
    static let indexItemsBySortKeys = "CREATE INDEX item_i0_i1 ON item (i0, i1)"
    static let selectSortedItems = "SELECT id, i1 FROM item ORDER BY i0, i1"

    /// The IDs and identities (`i1`) of the results, in order.
    static func sortedItems(_ select: RawStatement) throws -> (ids: [Int64], rows: [Int64]) {
        var ids: [Int64] = [], rows: [Int64] = []
        while try select.step() {
            ids.append(select.int64(0))
            rows.append(select.int64(1))
        }
        select.reset()
        return (ids, rows)
    }

    /// Applies `changes` to a database seeded with rows 0..<rows (row `r` has id `r + 1`), in one
    /// transaction; the IDs of the rows updated.
    static func save(_ changes: BenchResultsChanges, to connection: RawConnection) throws -> [Int64] {
        try connection.execute("BEGIN")
        let delete = try connection.prepare("DELETE FROM item WHERE id = ?")
        for row in changes.deleted {
            delete.bind(1, Int64(row + 1))
            try delete.run()
        }
        let update = try connection.prepare("UPDATE item SET i0 = ? WHERE id = ?")
        for change in changes.updated {
            update.bind(1, change.key)
            update.bind(2, Int64(change.row + 1))
            try update.run()
        }
        let insert = try connection.prepare(insertItem)
        for change in changes.inserted {
            insert.bind(1, change.key)
            for k in 2...10 { insert.bind(Int32(k), Int64(change.row)) }
            try insert.run()
        }
        try connection.execute("COMMIT")
        return changes.updated.map { Int64($0.row + 1) }
    }

    func resultsMerge(rows: Int, changes: BenchResultsChanges) throws -> BenchSample? {
        let (reader, remove) = try newDatabase("frc")
        defer { remove() }
        try reader.execute("BEGIN")
        try Self.insertItems(reader, count: rows)
        try reader.execute(Self.indexItemsBySortKeys)
        try reader.execute("COMMIT")
        let select = try reader.prepare(Self.selectSortedItems)
        let before = try Self.sortedItems(select)
        guard before.ids.count == rows else { throw BenchError("frc_merge: \(before.ids.count) rows, expected \(rows)") }

        let writer = try RawConnection(path: reader.path, synchronous: synchronous)
        let updated = try Self.save(changes, to: writer)

        let (seconds, (after, diff)) = try BenchClock.measure {
            let after = try Self.sortedItems(select)
            return (after, BenchResultsDiff(old: before.ids, new: after.ids, updated: updated))
        }
        return BenchSample(seconds: seconds, rows: diff.total, checksum: BenchResultsChanges.checksum(after.rows))
    }
}
