import Foundation
import GRDB
import GRDBSQLite

// Batch requests: each one transaction on the pool's writer, as set-based SQL with bound arguments.
//
//   insert  SELECT Z_PK, Z_ENT FROM "Root" WHERE Z_ENT IN (…) AND "key" = ? LIMIT 1   (per row, only
//           for entities with uniqueness constraints), then the save path's prepared
//           INSERT INTO "Root" (Z_PK, Z_ENT, Z_OPT, …) VALUES (?, …) stepped once per row, and
//           UPDATE "Root" SET <given columns> = ?, Z_OPT = Z_OPT + 1 WHERE Z_PK = ? per upserted row
//   update  SELECT t0.Z_PK, t0.Z_ENT FROM "Root" AS t0 … WHERE <predicate>, then one
//           UPDATE "Root" SET "a" = ?, …, Z_OPT = Z_OPT + 1 WHERE Z_PK IN (SELECT t0.Z_PK FROM "Root" AS t0 … WHERE <predicate>)
//   delete  SELECT t0.Z_PK, t0.Z_ENT … WHERE <predicate>; the delete rules' reads, one per relationship
//           and level; DELETE FROM "Root" WHERE Z_PK IN (?, …); DELETE FROM "Z_join" WHERE Z_SRC IN (?, …);
//           UPDATE "Other" SET "fk" = NULL, Z_OPT = Z_OPT + 1 WHERE "fk" IN (?, …)   (chunks of 500 keys)

extension SQLiteStore {
    func executeBatch(_ request: StoreBatchRequest, store: PersistentStore) throws -> StoreBatchResult {
        switch request {
        case .insert(let entity, let rows):
            return try write("batch inserting \(entity.name)") { db in try batchInsert(entity, rows, store: store, db) }
        case .update(let fetch, let values):
            return try write("batch updating \(fetch.entity.name)") { db in try batchUpdate(fetch, values, store: store, db) }
        case .delete(let fetch):
            return try write("batch deleting \(fetch.entity.name)") { db in
                try batchDelete(try selectIDs(fetch, store: store, db), store: store, db)
            }
        case .deleteObjects(let ids):
            return try write("batch deleting objects") { db in try batchDelete(try existingIDs(ids, store: store, db), store: store, db) }
        }
    }

    // MARK: Insert

    private func batchInsert(_ entity: EntityDescription, _ rows: [BatchRow], store: PersistentStore, _ db: Database) throws -> StoreBatchResult {
        let table = SQLiteSchema.quote(schema.tableName(for: entity))
        let plan = try BatchInsertPlan(entity: entity, rows: rows) { _, owner, attributes, values in
            let codes = owner.selfAndDescendants.map { String(schema.entityNumber(for: $0)) }.joined(separator: ",")
            let conditions = attributes.map { "\(SQLiteSchema.quote(schema.columnName(for: $0))) = ?" }.joined(separator: " AND ")
            count()
            let statement = try db.cachedStatement(sql: "SELECT Z_PK, Z_ENT FROM \(table) WHERE Z_ENT IN (\(codes)) AND \(conditions) LIMIT 1")
            let sqlite = statement.sqliteStatement
            sqlite3_reset(sqlite)
            for (i, value) in values.enumerated() { try bind(value, to: sqlite, at: CInt(i + 1), db) }
            let code = sqlite3_step(sqlite)
            defer { sqlite3_reset(sqlite) }
            if code == SQLITE_DONE { return nil }
            guard code == SQLITE_ROW else {
                throw DatabaseError(resultCode: ResultCode(rawValue: code), message: String(cString: sqlite3_errmsg(db.sqliteConnection)))
            }
            return id(key: sqlite3_column_int64(sqlite, 0), code: Int(sqlite3_column_int64(sqlite, 1)), store: store)
        }
        let saved = try apply(plan.save, store: store, db: db)
        return plan.result(permanentIDs: saved.permanentIDs)
    }

    // MARK: Update

