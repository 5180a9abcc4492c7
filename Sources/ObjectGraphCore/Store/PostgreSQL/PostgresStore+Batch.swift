import Foundation

// Batch requests on a PostgreSQL store: worked out and written in one transaction, through the
// save's own steps (row locks, uniqueness, the change log), so a request is all or nothing and the
// other coordinators hear of it as of any save.

extension PostgresStore {
    func executeBatch(_ request: StoreBatchRequest, store: PersistentStore) throws -> StoreBatchResult {
        try writeResolvingCommit("running a batch request") { session in
            var tombstones: [ManagedObjectID: [Value]] = [:]
            var (result, txid) = try run(request, store: store, session: session, tombstones: &tombstones)
            // The request is one transaction of history (its row-by-row steps record none of their own).
            if historyTracking, txid != nil, let number = try changeLogNumber(session: session) {
                let changes = HistoryRecording.changes(of: request, result: result)
                try recordHistory(changes, number: number, tombstones: tombstones, session: session)
                result.historyChanges = changes.count
            }
            return (result, txid)
        }
    }

    /// Runs a request; a delete puts the tombstones of the rows it deletes in `tombstones` (with
    /// history tracking).
    private func run(
        _ request: StoreBatchRequest, store: PersistentStore, session: any PostgresSession, tombstones: inout [ManagedObjectID: [Value]]
    ) throws -> (StoreBatchResult, Int64?) {
        switch request {
        case .insert(let entity, let rows):
            if let inserted = try insertNewRows(entity, rows, store: store, session: session) { return inserted }
            let plan = try BatchInsertPlan(entity: entity, rows: rows) { _, owner, attributes, values in
                try existingRow(owner, attributes, values, store: store, session: session)
            }
            let (saved, txid) = try apply(plan.save, store: store, session: session, recordsHistory: false)
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
            let (_, txid) = try apply(save, store: store, session: session, recordsHistory: false)
            return (StoreBatchResult(affected: ids, updated: ids), txid)

        case .delete(let fetch, _):
            if let done = try deleteInOneStatement(fetch, store: store, session: session, tombstones: &tombstones) { return done }
            var fetch = fetch
            fetch.includesPropertyValues = false
            guard let layout = layouts[fetch.entity.rootEntity.entityCode] else { return (StoreBatchResult(), nil) }
            return try delete(
                try self.fetch(fetch, layout: layout, store: store, session: session).map(\.id), store: store, session: session, tombstones: &tombstones)

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
            return try delete(existing, store: store, session: session, tombstones: &tombstones)
        }
    }

    /// How many rows one statement of a set-based insert writes.
    static let rowsPerInsert = 10_000

