import Foundation

// Fetches, counts, fault fulfilment and relationship reads, each in one REPEATABLE READ read-only
// transaction.
//
// A fetch sends PostgreSQL what it answers exactly as memory does (``PostgresPredicateSQL``): the
// whole predicate, sort, limit and offset when it can. When part of the predicate or of the sort
// is beyond that (`[cd]`, `MATCHES`, key paths through relationships, …), the rows the rest of the
// predicate selects are read and that part is evaluated, sorted, offset and limited in memory,
// with the code every store shares: the answers are the same, and the cost is reading those rows.

extension PostgresStore {
    /// How one fetch runs: its SQL, and what is left to do in memory.
    struct Plan {
        var sql: String
        /// The WHERE clause's conditions (on the table aliased `t0`), which `parameters` bind.
        var conditions: [String]
        var parameters: [PostgresValue]
        /// The conjuncts of the predicate evaluated in memory.
        var residual: [PredicateNode]
        /// Whether sorting, offset and limit are left to memory.
        var sortsInMemory: Bool
    }

    func plan(_ request: StoreFetchRequest, columns: String, store: PersistentStore, forCount: Bool = false) throws -> Plan {
        let entity = request.entity
        // The same checks, and errors, as the SQLite store (unknown keys, misused key paths, bad patterns).
        var checker = SQLQueryBuilder(schema: schema, entity: entity)
        if let predicate = request.predicate { _ = try checker.whereClause(for: predicate) }
        if !forCount { _ = try checker.orderByClause(for: request.sortDescriptors) }

        var compiler = PostgresPredicateSQL(schema: schema, entity: entity, store: store)
        var conditions: [String] = []
        if let restriction = schema.entityRestriction(for: entity, includesSubentities: request.includesSubentities, alias: "t0", .postgres) {
            conditions.append(restriction)
        }
        var residual: [PredicateNode] = []
        if let predicate = request.predicate {
            for node in PostgresPredicateSQL.conjuncts(predicate.node) {
                if let sql = compiler.compile(node) { conditions.append("(\(sql))") } else { residual.append(node) }
            }
        }
        let order = forCount ? "t0.\"Z_PK\"" : compiler.orderBy(request.sortDescriptors)
        var sql = "SELECT \(columns) FROM \(table(for: entity)) AS t0"
        if !conditions.isEmpty { sql += " WHERE " + conditions.joined(separator: " AND ") }
        let sortsInMemory = !residual.isEmpty || order == nil
        if !forCount { sql += " ORDER BY " + (sortsInMemory ? "t0.\"Z_PK\"" : order!) }
        if !sortsInMemory && !forCount {
            if request.fetchLimit > 0 { sql += " LIMIT \(request.fetchLimit)" }
            if request.fetchOffset > 0 { sql += " OFFSET \(request.fetchOffset)" }
        }
        return Plan(sql: sql, conditions: conditions, parameters: compiler.parameters, residual: residual, sortsInMemory: sortsInMemory)
    }

    /// PostgreSQL's plan for the SQL of a fetch (`EXPLAIN`, one line a row), for tests and
    /// diagnosis. With `withoutSequentialScans`, the planner avoids reading whole tables where it
    /// can, so that the plan shows whether an index can answer the conditions at all.
    func explain(_ request: StoreFetchRequest, store: PersistentStore, withoutSequentialScans: Bool = false) throws -> [String] {
        let plan = try self.plan(request, columns: "t0.\"Z_PK\"", store: store)
        return try read("explaining a fetch of \(request.entity.name)") { session in
            if withoutSequentialScans { _ = try session.query("SET LOCAL enable_seqscan = off", []) }
            return try session.query("EXPLAIN " + plan.sql, plan.parameters).compactMap { row in
                if case .text(let line) = row.first { line } else { nil }
            }
        }
    }

    func fetch(_ request: StoreFetchRequest, store: PersistentStore) throws -> [StoreRow] {
        guard let layout = layouts[request.entity.rootEntity.entityCode] else { return [] }
        return try read("fetching \(request.entity.name)") { session in try fetch(request, layout: layout, store: store, session: session) }
    }

    func fetch(_ request: StoreFetchRequest, layout: TableLayout, store: PersistentStore, session: any PostgresSession) throws -> [StoreRow] {
        // Keys only, unless values are wanted or memory has to evaluate or sort the rows.
        let keys = "t0.\"Z_PK\", t0.\"Z_ENT\", t0.\"Z_OPT\""
        var plan = try self.plan(request, columns: request.includesPropertyValues ? layout.selectList : keys, store: store)
        if plan.sortsInMemory && !request.includesPropertyValues { plan = try self.plan(request, columns: layout.selectList, store: store) }
        count()
        let rows = try session.query(plan.sql, plan.parameters).compactMap { layout.read($0, store: store) }
        guard plan.sortsInMemory else {
            return request.includesPropertyValues ? rows : rows.map { StoreRow(id: $0.id, snapshot: nil) }
        }
        let view = PostgresReadView(backend: self, session: session, store: store)
        var subjects = rows.map { PostgresRowSubject(view: view, id: $0.id, snapshot: $0.snapshot!) }
        if !plan.residual.isEmpty {
            let node = plan.residual.count == 1 ? plan.residual[0] : .and(plan.residual)
            subjects = try subjects.filter { try PredicateEvaluator.evaluate(node, with: $0) }
        }
        return try request.rows(of: subjects)
    }