    private func batchUpdate(_ fetch: StoreFetchRequest, _ values: [(name: String, value: Value)], store: PersistentStore, _ db: Database) throws
        -> StoreBatchResult
    {
        let entity = fetch.entity
        let ids = try selectIDs(fetch, store: store, db)
        guard !ids.isEmpty, !values.isEmpty else { return StoreBatchResult(affected: ids, updated: values.isEmpty ? [] : ids) }
        let table = SQLiteSchema.quote(schema.tableName(for: entity))
        let select = try SQLQueryBuilder.selectStatement(
            schema: schema, entity: entity, includesSubentities: fetch.includesSubentities, predicate: fetch.predicate, columns: "t0.Z_PK")
        var assignments: [String] = []
        var assigned: [Value] = []
        for (name, value) in values {
            guard let attribute = entity.attributesByName[name] else { continue }
            assignments.append("\(SQLiteSchema.quote(schema.columnName(for: attribute))) = ?")
            assigned.append(try stored(value, for: attribute))
        }
        assignments.append("\(SQLiteSchema.versionColumn) = \(SQLiteSchema.versionColumn) + 1")
        count()
        let statement = try db.makeStatement(sql: "UPDATE \(table) SET \(assignments.joined(separator: ", ")) WHERE Z_PK IN (\(select.sql))")
        // The predicate's arguments bound as a fetch binds them, the new values as a save stores them.
        statement.setUncheckedArguments(StatementArguments((assigned + select.arguments).map(\.databaseValue)))
        // The raw statement lives as long as `statement` (which finalizes it): keep it to the end.
        try withExtendedLifetime(statement) {
            let sqlite = statement.sqliteStatement
            for (i, value) in assigned.enumerated() { try bind(value, to: sqlite, at: CInt(i + 1), db) }
            do {
                try step(sqlite, db)
            } catch let error as DatabaseError where error.resultCode.primaryResultCode == .SQLITE_CONSTRAINT {
                // A UNIQUE index (Core Data's, in every store) refused the update, which SQLite undid:
                // the refusal the check below gives, for the constraint whose columns SQLite names.
                let touched = uniquenessConstraints(touchedBy: entity, names: Set(values.map(\.name)))
                let message = error.message ?? ""
                guard let refused = touched.first(where: { constraint in
                    constraint.attributes.allSatisfy { message.contains("." + schema.columnName(for: $0)) }
                }) ?? touched.first else { throw error }
                throw uniquenessError(updating: entity, owner: refused.owner, attributes: refused.attributes)
            }
        }
        try checkUniqueness(afterUpdating: entity, names: Set(values.map(\.name)), db)
        return StoreBatchResult(affected: ids, updated: ids)
    }

    /// The uniqueness constraints of the entity and its sub-entities that name an attribute in `names`.
    private func uniquenessConstraints(touchedBy entity: EntityDescription, names: Set<String>)
        -> [(owner: EntityDescription, attributes: [AttributeDescription])]
    {
        var constraints = RelationalLayout.uniquenessConstraints(of: entity).map { (owner: $0.1, attributes: $0.2) }
        for sub in entity.selfAndDescendants.dropFirst() {
            for constraint in sub.uniquenessConstraints {
                constraints.append((sub, constraint.compactMap { sub.attributesByName[$0] }))
            }
        }
        return constraints.filter { $0.attributes.contains(where: { names.contains($0.name) }) }
    }

    private func uniquenessError(updating entity: EntityDescription, owner: EntityDescription, attributes: [AttributeDescription]) -> ObjectGraphError {
        let keys = attributes.map(\.name).joined(separator: ", ")
        return ObjectGraphError(
            .constraintConflict,
            "Batch update of \(entity.name) would give several \(owner.name) objects the same \(keys), which must be unique; nothing was written",
            entityName: owner.name, key: keys)
    }

    /// Refuses an update that gave two rows the same values for a uniqueness constraint.
    private func checkUniqueness(afterUpdating entity: EntityDescription, names: Set<String>, _ db: Database) throws {
        for (owner, attributes) in uniquenessConstraints(touchedBy: entity, names: names) {
            let codes = owner.selfAndDescendants.map { String(schema.entityNumber(for: $0)) }.joined(separator: ",")
            let columns = attributes.map { SQLiteSchema.quote(schema.columnName(for: $0)) }
            let present = columns.map { "\($0) IS NOT NULL" }.joined(separator: " AND ")
            count()
            let sql = """
                SELECT 1 FROM \(SQLiteSchema.quote(schema.tableName(for: owner))) WHERE Z_ENT IN (\(codes)) AND \(present) \
                GROUP BY \(columns.joined(separator: ", ")) HAVING COUNT(*) > 1 LIMIT 1
                """
            if try Int.fetchOne(db, sql: sql) != nil {
                throw uniquenessError(updating: entity, owner: owner, attributes: attributes)
            }
        }
    }

    // MARK: Delete

