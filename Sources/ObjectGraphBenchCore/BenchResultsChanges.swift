/// `frc_merge`'s data and the save it merges, the same for the three ways.
///
/// The store holds `rows` items, row `r` with every attribute equal to `r`; the results are every
/// item sorted by `i0`, then `i1`. `i1` never changes, so it names a row (its identity) whatever
/// its sort key `i0` becomes, and the order is total: every way sees the same list.
///
/// Another context saves `changes` changes: a quarter deletes, a quarter inserts, the rest updates
/// that give `i0` a new value, so that the object takes another place. The rows touched are picked
/// at random (seeded), each once.
package struct BenchResultsChanges: Sendable, Equatable {
    /// A row whose sort key changes.
    package struct Update: Sendable, Equatable {
        /// The row's identity (`i1`).
        package var row: Int
        /// Its new `i0`, never its old one.
        package var key: Int64
    }

    /// A new row: `i1` (and `i2`…`i9`) equal to `row`, `i0` equal to `key`.
    package struct Insert: Sendable, Equatable {
        /// The new row's identity, above every seeded row's.
        package var row: Int
        package var key: Int64
    }

    /// The identities of the rows deleted.
    package var deleted: [Int]
    package var updated: [Update]
    package var inserted: [Insert]

    /// The changes saved to a store of `rows` rows: `changes` of them, at most one per row.
    package init(rows: Int, changes: Int) {
        let changes = max(0, min(changes, rows))
        let deletes = changes / 4, inserts = changes / 4
        var random = BenchRandom(seed: BenchData.seed ^ 0xF2C_0017)
        let picks = Array(0..<rows).shuffled(using: &random).prefix(changes - inserts)
        deleted = Array(picks.prefix(deletes))
        updated = picks.dropFirst(deletes).map { row in
            var key = Int64(random.next() % UInt64(max(rows, 1)))
            if key == Int64(row) { key += 1 }
            return Update(row: row, key: key)
        }
        inserted = (0..<inserts).map { n in Insert(row: rows + n, key: Int64(random.next() % UInt64(max(rows, 1)))) }
    }

    /// How many changes: deletes, updates and inserts.
    package var count: Int { deleted.count + updated.count + inserted.count }

    /// The identities of the results after the save, in order (sorted by `i0`, then `i1`).
    package func results(afterChanging rows: Int) -> [Int64] {
        var keys = (0..<rows).map { (key: Int64($0), row: Int64($0)) }
        for update in updated { keys[update.row].key = update.key }
        let gone = Set(deleted)
        var list = keys.enumerated().filter { !gone.contains($0.offset) }.map(\.element)
        list += inserted.map { (Int64($0.key), Int64($0.row)) }
        return list.sorted { ($0.key, $0.row) < ($1.key, $1.row) }.map(\.row)
    }

    /// The checksum of a list of results: each identity weighted by its position, so that two
    /// objects in each other's places change the sum.
    package static func checksum(_ identities: some Sequence<Int64>) -> Int64 {
        var sum: Int64 = 0
        for (position, row) in identities.enumerated() { sum &+= Int64(position + 1) &* row }
        return sum
    }
}

/// What a hand-written list (the raw SQLite and GRDB sides of `frc_merge`) tells its view when
/// its query's results change: the rows that left, the rows that came, and the rows the save
/// updated that are still there (each an update or a move), from the results' IDs before and after
/// and the IDs the save updated. The total is what a fetched results controller reports as object
/// changes for the same save.
package struct BenchResultsDiff: Sendable, Equatable {
    package var deleted = 0
    package var inserted = 0
    package var updated = 0

    package init(deleted: Int = 0, inserted: Int = 0, updated: Int = 0) {
        self.deleted = deleted
        self.inserted = inserted
        self.updated = updated
    }

    /// The changes from `old` to `new`, given the IDs the save updated.
    package init(old: [Int64], new: [Int64], updated changed: some Sequence<Int64>) {
        let before = Set(old), after = Set(new)
        deleted = old.reduce(0) { after.contains($1) ? $0 : $0 + 1 }
        inserted = new.reduce(0) { before.contains($1) ? $0 : $0 + 1 }
        updated = Set(changed).reduce(0) { before.contains($1) && after.contains($1) ? $0 + 1 : $0 }
    }

    /// Every change reported.
    package var total: Int { deleted + inserted + updated }
}
