import Foundation

// Batch requests on a PostgreSQL store: worked out and written in one transaction, through the
// save's own steps (row locks, uniqueness, the change log), so a request is all or nothing and the
// other coordinators hear of it as of any save.

extension PostgresStore {
    func executeBatch(_ request: StoreBatchRequest, store: PersistentStore) throws -> StoreBatchResult {
        try writeResolvingCommit("running a batch request") { session in try run(request, store: store, session: session) }
    }

    private func run(_ request: StoreBatchRequest, store: PersistentStore, session: any PostgresSession) throws -> (StoreBatchResult, Int64?) {
        switch request {
        case .insert(let entity, let rows):
            let plan = try BatchInsertPlan(entity: entity, rows: rows) { _, owner, attributes, values in
                try existingRow(owner, attributes, values, store: store, session: session)
            }
            let (saved, txid) = try apply(plan.save, store: store, session: session)
            return (plan.result(permanentIDs: saved.permanentIDs), txid)

        case .update(let fetch, let values, _):
            if let done = try updateInOneStatement(fetch, values, store: store, session: session) { return done }
            var fetch = fetch
            fetch.includesPropertyValues = true
            guard let layout = layouts[fetch.entity.rootEntity.entityCode] else { return (StoreBatchResult(), nil) }
            let rows = try self.fetch(fetch, layout: layout, store: store, session: session)
            let ids = rows.map(\.id)
            guard !values.isEmpty, !rows.isEmpty else { return (StoreBatchResult(affected: ids), nil) }
            var save = StoreSaveRequest()
            for row in rows {
                guard let snapshot = row.snapshot else { continue }
                var changed: [Int] = []
                var current = snapshot.values
                for (name, value) in values {
                    guard let attribute = snapshot.entity.attributesByName[name] else { continue }
                    current[attribute.index] = value
                    changed.append(attribute.index)
                }
                save.updated.append(SavedObject(id: row.id, entity: snapshot.entity, values: current, changedIndices: changed, expectedVersion: nil))
            }
            let (_, txid) = try apply(save, store: store, session: session)
            return (StoreBatchResult(affected: ids, updated: ids), txid)

        case .delete(let fetch, _):
            var fetch = fetch
            fetch.includesPropertyValues = false
            guard let layout = layouts[fetch.entity.rootEntity.entityCode] else { return (StoreBatchResult(), nil) }
            return try delete(try self.fetch(fetch, layout: layout, store: store, session: session).map(\.id), store: store, session: session)

        case .deleteObjects(let ids):
            // The rows that exist, as IDs of their concrete entities, each once, in the order given.
            var entities: [String: EntityDescription] = [:]
            for (id, snapshot) in try readSnapshots(ids, store: store, session: session) {
                entities["\(id.entity.rootEntity.entityCode) \(id.primaryKey ?? -1)"] = snapshot.entity
            }
            var seen: Set<ManagedObjectID> = []
            let existing = ids.compactMap { id -> ManagedObjectID? in
                guard let pk = id.primaryKey, let entity = entities["\(id.entity.rootEntity.entityCode) \(pk)"] else { return nil }
                return ManagedObjectID(entity: entity, store: store, primaryKey: pk)
            }.filter { seen.insert($0).inserted }
            return try delete(existing, store: store, session: session)
        }
    }