    func count(_ request: StoreFetchRequest, store: PersistentStore) throws -> Int {
        guard layouts[request.entity.rootEntity.entityCode] != nil else { return 0 }
        let plan = try self.plan(request, columns: "1", store: store, forCount: true)
        if !plan.residual.isEmpty {
            var request = request
            request.sortDescriptors = []
            return try fetch(request, store: store).count
        }
        var sql = "SELECT COUNT(*) FROM (\(plan.sql)"
        if request.fetchLimit > 0 { sql += " LIMIT \(request.fetchLimit)" }
        if request.fetchOffset > 0 { sql += " OFFSET \(request.fetchOffset)" }
        sql += ") AS counted"
        return try read("counting \(request.entity.name)") { session in
            count()
            return Int(try session.query(sql, plan.parameters).first?.first?.integer ?? 0)
        }
    }

    func snapshots(for ids: [ManagedObjectID], store: PersistentStore) throws -> [ManagedObjectID: Snapshot] {
        if ids.isEmpty { return [:] }
        return try read("reading objects") { session in try readSnapshots(ids, store: store, session: session) }
    }

    /// Reads rows by ID, in the caller's transaction.
    func readSnapshots(_ ids: [ManagedObjectID], store: PersistentStore, session: any PostgresSession) throws -> [ManagedObjectID: Snapshot] {
        var result: [ManagedObjectID: Snapshot] = [:]
        result.reserveCapacity(ids.count)
        for (layout, chunk) in TableLayout.chunks(of: ids, in: layouts, size: TableLayout.keysPerStatement) {
            count()
            for row in try session.query(layout.rowsQuery(count: chunk.count, dialect: .postgres), chunk.map { .int($0) }) {
                if let storeRow = layout.read(row, store: store), let snapshot = storeRow.snapshot { result[storeRow.id] = snapshot }
            }
        }
        return result
    }

    func destinations(of relationship: RelationshipDescription, for sources: [ManagedObjectID], store: PersistentStore) throws
        -> [ManagedObjectID: [ManagedObjectID]]
    {
        try read("reading \(relationship.entity?.name ?? "").\(relationship.name)") { session in
            try readDestinations(of: relationship, for: sources, store: store, session: session)
        }
    }

    /// Reads the destinations of a to-many relationship, in the caller's transaction.
    func readDestinations(of relationship: RelationshipDescription, for sources: [ManagedObjectID], store: PersistentStore, session: any PostgresSession) throws
        -> [ManagedObjectID: [ManagedObjectID]]
    {
        guard let destination = relationship.destinationEntity else { return [:] }
        var bySource: [Int64: ManagedObjectID] = [:]
        for id in sources { if let pk = id.primaryKey { bySource[pk] = id } }
        let keys = Array(bySource.keys).sorted()
        var result: [ManagedObjectID: [ManagedObjectID]] = [:]
        for id in sources { result[id] = [] }
        for chunk in TableLayout.statementChunks(keys) {
            guard let sql = schema.destinationsQuery(of: relationship, count: chunk.count, dialect: .postgres, table: table) else { break }
            count()
            for row in try session.query(sql, chunk.map { .int($0) }) {
                guard row.count >= 3, let sourceKey = row[0].integer, let destinationKey = row[1].integer, let source = bySource[sourceKey] else { continue }
                let entity = schema.destinationEntity(forNumber: row[2].integer.map { Int($0) }, of: destination)
                result[source, default: []].append(ManagedObjectID(entity: entity, store: store, primaryKey: destinationKey))
            }
        }
        return result
    }
}

/// The rows one fetch reads to evaluate in memory what PostgreSQL cannot answer exactly: related
/// rows are read on first use, in the fetch's transaction, and kept for the rest of the fetch.
final class PostgresReadView: RowView {
    let backend: PostgresStore
    let session: any PostgresSession
    let store: PersistentStore
    private var rows: [ManagedObjectID: Snapshot?] = [:]
    private var toMany: [ObjectIdentifier: [ManagedObjectID: [ManagedObjectID]]] = [:]

    init(backend: PostgresStore, session: any PostgresSession, store: PersistentStore) {
        self.backend = backend
        self.session = session
        self.store = store
    }

    func subject(for id: ManagedObjectID) throws -> PostgresRowSubject? {
        if rows[id] == nil {
            rows[id] = .some(try backend.readSnapshots([id], store: store, session: session)[id])
        }
        guard let snapshot = rows[id] ?? nil else { return nil }
        return PostgresRowSubject(view: self, id: ManagedObjectID(entity: snapshot.entity, store: store, primaryKey: id.primaryKey ?? -1), snapshot: snapshot)
    }

    func destinations(of relationship: RelationshipDescription, from id: ManagedObjectID) throws -> [ManagedObjectID] {
        let key = ObjectIdentifier(relationship)
        if let known = toMany[key]?[id] { return known }
        let found = try backend.readDestinations(of: relationship, for: [id], store: store, session: session)[id] ?? []
        toMany[key, default: [:]][id] = found
        return found
    }
}

/// A row of a PostgreSQL store seen by predicates and sort descriptors evaluated in memory.
typealias PostgresRowSubject = RowSubject<PostgresReadView>