    /// The rows of an entity without uniqueness constraints, all new: their keys reserved at once,
    /// then one `INSERT … SELECT … FROM unnest(…)` per ``rowsPerInsert`` rows, each column one
    /// array parameter, and the change log's row naming every row. Nil when the entity has
    /// uniqueness constraints (each row may be an upsert: the save path's work).
    private func insertNewRows(_ entity: EntityDescription, _ rows: [BatchRow], store: PersistentStore, session: any PostgresSession) throws -> (StoreBatchResult, Int64?)? {
        let number = schema.entityNumber(for: entity)
        guard RelationalLayout.uniquenessConstraints(of: entity).isEmpty,
              let table = layouts[entity.rootEntity.entityCode], let layout = table.entities[number] else { return nil }
        guard !rows.isEmpty else { return (StoreBatchResult(), nil) }
        // After Z_PK, Z_ENT and Z_OPT, each column: a property's value, or (true) the entity number
        // of a to-one's destination, which a batch insert never sets.
        var columns: [(property: PropertyDescription, isEntityColumn: Bool, element: PostgresArrayElement)] = []
        for property in layout.insertProperties {
            columns.append((property, false, Self.arrayElement(of: property)))
            if let relationship = property as? RelationshipDescription, schema.entityColumnName(forToOne: relationship) != nil {
                columns.append((property, true, .bigint))
            }
        }
        let elements: [PostgresArrayElement] = [.bigint, .bigint, .bigint] + columns.map(\.element)
        let names = layout.insertColumns.map(CoreDataLayout.quote).joined(separator: ", ")
        let aliases = (1...elements.count).map { "c\($0)" }
        let selected = zip(aliases, [nil, nil, nil] + columns.map { $0.property as? AttributeDescription }).map { alias, attribute in
            "u.\(alias)" + (attribute.map(SQLDialect.postgres.parameterCast) ?? "")
        }
        let sql = """
            INSERT INTO \(table.table) (\(names)) SELECT \(selected.joined(separator: ", ")) \
            FROM unnest(\(elements.enumerated().map { "$\($0.offset + 1)::\($0.element.sqlType)" }.joined(separator: ", "))) \
            AS u(\(aliases.joined(separator: ", ")))
            """
        let first = try allocate(session, root: entity.rootEntity, count: rows.count)
        var ids: [ManagedObjectID] = []
        ids.reserveCapacity(rows.count)
        for start in stride(from: 0, to: rows.count, by: Self.rowsPerInsert) {
            let chunk = rows[start..<min(start + Self.rowsPerInsert, rows.count)]
            // Column by column: each array is filled in one pass over the rows.
            var arrays: [[PostgresValue]] = []
            arrays.reserveCapacity(elements.count)
            arrays.append(chunk.indices.map { .int(first + Int64($0)) })
            arrays.append([PostgresValue](repeating: .int(Int64(number)), count: chunk.count))
            arrays.append([PostgresValue](repeating: .int(1), count: chunk.count))
            for column in columns {
                guard !column.isEntityColumn else {
                    arrays.append([PostgresValue](repeating: .null, count: chunk.count))
                    continue
                }
                let index = column.property.index
                var array: [PostgresValue] = []
                array.reserveCapacity(chunk.count)
                for i in chunk.indices {
                    array.append(Self.element(try rows[i].values[index].postgresParameter(for: column.property, entity: entity), column.element))
                }
                arrays.append(array)
            }
            for i in chunk.indices { ids.append(ManagedObjectID(entity: entity, store: store, primaryKey: first + Int64(i))) }
            count()
            try session.execute(sql, zip(elements, arrays).map { .array($0, $1) })
        }
        let txid = try PostgresChangeLog.record(
            StoreSaveRequest(), permanentIDs: [:], insertedKeys: [number: Array(first..<(first + Int64(rows.count)))], backend: self, session: session
        ).txid
        return (StoreBatchResult(affected: ids, inserted: ids), txid)
    }

    /// The element type of the array that carries a column of `property` (the column types of
    /// ``SQLDialect/postgres``; a decimal travels as its text).
    private static func arrayElement(of property: PropertyDescription) -> PostgresArrayElement {
        guard let attribute = property as? AttributeDescription else { return .bigint }
        switch attribute.attributeType {
        case .integer16, .integer32, .integer64: return .bigint
        case .boolean: return .boolean
        case .double, .float, .date: return .double
        case .decimal, .string, .uri: return .text
        case .binaryData, .uuid, .transformable: return .bytea
        }
    }