    /// A batch update as one `UPDATE … WHERE … RETURNING`, when PostgreSQL answers the whole
    /// predicate and no value it sets is under a uniqueness constraint (whose conflicts the save's
    /// steps report object by object); nil otherwise. The statement locks the rows it changes and
    /// bumps their versions, as a save's update does, and the change log names every row.
    private func updateInOneStatement(
        _ fetch: StoreFetchRequest, _ values: [(name: String, value: Value)], store: PersistentStore, session: any PostgresSession
    ) throws -> (StoreBatchResult, Int64?)? {
        let entity = fetch.entity
        guard !values.isEmpty, let layout = layouts[entity.rootEntity.entityCode] else { return nil }
        let constrained = Set(entity.rootEntity.selfAndDescendants.flatMap { $0.uniquenessConstraints.flatMap { $0 } })
        var attributes: [(AttributeDescription, Value)] = []
        for (name, value) in values {
            guard let attribute = entity.attributesByName[name], !attribute.isTransient, !constrained.contains(name) else { return nil }
            attributes.append((attribute, value))
        }
        let plan = try self.plan(fetch, columns: "t0.\"Z_PK\"", store: store)
        guard plan.residual.isEmpty else { return nil }
        var parameters = plan.parameters
        var assignments: [String] = []
        for (attribute, value) in attributes {
            parameters.append(try value.postgresParameter(for: attribute, entity: entity))
            assignments.append("\(CoreDataLayout.quote(schema.columnName(for: attribute))) = $\(parameters.count)\(SQLDialect.postgres.parameterCast(attribute))")
        }
        assignments.append("\"Z_OPT\" = t0.\"Z_OPT\" + 1")
        var sql = "UPDATE \(layout.table) AS t0 SET \(assignments.joined(separator: ", "))"
        if !plan.conditions.isEmpty { sql += " WHERE " + plan.conditions.joined(separator: " AND ") }
        sql += " RETURNING t0.\"Z_PK\", t0.\"Z_ENT\""
        count()
        let ids = try session.query(sql, parameters).compactMap { row -> ManagedObjectID? in
            guard let pk = row[0].integer, let concrete = row[1].integer.flatMap({ schema.entity(forNumber: Int($0)) }) else { return nil }
            return ManagedObjectID(entity: concrete, store: store, primaryKey: pk)
        }.sorted { ($0.primaryKey ?? 0) < ($1.primaryKey ?? 0) }
        guard !ids.isEmpty else { return (StoreBatchResult(), nil) }
        var changes = StoreSaveRequest()
        changes.updated = ids.map { id in
            SavedObject(
                id: id, entity: id.entity, values: [Value](repeating: .null, count: id.entity.properties.count),
                changedIndices: attributes.compactMap { id.entity.attributesByName[$0.0.name]?.index }, expectedVersion: nil)
        }
        let txid = try PostgresChangeLog.record(changes, permanentIDs: [:], backend: self, session: session).txid
        return (StoreBatchResult(affected: ids, updated: ids), txid)
    }

    /// The row of `owner` (or a sub-entity) holding a uniqueness constraint's values, if any.
    private func existingRow(
        _ owner: EntityDescription, _ attributes: [AttributeDescription], _ values: [Value], store: PersistentStore, session: any PostgresSession
    ) throws -> ManagedObjectID? {
        var parameters: [PostgresValue] = []
        var conditions: [String] = []
        for (attribute, value) in zip(attributes, values) {
            parameters.append(try value.postgresParameter(for: attribute, entity: owner))
            conditions.append("\(CoreDataLayout.quote(schema.columnName(for: attribute))) = $\(parameters.count)\(SQLDialect.postgres.parameterCast(attribute))")
        }
        let codes = owner.selfAndDescendants.map { String(schema.entityNumber(for: $0)) }.joined(separator: ",")
        count()
        let rows = try session.query(
            "SELECT \"Z_PK\", \"Z_ENT\" FROM \(table(for: owner)) WHERE \"Z_ENT\" IN (\(codes)) AND \(conditions.joined(separator: " AND ")) ORDER BY \"Z_PK\" LIMIT 1",
            parameters)
        guard let row = rows.first, let pk = row[0].integer, let entity = row[1].integer.flatMap({ schema.entity(forNumber: Int($0)) }) else { return nil }
        return ManagedObjectID(entity: entity, store: store, primaryKey: pk)
    }