    private func batchDelete(_ initial: [ManagedObjectID], store: PersistentStore, _ db: Database) throws -> StoreBatchResult {
        let all = try BatchDeleteClosure.closure(of: initial) { relationship, sources in
            try destinations(of: relationship, for: sources, store: store, db)
        }
        var result = StoreBatchResult(affected: initial, deleted: all)
        guard !all.isEmpty else { return result }
        var keysByRoot: [Int: [Int64]] = [:]
        for id in all { if let pk = id.primaryKey { keysByRoot[id.entity.rootEntity.entityCode, default: []].append(pk) } }

        // The rows.
        for (rootCode, keys) in keysByRoot {
            let table = SQLiteSchema.quote(schema.tableName(for: model.entitiesByCode[rootCode]))
            try forEachChunk(keys) { chunk, marks in
                count()
                try db.execute(sql: "DELETE FROM \(table) WHERE Z_PK IN (\(marks))", arguments: StatementArguments(chunk))
            }
        }
        for entity in model.entitiesByCode {
            for relationship in entity.declaredProperties.compactMap({ $0 as? RelationshipDescription }) {
                guard let destination = relationship.destinationEntity else { continue }
                if relationship.usesJoinTable, case .foreignKey(let table, let column, _) = schema.storage(forToMany: relationship) {
                    // A to-many without an inverse keeps a hidden foreign key in its destinations' rows:
                    // those naming a deleted source are cleared.
                    guard let keys = keysByRoot[entity.rootEntity.entityCode] else { continue }
                    try forEachChunk(keys) { chunk, marks in
                        count()
                        try db.execute(
                            sql: "UPDATE \(SQLiteSchema.quote(table)) SET \(SQLiteSchema.quote(column)) = NULL WHERE \(SQLiteSchema.quote(column)) IN (\(marks))",
                            arguments: StatementArguments(chunk))
                    }
                } else if relationship.usesJoinTable {
                    // Join-table rows naming a deleted object, on either side.
                    guard case .joinTable(let table, let sourceColumn, let destinationColumn, _, _) = schema.storage(forToMany: relationship) else { continue }
                    for (column, root) in [(sourceColumn, entity.rootEntity!), (destinationColumn, destination.rootEntity!)] as [(String, EntityDescription)] {
                        guard let keys = keysByRoot[root.entityCode] else { continue }
                        try forEachChunk(keys) { chunk, marks in
                            count()
                            try db.execute(sql: "DELETE FROM \(SQLiteSchema.quote(table)) WHERE \(column) IN (\(marks))", arguments: StatementArguments(chunk))
                        }
                    }
                } else if !relationship.isToMany, let keys = keysByRoot[destination.rootEntity.entityCode] {
                    // Surviving rows whose to-one pointed at a deleted row: cleared, with a new version.
                    let table = SQLiteSchema.quote(schema.tableName(for: entity))
                    let column = SQLiteSchema.quote(schema.columnName(for: relationship))
                    var clear = "\(column) = NULL"
                    if let entityColumn = schema.entityColumnName(forToOne: relationship) { clear += ", \(SQLiteSchema.quote(entityColumn)) = NULL" }
                    try forEachChunk(keys) { chunk, marks in
                        count(2)
                        let cursor = try Row.fetchCursor(db, sql: "SELECT Z_PK, Z_ENT FROM \(table) WHERE \(column) IN (\(marks))", arguments: StatementArguments(chunk))
                        while let row = try cursor.next() {
                            if let id = id(key: row[0], code: row[1], store: store) { result.updated.append(id) }
                        }
                        try db.execute(
                            sql: "UPDATE \(table) SET \(clear), \(SQLiteSchema.versionColumn) = \(SQLiteSchema.versionColumn) + 1 WHERE \(column) IN (\(marks))",
                            arguments: StatementArguments(chunk))
                    }
                }
            }
        }
        return result
    }