    /// A parameter as an element of an array of `element`s: what a single parameter would send,
    /// in the array's own case (an integer of a Boolean column as a Boolean, and so on).
    private static func element(_ value: PostgresValue, _ element: PostgresArrayElement) -> PostgresValue {
        switch (element, value) {
        case (.boolean, .int(let v)): .bool(v != 0)
        case (.bigint, .bool(let v)): .int(v ? 1 : 0)
        case (.double, .int(let v)): .double(Double(v))
        case (.bigint, .double(let v)): Int64(exactly: v).map { .int($0) } ?? value
        default: value
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
        let sql = "UPDATE \(layout.table) AS t0 SET \(assignments.joined(separator: ", "))\(plan.rowCondition) RETURNING t0.\"Z_PK\", t0.\"Z_ENT\""
        count()
        var ids: [ManagedObjectID] = []
        try session.forEachRow(sql, parameters) { row in
            if let id = objectID(ofKeys: row, store: store) { ids.append(id) }
        }
        ids.sort { ($0.primaryKey ?? 0) < ($1.primaryKey ?? 0) }
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

    /// A batch delete as one `DELETE … WHERE … RETURNING`, when PostgreSQL answers the whole
    /// predicate, the fetch has no limit or offset, and no delete rule of the deleted entities
    /// reaches other rows (cascade) or refuses (deny); nil otherwise. The rules that remain are
    /// applied set-wise, each in one statement naming the deleted keys (an array parameter): every
    /// to-one of the model that pointed at a deleted row is cleared, with a new version, and the
    /// join-table rows that named one are dropped. The change log names every row.
    private func deleteInOneStatement(
        _ fetch: StoreFetchRequest, store: PersistentStore, session: any PostgresSession, tombstones: inout [ManagedObjectID: [Value]]
    ) throws -> (StoreBatchResult, Int64?)? {
        let entity = fetch.entity
        guard fetch.fetchLimit == 0, fetch.fetchOffset == 0, let layout = layouts[entity.rootEntity.entityCode],
              !entity.selfAndDescendants.contains(where: { $0.relationships.contains { [.cascade, .deny].contains($0.deleteRule) } })
        else { return nil }
        let plan = try self.plan(fetch, columns: "t0.\"Z_PK\"", store: store)
        guard plan.residual.isEmpty else { return nil }
        if historyTracking && entity.rootEntity.selfAndDescendants.contains(where: { !HistoryRecording.preservedAttributes(of: $0).isEmpty }) {
            // The rows' preserved values, read before they go.
            count()
            let ids = try session.query("SELECT t0.\"Z_PK\", t0.\"Z_ENT\" FROM \(plan.from)\(plan.whereClause)", plan.parameters)
                .compactMap { objectID(ofKeys: $0, store: store) }
            tombstones.merge(try self.tombstones(of: ids, store: store, session: session)) { $1 }
        }
        count()
        // The deleted keys come back as one array per entity, in key order: a row, not a row per
        // deleted row.
        var deleted: [ManagedObjectID] = []
        var deletedKeys: [Int: [Int64]] = [:]
        var keyValues: [PostgresValue] = []
        for row in try session.query(
            """
            WITH gone AS (DELETE FROM \(layout.table) AS t0\(plan.rowCondition) RETURNING t0."Z_PK", t0."Z_ENT") \
            SELECT "Z_ENT", array_agg("Z_PK" ORDER BY "Z_PK") FROM gone GROUP BY "Z_ENT"
            """, plan.parameters) {
            guard row.count == 2, let number = row[0].integer, let concrete = schema.entity(forNumber: Int(number)),
                  case .array(_, let values) = row[1] else { continue }
            let keys = values.compactMap(\.integer)
            deletedKeys[Int(number)] = keys
            keyValues += values
            deleted.reserveCapacity(deleted.count + keys.count)
            for key in keys { deleted.append(ManagedObjectID(entity: concrete, store: store, primaryKey: key)) }
        }
        if deletedKeys.count > 1 { deleted.sort { ($0.primaryKey ?? 0) < ($1.primaryKey ?? 0) } }
        guard !deleted.isEmpty else { return (StoreBatchResult(), nil) }
        let keys = PostgresValue.array(.bigint, keyValues)
        let root = entity.rootEntity
        var changes = StoreSaveRequest()
        var cleared: [ManagedObjectID: [Int]] = [:]
        for source in model.entitiesByCode {
            for relationship in source.declaredProperties.compactMap({ $0 as? RelationshipDescription }) {
                guard relationship.destinationEntity?.rootEntity === root else { continue }
                if relationship.isToMany {
                    guard case .joinTable(let name, _, let destinationColumn, _, _) = schema.storage(forToMany: relationship) else { continue }
                    count()
                    try session.execute("DELETE FROM \(table(name)) WHERE \(CoreDataLayout.quote(destinationColumn)) = ANY($1)", [keys])
                    continue
                }
                var assignments = ["\(CoreDataLayout.quote(schema.columnName(for: relationship))) = NULL", "\"Z_OPT\" = \"Z_OPT\" + 1"]
                if let entityColumn = schema.entityColumnName(forToOne: relationship) { assignments.append("\(CoreDataLayout.quote(entityColumn)) = NULL") }
                let codes = source.selfAndDescendants.map { String(schema.entityNumber(for: $0)) }.joined(separator: ",")
                count()
                let rows = try session.query(
                    """
                    UPDATE \(table(for: source)) SET \(assignments.joined(separator: ", ")) \
                    WHERE "Z_ENT" IN (\(codes)) AND \(CoreDataLayout.quote(schema.columnName(for: relationship))) = ANY($1) RETURNING "Z_PK", "Z_ENT"
                    """, [keys])
                for id in rows.compactMap({ objectID(ofKeys: $0, store: store) }) { cleared[id, default: []].append(relationship.index) }
            }
        }
        // The deleted rows' own join-table rows.
        for source in entity.rootEntity.selfAndDescendants {
            for relationship in source.declaredProperties.compactMap({ $0 as? RelationshipDescription }) where relationship.usesJoinTable {
                guard case .joinTable(let name, let sourceColumn, _, _, _) = schema.storage(forToMany: relationship) else { continue }
                count()
                try session.execute("DELETE FROM \(table(name)) WHERE \(CoreDataLayout.quote(sourceColumn)) = ANY($1)", [keys])
            }
        }
        var result = StoreBatchResult(affected: deleted, deleted: deleted)
        for (id, indices) in cleared.sorted(by: { $0.key < $1.key }) {
            changes.updated.append(SavedObject(
                id: id, entity: id.entity, values: [Value](repeating: .null, count: id.entity.properties.count), changedIndices: indices, expectedVersion: nil))
            result.updated.append(id)
        }
        let txid = try PostgresChangeLog.record(changes, permanentIDs: [:], deletedKeys: deletedKeys, backend: self, session: session).txid
        return (result, txid)
    }

    /// The object a row names by its first two cells, `"Z_PK"` and `"Z_ENT"` (as statements here
    /// return them), as an ID of its concrete entity; nil for a row that names none.
    private func objectID(ofKeys row: [PostgresValue], store: PersistentStore) -> ManagedObjectID? {
        guard row.count >= 2, let pk = row[0].integer, let concrete = row[1].integer.flatMap({ schema.entity(forNumber: Int($0)) }) else { return nil }
        return ManagedObjectID(entity: concrete, store: store, primaryKey: pk)
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
        return rows.first.flatMap { objectID(ofKeys: $0, store: store) }
    }

    /// Deletes rows and what their delete rules reach, clears the to-one relationships of surviving
    /// rows that pointed at them, and drops the join-table rows that named them.
    private func delete(
        _ initial: [ManagedObjectID], store: PersistentStore, session: any PostgresSession, tombstones: inout [ManagedObjectID: [Value]]
    ) throws -> (StoreBatchResult, Int64?) {
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
        tombstones.merge(try self.tombstones(of: all, store: store, session: session)) { $1 }
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
                    for id in rows.compactMap({ objectID(ofKeys: $0, store: store) }) {
                        guard let pk = id.primaryKey, deletedKeys[id.entity.rootEntity.entityCode]?.contains(pk) != true else { continue }
                        cleared[id, default: (id.entity, [])].1.append(relationship.index)
                    }
                }
            }
        }
        for (id, (entity, indices)) in cleared.sorted(by: { $0.key < $1.key }) {
            save.updated.append(SavedObject(
                id: id, entity: entity, values: [Value](repeating: .null, count: entity.properties.count), changedIndices: indices, expectedVersion: nil))
            result.updated.append(id)
        }
        let (_, txid) = try apply(save, store: store, session: session, recordsHistory: false)
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
