import Foundation

// How each step of a save plan becomes statements, in the session's dialect.

extension SavePlan {
    struct Execution<Session: RelationalSession> {
        let plan: SavePlan
        let session: Session
        let store: PersistentStore
        var result = StoreSaveResult()
        /// The arguments of the last insert, kept for their storage (one buffer for every row).
        private var scratch: [SQLArgument] = []
        /// The versions step 2 read, by root entity code and key.
        private var versions: [Int: [Int64: Int64]] = [:]
        private let dialect: SQLDialect
        private let schema: CoreDataLayout

        init(plan: SavePlan, session: Session, store: PersistentStore) {
            self.plan = plan
            self.session = session
            self.store = store
            dialect = session.dialect
            schema = plan.schema
        }

        mutating func perform(_ step: Step) throws {
            switch step {
            case .allocateKeys(let root, let ids): try allocateKeys(root: root, ids: ids)
            case .checkVersions(let table, let rows): try checkVersions(table: table, rows: rows)
            case .deleteRows:
                for object in plan.request.deleted {
                    guard let key = object.id.primaryKey, let table = plan.tables[object.entity.rootEntity.entityCode] else { continue }
                    try delete(object, key: key, table: table)
                }
            case .releaseUniqueValues(let object, let key, let columns): try releaseUniqueValues(object, key: key, columns: columns)
            case .insertRows:
                for object in plan.request.inserted {
                    guard let table = plan.tables[object.entity.rootEntity.entityCode],
                          let layout = table.entities[schema.entityNumber(for: object.entity)] else { continue }
                    try insert(object, layout: layout, table: table)
                }
            case .updateRows:
                for object in plan.request.updated {
                    guard let key = object.id.primaryKey, let table = plan.tables[object.entity.rootEntity.entityCode] else { continue }
                    try update(object, key: key, table: table)
                }
            case .removePairs: for change in plan.request.joinDeletes { try removePair(change) }
            case .addPairs: for change in plan.request.joinInserts { try addPair(change) }
            case .writeOrders: for ordering in plan.request.orderings { try order(ordering) }
            case .checkUniqueness: try checkUniqueness(plan.request)
            }
        }

        /// The ID an object has after this save (its permanent one, for an object inserted now).
        private func resolve(_ id: ManagedObjectID) -> ManagedObjectID { result.permanentIDs[id] ?? id }

        private func resolve(_ value: Value) -> Value {
            if case .objectID(let id) = value, let permanent = result.permanentIDs[id] { return .objectID(permanent) }
            return value
        }

        private func k(_ column: String) -> String { dialect.keyColumnName(column) }

        // MARK: Keys and versions

        private mutating func allocateKeys(root: EntityDescription, ids: [ManagedObjectID]) throws {
            var key = try session.allocateKeys(root: root, count: ids.count)
            for id in ids {
                result.permanentIDs[id] = ManagedObjectID(entity: id.entity, store: store, primaryKey: key)
                key += 1
            }
        }

        /// Reads (and locks, where the dialect does) the rows saved over, in key order, and
        /// throws the conflicts, each with the row as it is now.
        private mutating func checkVersions(table: TableLayout, rows: [(key: Int64, object: SavedObject)]) throws {
            let keys = Array(Set(rows.map(\.key))).sorted()
            var read: [Int64: Int64] = [:]
            for chunk in TableLayout.statementChunks(keys) {
                session.count(1)
                let sql = "SELECT \(k("Z_PK")), \(k("Z_OPT")) FROM \(table.table) WHERE \(k("Z_PK")) IN (\(dialect.placeholders(chunk.count)))\(dialect.versionLock)"
                for (key, version) in try session.integerPairs(sql, chunk.map(SQLArgument.key), entity: nil) { read[key] = version ?? 0 }
            }
            versions[table.root.entityCode] = read
            var conflicts: [VersionConflict] = []
            for (key, object) in rows {
                guard let expected = object.expectedVersion, read[key] != expected else { continue }
                conflicts.append(VersionConflict(id: object.id, expectedVersion: expected, persisted: nil))
            }
            guard !conflicts.isEmpty else { return }
            let persisted = try session.snapshots(conflicts.map(\.id))
            for i in conflicts.indices { conflicts[i].persisted = persisted[conflicts[i].id] }
            throw VersionConflictError(conflicts: conflicts)
        }

        // MARK: Rows

        private func delete(_ object: SavedObject, key: Int64, table: TableLayout) throws {
            try session.willOverwrite(object, deleting: true, in: table, key: key)
            session.count(1)
            try session.execute("DELETE FROM \(table.table) WHERE \(k("Z_PK")) = \(dialect.placeholder(1))", [.key(key)])
            for relationship in object.entity.relationships where relationship.usesJoinTable {
                session.count(1)
                switch schema.storage(forToMany: relationship) {
                case .joinTable(let name, let sourceColumn, _, _, _):
                    try session.execute("DELETE FROM \(session.table(name)) WHERE \(CoreDataLayout.quote(sourceColumn)) = \(dialect.placeholder(1))", [.key(key)])
                case .foreignKey(let name, let column, _):
                    // A to-many without an inverse: its hidden foreign key in the destinations' rows.
                    let column = CoreDataLayout.quote(column)
                    try session.execute("UPDATE \(session.table(name)) SET \(column) = NULL WHERE \(column) = \(dialect.placeholder(1))", [.key(key)])
                }
            }
        }

