import Foundation

// A save: one READ COMMITTED transaction running the steps of a `SavePlan` (with PostgreSQL's row
// locks where SQLite has its single writer), then a row of the change log.

extension PostgresStore {
    func allocatePrimaryKeys(for entity: EntityDescription, count n: Int) throws -> Int64 {
        try write("allocating primary keys for \(entity.name)") { session in try allocate(session, root: entity.rootEntity, count: n) }
    }

    /// Reserves keys from the root entity's `Z_PRIMARYKEY.Z_MAX`, as Core Data does. The row stays
    /// locked until the transaction ends, so two processes never get the same keys.
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

    func save(_ request: StoreSaveRequest, store: PersistentStore) throws -> StoreSaveResult {
        try writeResolvingCommit("saving") { session in try apply(request, store: store, session: session) }
    }

    /// The save's statements (``SavePlan``), then its change-log row and, with history tracking
    /// (unless a batch request records its own), its transaction of history; returns what it did
    /// and its transaction's ID (nil when it wrote nothing).
    func apply(_ request: StoreSaveRequest, store: PersistentStore, session: any PostgresSession, recordsHistory: Bool = true) throws -> (StoreSaveResult, Int64?) {
        let history = historyTracking && recordsHistory && !request.isEmpty
        let tombstones = history ? try self.tombstones(of: request.deleted.map(\.id), store: store, session: session) : [:]
        var result = try SavePlan(request, schema: schema, tables: layouts).run(on: PostgresSaveSession(store: self, persistentStore: store, session: session), store: store)
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