    /// Deletes rows and what their delete rules reach, clears the to-one relationships of surviving
    /// rows that pointed at them, and drops the join-table rows that named them.
    private func delete(_ initial: [ManagedObjectID], store: PersistentStore, session: any PostgresSession) throws -> (StoreBatchResult, Int64?) {
        let all = try BatchDeleteClosure.closure(of: initial) { relationship, sources in
            if relationship.isToMany { return try readDestinations(of: relationship, for: sources, store: store, session: session) }
            var result: [ManagedObjectID: [ManagedObjectID]] = [:]
            let snapshots = try readSnapshots(sources, store: store, session: session)
            var pointed: [ManagedObjectID: ManagedObjectID] = [:]
            for (source, snapshot) in snapshots {
                if relationship.index < snapshot.values.count, case .objectID(let destination) = snapshot.values[relationship.index] { pointed[source] = destination }
            }
            let existing = try readSnapshots(Array(pointed.values), store: store, session: session)
            for (source, destination) in pointed {
                guard let found = existing[destination] else { continue }
                result[source] = [ManagedObjectID(entity: found.entity, store: store, primaryKey: destination.primaryKey ?? -1)]
            }
            return result
        }
        var result = StoreBatchResult(affected: initial, deleted: all)
        guard !all.isEmpty else { return (result, nil) }
        var deletedKeys: [Int: Set<Int64>] = [:]
        for id in all { if let pk = id.primaryKey { deletedKeys[id.entity.rootEntity.entityCode, default: []].insert(pk) } }
        var save = StoreSaveRequest()
        save.deleted = all.map { SavedObject(id: $0, entity: $0.entity, values: [], changedIndices: [], expectedVersion: nil) }
        // Surviving rows whose to-one pointed at a deleted row: cleared, with a new version.
        var cleared: [ManagedObjectID: (EntityDescription, [Int])] = [:]
        for entity in model.entitiesByCode {
            for relationship in entity.declaredProperties.compactMap({ $0 as? RelationshipDescription }) where !relationship.isToMany {
                guard let destination = relationship.destinationEntity, let gone = deletedKeys[destination.rootEntity.entityCode] else { continue }
                let column = CoreDataLayout.quote(schema.columnName(for: relationship))
                let codes = entity.selfAndDescendants.map { String(schema.entityNumber(for: $0)) }.joined(separator: ",")
                for chunk in TableLayout.statementChunks(gone.sorted()) {
                    count()
                    let rows = try session.query(
                        "SELECT \"Z_PK\", \"Z_ENT\" FROM \(table(for: entity)) WHERE \"Z_ENT\" IN (\(codes)) AND \(column) IN (\(SQLDialect.postgres.placeholders(chunk.count)))",
                        chunk.map { .int($0) })
                    for row in rows {
                        guard let pk = row[0].integer, let concrete = row[1].integer.flatMap({ schema.entity(forNumber: Int($0)) }),
                              deletedKeys[concrete.rootEntity.entityCode]?.contains(pk) != true else { continue }
                        let id = ManagedObjectID(entity: concrete, store: store, primaryKey: pk)
                        cleared[id, default: (concrete, [])].1.append(relationship.index)
                    }
                }
            }
        }
        for (id, (entity, indices)) in cleared.sorted(by: { $0.key < $1.key }) {
            save.updated.append(SavedObject(
                id: id, entity: entity, values: [Value](repeating: .null, count: entity.properties.count), changedIndices: indices, expectedVersion: nil))
            result.updated.append(id)
        }
        let (_, txid) = try apply(save, store: store, session: session)
        // Join-table rows naming a deleted destination (the save drops those of the deleted rows' own relationships).
        for entity in model.entitiesByCode {
            for relationship in entity.declaredProperties.compactMap({ $0 as? RelationshipDescription }) where relationship.usesJoinTable {
                guard let destination = relationship.destinationEntity, let gone = deletedKeys[destination.rootEntity.entityCode],
                      case .joinTable(let name, _, let destinationColumn, _, _) = schema.storage(forToMany: relationship) else { continue }
                for chunk in TableLayout.statementChunks(gone.sorted()) {
                    count()
                    try session.execute(
                        "DELETE FROM \(table(name)) WHERE \(CoreDataLayout.quote(destinationColumn)) IN (\(SQLDialect.postgres.placeholders(chunk.count)))", chunk.map { .int($0) })
                }
            }
        }
        return (result, txid)
    }
}