        private func releaseUniqueValues(_ object: SavedObject, key: Int64, columns: [String]) throws {
            guard let table = plan.tables[object.entity.rootEntity.entityCode] else { return }
            session.count(1)
            let assignments = columns.map { "\(CoreDataLayout.quote($0)) = NULL" }.joined(separator: ", ")
            try session.execute("UPDATE \(table.table) SET \(assignments) WHERE \(k("Z_PK")) = \(dialect.placeholder(1))", [.key(key)])
        }

        /// The arguments that write a to-one's destination: its key, and its entity number where
        /// the layout keeps one.
        private func appendToOne(_ value: Value, _ relationship: RelationshipDescription, to arguments: inout [SQLArgument]) {
            guard schema.entityColumnName(forToOne: relationship) != nil else { return }
            if case .objectID(let destination) = value {
                arguments.append(SQLArgument(.int(Int64(schema.entityNumber(for: destination.entity)))))
            } else {
                arguments.append(SQLArgument(.null))
            }
        }

        private mutating func insert(_ object: SavedObject, layout: TableLayout.EntityLayout, table: TableLayout) throws {
            let id = resolve(object.id)
            guard let key = id.primaryKey else { return }
            var arguments = scratch
            scratch = []
            defer { scratch = arguments }
            arguments.removeAll(keepingCapacity: true)
            arguments.append(.key(key))
            arguments.append(SQLArgument(.int(Int64(schema.entityNumber(for: object.entity)))))
            arguments.append(SQLArgument(.int(1)))
            var values = object.values
            for property in layout.insertProperties {
                let value = resolve(values[property.index])
                values[property.index] = value
                arguments.append(SQLArgument(try session.columnValue(value, for: property), property: property.index))
                if let relationship = property as? RelationshipDescription { appendToOne(value, relationship, to: &arguments) }
            }
            session.count(1)
            _ = try session.write(
                layout.insertSQL, arguments, entity: object.entity, inserting: true, constrained: StoreUniqueness.isConstrained(object.entity), expectedVersion: nil
            ) {
                try checkUniqueness(StoreSaveRequest(inserted: [object]))
            }
            for attribute in object.entity.attributes where attribute.isTransient { values[attribute.index] = .null }
            result.snapshots[id] = Snapshot(entity: object.entity, version: 1, values: values)
        }

        private mutating func update(_ object: SavedObject, key: Int64, table: TableLayout) throws {
            try session.willOverwrite(object, deleting: false, in: table, key: key)
            var assignments: [String] = []
            var arguments: [SQLArgument] = []
            var values = object.values
            for index in object.changedIndices {
                let property = object.entity.properties[index]
                if let attribute = property as? AttributeDescription, attribute.isTransient { continue }
                if let relationship = property as? RelationshipDescription, relationship.isToMany { continue }
                let value = resolve(values[index])
                values[index] = value
                arguments.append(SQLArgument(try session.columnValue(value, for: property), property: property.index))
                let cast = (property as? AttributeDescription).map(dialect.parameterCast) ?? ""
                assignments.append("\(CoreDataLayout.quote(schema.columnName(for: property))) = \(dialect.placeholder(arguments.count))\(cast)")
                if let relationship = property as? RelationshipDescription, let entityColumn = schema.entityColumnName(forToOne: relationship) {
                    appendToOne(value, relationship, to: &arguments)
                    assignments.append("\(CoreDataLayout.quote(entityColumn)) = \(dialect.placeholder(arguments.count))")
                }
            }
            assignments.append("\(k("Z_OPT")) = \(k("Z_OPT")) + 1")
            arguments.append(.key(key))
            session.count(1)
            var sql = "UPDATE \(table.table) SET \(assignments.joined(separator: ", ")) WHERE \(k("Z_PK")) = \(dialect.placeholder(arguments.count))"
            let expected = plan.versionInUpdate ? object.expectedVersion : nil
            if let expected {
                arguments.append(.key(expected))
                sql += " AND \(k("Z_OPT")) = \(dialect.placeholder(arguments.count))"
            }
            if dialect.returnsUpdatedVersion { sql += " RETURNING \(k("Z_OPT"))" }
            let returned = try session.write(
                sql, arguments, entity: object.entity, inserting: false, constrained: StoreUniqueness.changesConstrainedValues(object), expectedVersion: expected
            ) {
                try checkUniqueness(StoreSaveRequest(updated: [object]))
            }
            if let expected, returned == nil {
                // No row back: another save changed or deleted the row since the context read it.
                let persisted = try session.snapshots([object.id])[object.id]
                throw VersionConflictError(conflicts: [VersionConflict(id: object.id, expectedVersion: expected, persisted: persisted)])
            }
            for attribute in object.entity.attributes where attribute.isTransient { values[attribute.index] = .null }
            let read = versions[object.entity.rootEntity.entityCode]?[key]
            let version = returned ?? (read ?? object.expectedVersion ?? 0) + 1
            result.snapshots[object.id] = Snapshot(entity: object.entity, version: version, values: values)
        }

