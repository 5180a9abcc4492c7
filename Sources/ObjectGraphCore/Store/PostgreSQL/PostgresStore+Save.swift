import Foundation

// A save: one READ COMMITTED transaction running the steps of a `SavePlan` (with PostgreSQL's row
// locks where SQLite has its single writer), then a row of the change log; or, for a small save of
// inserts and updates, one statement (PostgresStore+OneStatementSave.swift).

extension PostgresStore {
    func allocatePrimaryKeys(for entity: EntityDescription, count n: Int) throws -> Int64 {
        try write("allocating primary keys for \(entity.name)") { session in try allocate(session, root: entity.rootEntity, count: n) }
    }

    /// Reserves keys from the root entity's `Z_PRIMARYKEY.Z_MAX`, as Core Data does. The row stays
    /// locked until the transaction ends, so two processes never get the same keys.
    ///
    /// With `reserving`, a save's keys come from the keys earlier saves of this store object
    /// reserved and committed, without a statement, when they hold enough; otherwise the save
    /// reserves ``PostgresKeyReserve/blockSize`` keys more than it needs, for later saves once it
    /// commits.
    func allocate(_ session: any PostgresSession, root: EntityDescription, count n: Int, reserving: PostgresKeyReserve.Reserved? = nil) throws -> Int64 {
        guard let reserving else { return try allocate(session, root: root, count: n) }
        if let first = keyReserve.take(root: root.entityCode, count: n) {
            reserving.taken.append((root.entityCode, first..<(first + Int64(n))))
            return first
        }
        let first = try allocate(session, root: root, count: n + PostgresKeyReserve.blockSize)
        let end = first + Int64(n + PostgresKeyReserve.blockSize)
        reserving.ranges.append((root.entityCode, (first + Int64(n))..<end))
        return first
    }

    /// Reserves `count` keys of `root`, and a block more for later saves, in a statement of its own
    /// outside a transaction, and puts the block in the reserve at once (it has committed); returns
    /// the first of the `count`. For a save sent as one statement, which cannot reserve keys and
    /// use them in the same statement.
    func reserveKeysNow(root: EntityDescription, count n: Int) throws -> Int64 {
        let first = try driver.writeOneStatement { session in try allocate(session, root: root, count: n + PostgresKeyReserve.blockSize) }
        keyReserve.add([(root.entityCode, (first + Int64(n))..<(first + Int64(n + PostgresKeyReserve.blockSize)))])
        return first
    }

    func allocate(_ session: any PostgresSession, root: EntityDescription, count n: Int) throws -> Int64 {
        count()
        let number = Int64(schema.entityNumber(for: root))
        let rows = try session.query(
            "UPDATE \(table(PostgresStoreTables.primaryKeyTable)) SET \"Z_MAX\" = \"Z_MAX\" + $1 WHERE \"Z_ENT\" = $2 RETURNING \"Z_MAX\"",
            [.int(Int64(n)), .int(number)])
        guard let last = rows.first?.first?.integer else {
            throw ObjectGraphError(
                .io, "The \(StoreType.postgres) store \(location) has no row for \(root.name) in \(PostgresStoreTables.primaryKeyTable): it was damaged", url: url)
        }
        return last - Int64(n) + 1
    }

    /// A save: as one statement when it is small and simple enough
    /// (``saveInOneStatement(_:store:)``), in a transaction otherwise.
    func save(_ request: StoreSaveRequest, store: PersistentStore) throws -> StoreSaveResult {
        if let result = try saveInOneStatement(request, store: store) { return result }
        let reserved = PostgresKeyReserve.Reserved()
        let result: StoreSaveResult
        do {
            result = try writeResolvingCommit("saving") { session in
                reserved.ranges = []  // from an attempt that did not commit
                reserved.taken = []
                return try apply(request, store: store, session: session, reservingKeys: reserved)
            }
        } catch where error is VersionConflictError || error is ConstraintConflictError {
            // Found before COMMIT, so nothing was written: the keys it took from the reserve go back
            // (the merge policy's next attempt takes them again).
            for (root, keys) in reserved.taken.reversed() { keyReserve.giveBack(root: root, keys: keys) }
            throw error
        }
        // Committed: the keys the save reserved beyond its own are no other process's.
        keyReserve.add(reserved.ranges)
        return result
    }