    /// The destinations of a relationship for sources, read inside the writer's transaction.
    private func destinations(of relationship: RelationshipDescription, for sources: [ManagedObjectID], store: PersistentStore, _ db: Database) throws
        -> [ManagedObjectID: [ManagedObjectID]]
    {
        guard let destination = relationship.destinationEntity else { return [:] }
        var bySource: [Int64: ManagedObjectID] = [:]
        for id in sources { if let pk = id.primaryKey { bySource[pk] = id } }
        var result: [ManagedObjectID: [ManagedObjectID]] = [:]
        let sql: (String) -> String
        if relationship.isToMany {
            switch schema.storage(forToMany: relationship) {
            case .foreignKey(let table, let column, _):
                sql = { "SELECT \(SQLiteSchema.quote(column)), Z_PK, Z_ENT FROM \(SQLiteSchema.quote(table)) WHERE \(SQLiteSchema.quote(column)) IN (\($0))" }
            case .joinTable(let table, let sourceColumn, let destinationColumn, _, _):
                // Core Data's join tables hold no entity numbers: the destinations' table does.
                let (source, target) = (SQLiteSchema.quote(sourceColumn), SQLiteSchema.quote(destinationColumn))
                if destination.subentities.isEmpty {
                    let number = schema.entityNumber(for: destination)
                    sql = { "SELECT j.\(source), j.\(target), \(number) FROM \(SQLiteSchema.quote(table)) AS j WHERE j.\(source) IN (\($0))" }
                } else {
                    let destinationTable = SQLiteSchema.quote(schema.tableName(for: destination))
                    sql = {
                        "SELECT j.\(source), j.\(target), d.Z_ENT FROM \(SQLiteSchema.quote(table)) AS j JOIN \(destinationTable) AS d ON d.Z_PK = j.\(target) WHERE j.\(source) IN (\($0))"
                    }
                }
            }
        } else {
            let column = SQLiteSchema.quote(schema.columnName(for: relationship))
            let entityColumn = schema.entityColumnName(forToOne: relationship).map(SQLiteSchema.quote) ?? "NULL"
            let table = SQLiteSchema.quote(schema.tableName(for: relationship.entity ?? destination))
            sql = { "SELECT Z_PK, \(column), \(entityColumn) FROM \(table) WHERE Z_PK IN (\($0)) AND \(column) IS NOT NULL" }
        }
        try forEachChunk(Array(bySource.keys)) { chunk, marks in
            count()
            let cursor = try Row.fetchCursor(db, sql: sql(marks), arguments: StatementArguments(chunk))
            while let row = try cursor.next() {
                let sourceKey: Int64 = row[0]
                let destinationKey: Int64 = row[1]
                let code: Int? = row[2]
                guard let source = bySource[sourceKey] else { continue }
                let entity = code.flatMap { schema.entity(forNumber: $0) } ?? destination
                result[source, default: []].append(ManagedObjectID(entity: entity, store: store, primaryKey: destinationKey))
            }
        }
        return result
    }

    // MARK: Reading IDs

    /// The IDs a fetch matches, read inside the writer's transaction.
    private func selectIDs(_ fetch: StoreFetchRequest, store: PersistentStore, _ db: Database) throws -> [ManagedObjectID] {
        let statement = try SQLQueryBuilder.selectStatement(
            schema: schema, entity: fetch.entity, includesSubentities: fetch.includesSubentities, predicate: fetch.predicate,
            sortDescriptors: fetch.sortDescriptors, columns: "t0.Z_PK, t0.Z_ENT",
            limit: fetch.fetchLimit > 0 ? fetch.fetchLimit : nil, offset: fetch.fetchOffset)
        count()
        let cursor = try Row.fetchCursor(db, sql: statement.sql, arguments: StatementArguments(statement.arguments.map(\.databaseValue)))
        var ids: [ManagedObjectID] = []
        while let row = try cursor.next() {
            if let id = id(key: row[0], code: row[1], store: store) { ids.append(id) }
        }
        return ids
    }

    /// Those of `ids` whose rows exist, with their concrete entities, in the order given.
    private func existingIDs(_ ids: [ManagedObjectID], store: PersistentStore, _ db: Database) throws -> [ManagedObjectID] {
        var byRoot: [Int: [Int64]] = [:]
        for id in ids { if let pk = id.primaryKey { byRoot[id.entity.rootEntity.entityCode, default: []].append(pk) } }
        var found: [ManagedObjectID: ManagedObjectID] = [:]
        for (rootCode, keys) in byRoot {
            let table = SQLiteSchema.quote(schema.tableName(for: model.entitiesByCode[rootCode]))
            try forEachChunk(keys) { chunk, marks in
                count()
                let cursor = try Row.fetchCursor(db, sql: "SELECT Z_PK, Z_ENT FROM \(table) WHERE Z_PK IN (\(marks))", arguments: StatementArguments(chunk))
                while let row = try cursor.next() {
                    if let id = id(key: row[0], code: row[1], store: store) { found[id] = id }
                }
            }
        }
        var seen: Set<ManagedObjectID> = []
        return ids.compactMap { found[$0] }.filter { seen.insert($0).inserted }
    }

    private func id(key: Int64, code: Int, store: PersistentStore) -> ManagedObjectID? {
        guard let entity = schema.entity(forNumber: code) else { return nil }
        return ManagedObjectID(entity: entity, store: store, primaryKey: key)
    }

    /// Runs `body` on chunks of at most ``chunkSize`` keys, with the chunk's `?, ?, …` placeholders.
    private func forEachChunk(_ keys: [Int64], _ body: ([Int64], String) throws -> Void) throws {
        for start in stride(from: 0, to: keys.count, by: Self.chunkSize) {
            let chunk = Array(keys[start..<min(start + Self.chunkSize, keys.count)])
            try body(chunk, Array(repeating: "?", count: chunk.count).joined(separator: ","))
        }
    }
}
