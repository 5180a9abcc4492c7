import Foundation

/// A save's statements on a connection of the PostgreSQL store's pool, inside its transaction.
struct PostgresSaveSession: RelationalSession {
    let store: PostgresStore
    let persistentStore: PersistentStore
    let session: any PostgresSession
    /// Where the save puts the keys it reserves for later saves (``PostgresKeyReserve``); nil:
    /// it reserves only its own.
    var reserved: PostgresKeyReserve.Reserved? = nil

    var dialect: SQLDialect { .postgres }

    func table(_ name: String) -> String { store.table(name) }

    func allocateKeys(root: EntityDescription, count: Int) throws -> Int64 {
        try store.allocate(session, root: root, count: count, reserving: reserved)
    }

    /// The statement's parameters as PostgreSQL takes them.
    static func parameters(_ arguments: [SQLArgument], entity: EntityDescription?) throws -> [PostgresValue] {
        try arguments.map { argument in
            try argument.value.postgresParameter(for: argument.property.flatMap { entity?.properties[$0] }, entity: entity)
        }
    }

    func execute(_ sql: String, _ arguments: [SQLArgument], entity: EntityDescription?) throws {
        try session.execute(sql, try Self.parameters(arguments, entity: entity))
    }

    func integerPairs(_ sql: String, _ arguments: [SQLArgument], entity: EntityDescription?) throws -> [(Int64, Int64?)] {
        try session.query(sql, try Self.parameters(arguments, entity: entity)).compactMap { row in
            guard let first = row.first?.integer else { return nil }
            return (first, row.count > 1 ? row[1].integer : nil)
        }
    }

    /// A row a unique index may refuse is written so that the refusal does not end the
    /// transaction with the server's error, and is reported as the save's own check reports it:
    /// an INSERT with `ON CONFLICT DO NOTHING`, which writes no row instead; an UPDATE in a
    /// savepoint, rolled back to when the index refuses it.
    func write(
        _ sql: String, _ arguments: [SQLArgument], entity: EntityDescription, inserting: Bool, constrained: Bool, expectedVersion: Int64?,
        reportRefusal: () throws -> Void
    ) throws -> Int64? {
        let parameters = try Self.parameters(arguments, entity: entity)
        guard constrained else { return try session.query(sql, parameters).first?.first?.integer }
        if inserting {
            if try session.execute(sql + " ON CONFLICT DO NOTHING", parameters) == 1 { return nil }
            try reportRefusal()
            throw PostgresDriverError(
                kind: .server, sqlState: "23505", message: "a unique index of \(store.table(for: entity)) refused a row of \(entity.name)")
        }
        try session.execute("SAVEPOINT og_unique", [])
        do {
            let rows = try session.query(sql, parameters)
            try session.execute("RELEASE SAVEPOINT og_unique", [])
            return rows.first?.first?.integer
        } catch let error as PostgresDriverError where error.sqlState == "23505" {
            try session.execute("ROLLBACK TO SAVEPOINT og_unique", [])
            try reportRefusal()
            throw error
        }
    }

    func snapshots(_ ids: [ManagedObjectID]) throws -> [ManagedObjectID: Snapshot] {
        try store.readSnapshots(ids, store: persistentStore, session: session)
    }

    func columnValue(_ value: Value, for property: PropertyDescription) throws -> Value { value }

    func willOverwrite(_ object: SavedObject, deleting: Bool, in table: TableLayout, key: Int64) throws {}

    func count(_ n: Int) { store.count(n) }
}