        // MARK: Relationships

        private func removePair(_ change: JoinChange) throws {
            guard let s = resolve(change.source).primaryKey, let d = resolve(change.destination).primaryKey else { return }
            session.count(1)
            switch schema.storage(forToMany: change.relationship) {
            case .joinTable(let name, let sourceColumn, let destinationColumn, _, _):
                try session.execute("""
                    DELETE FROM \(session.table(name)) WHERE \(CoreDataLayout.quote(sourceColumn)) = \(dialect.placeholder(1)) \
                    AND \(CoreDataLayout.quote(destinationColumn)) = \(dialect.placeholder(2))
                    """, [.key(s), .key(d)])
            case .foreignKey(let name, let column, _):
                let column = CoreDataLayout.quote(column)
                try session.execute(
                    "UPDATE \(session.table(name)) SET \(column) = NULL WHERE \(k("Z_PK")) = \(dialect.placeholder(1)) AND \(column) = \(dialect.placeholder(2))",
                    [.key(d), .key(s)])
            }
        }

        private func addPair(_ change: JoinChange) throws {
            guard let s = resolve(change.source).primaryKey, let d = resolve(change.destination).primaryKey else { return }
            session.count(1)
            switch schema.storage(forToMany: change.relationship) {
            case .joinTable(let name, let sourceColumn, let destinationColumn, _, _):
                try session.execute(dialect.insertIgnoringDuplicates(into: session.table(name), columns: [sourceColumn, destinationColumn]), [.key(s), .key(d)])
            case .foreignKey(let name, let column, _):
                try session.execute(
                    "UPDATE \(session.table(name)) SET \(CoreDataLayout.quote(column)) = \(dialect.placeholder(1)) WHERE \(k("Z_PK")) = \(dialect.placeholder(2))",
                    [.key(s), .key(d)])
            }
        }

        /// Writes each destination's position in an ordered relationship.
        private func order(_ ordering: OrderingChange) throws {
            guard let s = resolve(ordering.source).primaryKey else { return }
            let sql: String
            let withSource: Bool
            switch schema.storage(forToMany: ordering.relationship) {
            case .foreignKey(let name, _, let orderColumn?):
                sql = "UPDATE \(session.table(name)) SET \(CoreDataLayout.quote(orderColumn)) = \(dialect.placeholder(1)) WHERE \(k("Z_PK")) = \(dialect.placeholder(2))"
                withSource = false
            case .joinTable(let name, let sourceColumn, let destinationColumn, _, let orderColumn?):
                sql = """
                    UPDATE \(session.table(name)) SET \(CoreDataLayout.quote(orderColumn)) = \(dialect.placeholder(1)) \
                    WHERE \(CoreDataLayout.quote(sourceColumn)) = \(dialect.placeholder(2)) AND \(CoreDataLayout.quote(destinationColumn)) = \(dialect.placeholder(3))
                    """
                withSource = true
            default:
                return
            }
            for (position, destination) in ordering.destinations.enumerated() {
                guard let d = resolve(destination).primaryKey else { continue }
                session.count(1)
                try session.execute(sql, withSource ? [.key(Int64(position)), .key(s), .key(d)] : [.key(Int64(position)), .key(d)])
            }
        }

        // MARK: Uniqueness

        /// Checks the uniqueness constraints `request` sets values for against the rows as written.
        private func checkUniqueness(_ request: StoreSaveRequest) throws {
            try StoreUniqueness.check(request, resolve: resolve, store: store, schema: schema) { entity, attributes, values, excluding in
                guard let table = plan.tables[entity.rootEntity.entityCode] else { return nil }
                let codes = entity.selfAndDescendants.map { String(schema.entityNumber(for: $0)) }.joined(separator: ",")
                var arguments: [SQLArgument] = []
                var conditions: [String] = []
                // Bound as stored (a string with a NUL, a NaN), so a value matches the column holding it.
                for (attribute, value) in zip(attributes, values) {
                    arguments.append(SQLArgument(value, property: attribute.index))
                    conditions.append("\(CoreDataLayout.quote(schema.columnName(for: attribute))) = \(dialect.placeholder(arguments.count))\(dialect.parameterCast(attribute))")
                }
                arguments.append(.key(excluding))
                session.count(1)
                let sql = """
                    SELECT \(k("Z_PK")), \(k("Z_ENT")) FROM \(table.table) WHERE \(k("Z_ENT")) IN (\(codes)) \
                    AND \(conditions.joined(separator: " AND ")) AND \(k("Z_PK")) <> \(dialect.placeholder(arguments.count)) LIMIT 1
                    """
                guard let row = try session.integerPairs(sql, arguments, entity: entity).first else { return nil }
                return (row.0, Int(row.1 ?? -1))
            }
        }
    }
}
