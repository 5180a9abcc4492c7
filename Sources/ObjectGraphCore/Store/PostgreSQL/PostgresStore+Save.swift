import Foundation

// A save: one READ COMMITTED transaction, in the steps `apply` numbers (those of the SQLite store's
// save, with PostgreSQL's row locks where SQLite has its single writer).

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

    /// The save's statements; returns what it did and its transaction's ID (nil when it wrote nothing).
    func apply(_ request: StoreSaveRequest, store: PersistentStore, session: any PostgresSession) throws -> (StoreSaveResult, Int64?) {
        var result = StoreSaveResult()
        var request = request
        request.inserted.sort { $0.id < $1.id }
        // 1. Permanent IDs for inserted objects that have none yet (roots in one order: no deadlock between saves).
        var pending: [Int: [ManagedObjectID]] = [:]
        for object in request.inserted where object.id.isTemporaryID {
            pending[object.entity.rootEntity.entityCode, default: []].append(object.id)
        }
        for rootCode in pending.keys.sorted() {
            let ids = pending[rootCode]!
            var key = try allocate(session, root: model.entitiesByCode[rootCode], count: ids.count)
            for id in ids {
                result.permanentIDs[id] = ManagedObjectID(entity: id.entity, store: store, primaryKey: key)
                key += 1
            }
        }
        let permanent = result.permanentIDs
        func resolve(_ id: ManagedObjectID) -> ManagedObjectID { permanent[id] ?? id }
        func resolve(_ value: Value) -> Value {
            if case .objectID(let id) = value, let p = permanent[id] { return .objectID(p) }
            return value
        }

        // 2. Optimistic locking: the rows saved over are locked (in key order, so two saves that
        //    touch the same rows wait for each other rather than deadlock), then their versions checked.
        var checks: [Int: [(Int64, SavedObject)]] = [:]
        for object in request.updated + request.deleted {
            guard let pk = object.id.primaryKey else { continue }
            checks[object.entity.rootEntity.entityCode, default: []].append((pk, object))
        }
        var conflicts: [VersionConflict] = []
        for rootCode in checks.keys.sorted() {
            guard let layout = layouts[rootCode], let list = checks[rootCode] else { continue }
            let keys = Array(Set(list.map(\.0))).sorted()
            var versions: [Int64: Int64] = [:]
            for start in stride(from: 0, to: keys.count, by: Self.chunkSize) {
                let chunk = keys[start..<min(start + Self.chunkSize, keys.count)]
                count()
                let rows = try session.query(
                    "SELECT \"Z_PK\", \"Z_OPT\" FROM \(layout.table) WHERE \"Z_PK\" IN (\(Self.placeholders(chunk.count))) ORDER BY \"Z_PK\" FOR UPDATE",
                    chunk.map { .int($0) })
                for row in rows { if let pk = row[0].integer { versions[pk] = row[1].integer ?? 0 } }
            }
            for (pk, object) in list {
                guard let expected = object.expectedVersion else { continue }
                if versions[pk] != expected { conflicts.append(VersionConflict(id: object.id, expectedVersion: expected, persisted: nil)) }
            }
        }
        if !conflicts.isEmpty {
            let persisted = try readSnapshots(conflicts.map(\.id), store: store, session: session)
            for i in conflicts.indices { conflicts[i].persisted = persisted[conflicts[i].id] }
            throw VersionConflictError(conflicts: conflicts)
        }

        // 3. Deletes, with their join-table rows.
        for object in request.deleted {
            guard let pk = object.id.primaryKey, let layout = layouts[object.entity.rootEntity.entityCode] else { continue }
            count()
            try session.execute("DELETE FROM \(layout.table) WHERE \"Z_PK\" = $1", [.int(pk)])
            for relationship in object.entity.relationships where relationship.usesJoinTable {
                count()
                switch schema.storage(forToMany: relationship) {
                case .joinTable(let name, let sourceColumn, _, _, _):
                    try session.execute("DELETE FROM \(table(name)) WHERE \(CoreDataLayout.quote(sourceColumn)) = $1", [.int(pk)])
                case .foreignKey(let name, let column, _):
                    let column = CoreDataLayout.quote(column)
                    try session.execute("UPDATE \(table(name)) SET \(column) = NULL WHERE \(column) = $1", [.int(pk)])
                }
            }
        }

        // 3b. Unique values updated objects give up, cleared first (a unique index checks each statement).
        try releaseUniqueValues(request, session: session)

        // 4. Inserts.
        for object in request.inserted {
            let id = resolve(object.id)
            let number = schema.entityNumber(for: object.entity)
            guard let pk = id.primaryKey, let layout = layouts[object.entity.rootEntity.entityCode]?.entities[number] else { continue }
            var parameters: [PostgresValue] = [.int(pk), .int(Int64(number)), .int(1)]
            var values = object.values
            for property in layout.insertProperties {
                let value = resolve(values[property.index])
                values[property.index] = value
                parameters.append(try value.postgresParameter(for: property, entity: object.entity))
                if let relationship = property as? RelationshipDescription, schema.entityColumnName(forToOne: relationship) != nil {
                    if case .objectID(let destination) = value { parameters.append(.int(Int64(schema.entityNumber(for: destination.entity)))) } else { parameters.append(.null) }
                }
            }
            count()
            try executeReportingUniqueIndexes(layout.insertSQL, parameters, session, object: object, inserted: true, resolve: resolve, store: store)
            for attribute in object.entity.attributes where attribute.isTransient { values[attribute.index] = .null }
            result.snapshots[id] = Snapshot(entity: object.entity, version: 1, values: values)
        }

        // 5. Updates of the changed columns, bumping the version.
        for object in request.updated {
            guard let pk = object.id.primaryKey, let layout = layouts[object.entity.rootEntity.entityCode] else { continue }
            var assignments: [String] = []
            var parameters: [PostgresValue] = []
            var values = object.values
            for index in object.changedIndices {
                let property = object.entity.properties[index]
                if let attribute = property as? AttributeDescription, attribute.isTransient { continue }
                if let relationship = property as? RelationshipDescription, relationship.isToMany { continue }
                let value = resolve(values[index])
                values[index] = value
                parameters.append(try value.postgresParameter(for: property, entity: object.entity))
                let cast = (property as? AttributeDescription).map(SQLDialect.postgres.parameterCast) ?? ""
                assignments.append("\(CoreDataLayout.quote(schema.columnName(for: property))) = $\(parameters.count)\(cast)")
                if let relationship = property as? RelationshipDescription, let entityColumn = schema.entityColumnName(forToOne: relationship) {
                    if case .objectID(let destination) = value { parameters.append(.int(Int64(schema.entityNumber(for: destination.entity)))) } else { parameters.append(.null) }
                    assignments.append("\(CoreDataLayout.quote(entityColumn)) = $\(parameters.count)")
                }
            }
            assignments.append("\"Z_OPT\" = \"Z_OPT\" + 1")
            parameters.append(.int(pk))
            count()
            let sql = "UPDATE \(layout.table) SET \(assignments.joined(separator: ", ")) WHERE \"Z_PK\" = $\(parameters.count) RETURNING \"Z_OPT\""
            let version = try executeReportingUniqueIndexes(sql, parameters, session, object: object, inserted: false, resolve: resolve, store: store)
            for attribute in object.entity.attributes where attribute.isTransient { values[attribute.index] = .null }
            result.snapshots[object.id] = Snapshot(entity: object.entity, version: version ?? (object.expectedVersion ?? 0) + 1, values: values)
        }

        // 6. Join tables (and the hidden foreign keys of to-many relationships without an inverse).
        for change in request.joinDeletes {
            guard let s = resolve(change.source).primaryKey, let d = resolve(change.destination).primaryKey else { continue }
            count()
            switch schema.storage(forToMany: change.relationship) {
            case .joinTable(let name, let sourceColumn, let destinationColumn, _, _):
                try session.execute(
                    "DELETE FROM \(table(name)) WHERE \(CoreDataLayout.quote(sourceColumn)) = $1 AND \(CoreDataLayout.quote(destinationColumn)) = $2", [.int(s), .int(d)])
            case .foreignKey(let name, let column, _):
                let column = CoreDataLayout.quote(column)
                try session.execute("UPDATE \(table(name)) SET \(column) = NULL WHERE \"Z_PK\" = $1 AND \(column) = $2", [.int(d), .int(s)])
            }
        }
        for change in request.joinInserts {
            guard let s = resolve(change.source).primaryKey, let d = resolve(change.destination).primaryKey else { continue }
            count()
            switch schema.storage(forToMany: change.relationship) {
            case .joinTable(let name, let sourceColumn, let destinationColumn, _, _):
                try session.execute(
                    "INSERT INTO \(table(name)) (\(CoreDataLayout.quote(sourceColumn)), \(CoreDataLayout.quote(destinationColumn))) VALUES ($1, $2) ON CONFLICT DO NOTHING",
                    [.int(s), .int(d)])
            case .foreignKey(let name, let column, _):
                try session.execute("UPDATE \(table(name)) SET \(CoreDataLayout.quote(column)) = $1 WHERE \"Z_PK\" = $2", [.int(s), .int(d)])
            }
        }

        // 7. Orders of ordered to-many relationships.
        for ordering in request.orderings {
            guard let s = resolve(ordering.source).primaryKey else { continue }
            for (position, destination) in ordering.destinations.enumerated() {
                guard let d = resolve(destination).primaryKey else { continue }
                switch schema.storage(forToMany: ordering.relationship) {
                case .foreignKey(let name, _, let orderColumn?):
                    count()
                    try session.execute("UPDATE \(table(name)) SET \(CoreDataLayout.quote(orderColumn)) = $1 WHERE \"Z_PK\" = $2", [.int(Int64(position)), .int(d)])
                case .joinTable(let name, let sourceColumn, let destinationColumn, _, let orderColumn?):
                    count()
                    try session.execute(
                        "UPDATE \(table(name)) SET \(CoreDataLayout.quote(orderColumn)) = $1 WHERE \(CoreDataLayout.quote(sourceColumn)) = $2 AND \(CoreDataLayout.quote(destinationColumn)) = $3",
                        [.int(Int64(position)), .int(s), .int(d)])
                default:
                    break
                }
            }
        }

        // 8. Uniqueness constraints, checked once everything is written.
        try checkUniqueness(request, resolve: resolve, store: store, session: session)

        // 9. The change log's row, announced to every coordinator when the transaction commits.
        var txid: Int64?
        if !request.isEmpty {
            txid = try PostgresChangeLog.record(request, permanentIDs: permanent, backend: self, session: session).txid
        }
        return (result, txid)
    }

    static let chunkSize = 500

    /// `$1, $2, …, $n` (after `offset` earlier parameters).
    static func placeholders(_ n: Int, after offset: Int = 0) -> String {
        (1...max(n, 1)).map { "$\($0 + offset)" }.joined(separator: ", ")
    }

    /// Runs an object's INSERT or UPDATE; returns the first cell of the first row it returns (an
    /// update's new version). For an entity with uniqueness constraints it runs in a savepoint: a
    /// unique index that refuses the row is reported as the save's own check reports it (a
    /// constraint conflict naming the other object), not as the server's error, which would end
    /// the transaction.
    @discardableResult
    private func executeReportingUniqueIndexes(
        _ sql: String, _ parameters: [PostgresValue], _ session: any PostgresSession, object: SavedObject, inserted: Bool,
        resolve: (ManagedObjectID) -> ManagedObjectID, store: PersistentStore
    ) throws -> Int64? {
        guard StoreUniqueness.isConstrained(object.entity) else { return try session.query(sql, parameters).first?.first?.integer }
        try session.execute("SAVEPOINT og_unique", [])
        do {
            let rows = try session.query(sql, parameters)
            try session.execute("RELEASE SAVEPOINT og_unique", [])
            return rows.first?.first?.integer
        } catch let error as PostgresDriverError where error.sqlState == "23505" {
            try session.execute("ROLLBACK TO SAVEPOINT og_unique", [])
            var single = StoreSaveRequest()
            if inserted { single.inserted = [object] } else { single.updated = [object] }
            try checkUniqueness(single, resolve: resolve, store: store, session: session)
            throw error
        }
    }

    /// Sets to NULL the constrained columns that updated objects change (``StoreUniqueness/valuesToRelease(in:)``).
    private func releaseUniqueValues(_ request: StoreSaveRequest, session: any PostgresSession) throws {
        for (object, attributes) in StoreUniqueness.valuesToRelease(in: request) {
            guard let pk = object.id.primaryKey else { continue }
            let columns = Set(attributes.map { schema.columnName(for: $0) }).sorted()
            count()
            try session.execute(
                "UPDATE \(table(for: object.entity)) SET \(columns.map { "\(CoreDataLayout.quote($0)) = NULL" }.joined(separator: ", ")) WHERE \"Z_PK\" = $1",
                [.int(pk)])
        }
    }

    private func checkUniqueness(_ request: StoreSaveRequest, resolve: (ManagedObjectID) -> ManagedObjectID, store: PersistentStore, session: any PostgresSession) throws {
        try StoreUniqueness.check(request, resolve: resolve, store: store, schema: schema) { e, attributes, values, excluding in
            let codes = e.selfAndDescendants.map { String(schema.entityNumber(for: $0)) }.joined(separator: ",")
            var parameters: [PostgresValue] = []
            var conditions: [String] = []
            for (attribute, value) in zip(attributes, values) {
                parameters.append(try value.postgresParameter(for: attribute, entity: e))
                conditions.append("\(CoreDataLayout.quote(schema.columnName(for: attribute))) = $\(parameters.count)\(SQLDialect.postgres.parameterCast(attribute))")
            }
            parameters.append(.int(excluding))
            count()
            let rows = try session.query(
                "SELECT \"Z_PK\", \"Z_ENT\" FROM \(table(for: e)) WHERE \"Z_ENT\" IN (\(codes)) AND \(conditions.joined(separator: " AND ")) AND \"Z_PK\" <> $\(parameters.count) LIMIT 1",
                parameters)
            guard let row = rows.first, let key = row[0].integer else { return nil }
            return (key, Int(row[1].integer ?? -1))
        }
    }
}