    /// The save's statements (``SavePlan``), then its change-log row and, with history tracking
    /// (unless a batch request records its own), its transaction of history; returns what it did
    /// and its transaction's ID (nil when it wrote nothing).
    ///
    /// - Parameter reservingKeys: where the save puts the keys it reserves beyond its own, for
    ///   later saves once it has committed (``PostgresKeyReserve``); nil: it reserves only its own.
    func apply(
        _ request: StoreSaveRequest, store: PersistentStore, session: any PostgresSession, recordsHistory: Bool = true,
        reservingKeys reserved: PostgresKeyReserve.Reserved? = nil
    ) throws -> (StoreSaveResult, Int64?) {
        let history = historyTracking && recordsHistory && !request.isEmpty
        let tombstones = history ? try self.tombstones(of: request.deleted.map(\.id), store: store, session: session) : [:]
        var result = try SavePlan(
            request, schema: schema, tables: layouts, checksUniqueness: !uniqueIndexesEnforceConstraints, checksVersionInUpdate: true)
            .run(on: PostgresSaveSession(store: self, persistentStore: store, session: session, reserved: reserved), store: store)
        // The change log's row, announced to every coordinator when the transaction commits.
        var txid: Int64?
        if !request.isEmpty {
            let (number, id) = try PostgresChangeLog.record(request, permanentIDs: result.permanentIDs, backend: self, session: session)
            txid = id
            if history {
                let changes = HistoryRecording.changes(of: request, result: result)
                try recordHistory(changes, number: number, tombstones: tombstones, session: session)
                result.historyTransactionNumber = number
                result.historyChanges = changes.count
            }
        }
        return (result, txid)
    }
}

/// Primary keys a PostgreSQL store object reserved in `Z_PRIMARYKEY` beyond what its saves used,
/// by root entity: a save takes its keys from here without a statement while enough are left.
///
/// Only keys whose reservation committed are here: a save adds what it reserved once its
/// transaction has committed (a rolled-back reservation was never another process's to avoid).
/// Keys taken by a save that then fails on a conflict, before writing, go back (``giveBack(root:keys:)``);
/// after any other failure they stay unused: Core Data's keys need not be dense.
final class PostgresKeyReserve: Sendable {
    /// How many keys a save reserves beyond its own when the reserve has too few.
    static let blockSize = 32

    /// What one save reserved beyond its own keys, to add once it commits, and the keys it took
    /// from the reserve, to give back if it fails before writing; used by that save only.
    final class Reserved {
        var ranges: [(root: Int, keys: Range<Int64>)] = []
        var taken: [(root: Int, keys: Range<Int64>)] = []
    }

    private let ranges = Protected<[Int: Range<Int64>]>([:])

    /// The first of `count` consecutive reserved keys of the root entity `root`, taken; nil when
    /// the reserve does not hold that many.
    func take(root: Int, count: Int) -> Int64? {
        ranges.withLock { ranges in
            guard let range = ranges[root], range.count >= count else { return nil }
            ranges[root] = (range.lowerBound + Int64(count))..<range.upperBound
            return range.lowerBound
        }
    }

    /// Puts back keys ``take(root:count:)`` handed out that no row was written with (a save that
    /// ran in a transaction after all), when no key was taken after them; otherwise they stay unused.
    func giveBack(root: Int, keys: Range<Int64>) {
        ranges.withLock { ranges in
            guard let range = ranges[root], range.lowerBound == keys.upperBound else { return }
            ranges[root] = keys.lowerBound..<range.upperBound
        }
    }

    /// Adds the keys a committed save reserved (each root keeps the larger of what it had and what is added).
    func add(_ reserved: [(root: Int, keys: Range<Int64>)]) {
        guard !reserved.isEmpty else { return }
        ranges.withLock { ranges in
            for (root, keys) in reserved where keys.count > (ranges[root]?.count ?? 0) { ranges[root] = keys }
        }
    }
}
