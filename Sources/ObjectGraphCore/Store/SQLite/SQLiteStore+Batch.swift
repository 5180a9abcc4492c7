import Foundation
import GRDB
import GRDBSQLite

// Batch requests: each one transaction on the pool's writer, as set-based SQL with bound arguments.
//
//   insert  without uniqueness constraints: keys reserved in Z_PRIMARYKEY at once, then the prepared
//           INSERT INTO "Root" (Z_PK, Z_ENT, Z_OPT, …) VALUES (?, …) stepped once per row; with them:
//           SELECT Z_PK, Z_ENT FROM "Root" WHERE Z_ENT IN (…) AND "key" = ? LIMIT 1 per row, then the
//           save path (the same INSERT per new row, and
//           UPDATE "Root" SET <given columns> = ?, Z_OPT = Z_OPT + 1 WHERE Z_PK = ? per upserted row)
//   update  SELECT t0.Z_PK, t0.Z_ENT FROM "Root" AS t0 WHERE <predicate>, then one
//           UPDATE "Root" AS t0 SET "a" = ?, …, Z_OPT = Z_OPT + 1 WHERE <predicate>
//           (a predicate that needs joins: … WHERE Z_PK IN (SELECT t0.Z_PK FROM "Root" AS t0 … WHERE <predicate>))
//   delete  SELECT t0.Z_PK, t0.Z_ENT … WHERE <predicate>; with no cascade or deny rule to follow, no
//           sort, limit or offset and no joins, one DELETE FROM "Root" AS t0 WHERE <predicate>;
//           otherwise the delete rules' reads, one per relationship and level, and
//           DELETE FROM "Root" WHERE Z_PK IN (?, …). Then, for the deleted keys:
//           DELETE FROM "Z_join" WHERE Z_SRC IN (?, …);
//           UPDATE "Other" SET "fk" = NULL, Z_OPT = Z_OPT + 1 WHERE "fk" IN (?, …)   (chunks of 500 keys,
//           each statement prepared once per transaction)

extension SQLiteStore {
    func executeBatch(_ request: StoreBatchRequest, store: PersistentStore) throws -> StoreBatchResult {
        let doing = switch request {
        case .insert(let entity, _): "batch inserting \(entity.name)"
        case .update(let fetch, _, _): "batch updating \(fetch.entity.name)"
        case .delete(let fetch, _): "batch deleting \(fetch.entity.name)"
        case .deleteObjects: "batch deleting objects"
        }
        return try write(doing) { db in
            guard historyTracking else { return try runBatch(request, store: store, db) }
            // Recorded in the batch's own transaction, with the tombstones of what it deletes.
            try prepareTombstones(db)
            var result = try runBatch(request, store: store, db)
            let changes = historyChanges(of: request, result: result)
            try recordHistory(changes, db: db)
            result.historyChanges = changes.count
            return result
        }
    }

    private func runBatch(_ request: StoreBatchRequest, store: PersistentStore, _ db: Database) throws -> StoreBatchResult {
        switch request {
        case .insert(let entity, let rows):
            return try batchInsert(entity, rows, store: store, db)
        case .update(let fetch, let values, let listing):
            // Without history, a request nobody needs the IDs of skips the scan for them.
            return try batchUpdate(fetch, values, listing: listing || historyTracking || values.isEmpty, store: store, db)
        case .delete(let fetch, let listing):
            if !listing && !historyTracking, let count = try deleteMatchingUnlisted(fetch, db) {
                return StoreBatchResult(unlistedCount: count, unlistedEntities: count > 0 ? [fetch.entity] : [])
            }
            if let deleted = try deleteMatching(fetch, store: store, db) {
                return try clearReferences(to: deleted, result: StoreBatchResult(affected: deleted, deleted: deleted), store: store, db)
            }
            return try batchDelete(try selectIDs(fetch, store: store, db), store: store, db)
        case .deleteObjects(let ids):
            return try batchDelete(try existingIDs(ids, store: store, db), store: store, db)
        }
    }

    // MARK: Insert

    private func batchInsert(_ entity: EntityDescription, _ rows: [BatchRow], store: PersistentStore, _ db: Database) throws -> StoreBatchResult {
        if let inserted = try insertNewRows(entity, rows, store: store, db) { return inserted }
        let table = CoreDataLayout.quote(schema.tableName(for: entity))
        let plan = try BatchInsertPlan(entity: entity, rows: rows) { _, owner, attributes, values in
            let codes = owner.selfAndDescendants.map { String(schema.entityNumber(for: $0)) }.joined(separator: ",")
            let conditions = attributes.map { "\(CoreDataLayout.quote(schema.columnName(for: $0))) = ?" }.joined(separator: " AND ")
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

    /// The rows of an entity without uniqueness constraints, all new: their keys reserved at once,
    /// the save path's prepared INSERT stepped once per row, no temporary IDs, no snapshots. Nil
    /// when the entity has uniqueness constraints (each row may be an upsert: the save path's work).
    private func insertNewRows(_ entity: EntityDescription, _ rows: [BatchRow], store: PersistentStore, _ db: Database) throws -> StoreBatchResult? {
        let number = schema.entityNumber(for: entity)
        guard RelationalLayout.uniquenessConstraints(of: entity).isEmpty,
              let layout = layouts[entity.rootEntity.entityCode]?.entities[number] else { return nil }
        guard !rows.isEmpty else { return StoreBatchResult() }
        // Each parameter after Z_PK, Z_ENT and Z_OPT: a property's value, or (true) the entity
        // number of a to-one relationship's destination, which a batch insert never sets.
        var parameters: [(index: Int, property: PropertyDescription, isEntityColumn: Bool)] = []
        for property in layout.insertProperties {
            parameters.append((property.index, property, false))
            if let relationship = property as? RelationshipDescription, schema.entityColumnName(forToOne: relationship) != nil {
                parameters.append((property.index, property, true))
            }
        }
        var key = try allocate(db, root: entity.rootEntity, count: rows.count)
        let statement = try db.cachedStatement(sql: layout.insertSQL)
        let sqlite = statement.sqliteStatement
        var ids: [ManagedObjectID] = []
        ids.reserveCapacity(rows.count)
        for row in rows {
            sqlite3_reset(sqlite)
            sqlite3_bind_int64(sqlite, 1, key)
            sqlite3_bind_int64(sqlite, 2, Int64(number))
            sqlite3_bind_int64(sqlite, 3, 1)
            for (i, parameter) in parameters.enumerated() {
                if parameter.isEntityColumn {
                    sqlite3_bind_null(sqlite, CInt(i + 4))
                } else {
                    try bind(try stored(row.values[parameter.index], for: parameter.property), to: sqlite, at: CInt(i + 4), db)
                }
            }
            count()
            try step(sqlite, db)
            ids.append(ManagedObjectID(entity: entity, store: store, primaryKey: key))
            key += 1
        }
        return StoreBatchResult(affected: ids, inserted: ids)
    }

    // MARK: Update

    private func batchUpdate(
        _ fetch: StoreFetchRequest, _ values: [(name: String, value: Value)], listing: Bool, store: PersistentStore, _ db: Database
    ) throws -> StoreBatchResult {
        let entity = fetch.entity
        // The rows' IDs, for the result, the row cache and the merge: a SELECT, then an UPDATE with
        // the same condition in the same transaction, matching the same rows. (RETURNING would make
        // one statement of them, but costs SQLite 3.40 more than the two scans.) Unlisted, the
        // UPDATE alone: SQLite counts the rows, and the row cache drops the entity's.
        var ids: [ManagedObjectID] = []
        if listing {
            ids = try selectIDs(fetch, store: store, db)
            guard !ids.isEmpty, !values.isEmpty else { return StoreBatchResult(affected: ids, updated: values.isEmpty ? [] : ids) }
        }
        let table = CoreDataLayout.quote(schema.tableName(for: entity))
        var assignments: [String] = []
        var assigned: [Value] = []
        for (name, value) in values {
            guard let attribute = entity.attributesByName[name] else { continue }
            assignments.append("\(CoreDataLayout.quote(schema.columnName(for: attribute))) = ?")
            assigned.append(try stored(value, for: attribute))
        }
        assignments.append("\(CoreDataLayout.versionColumn) = \(CoreDataLayout.versionColumn) + 1")
        let set = assignments.joined(separator: ", ")
        // A predicate that joins other tables selects the keys in a subquery.
        let sql: String
        let arguments: [Value]
        if let matching = try condition(of: fetch) {
            sql = "UPDATE \(table) AS t0 SET \(set)\(matching.sql)"
            arguments = matching.arguments
        } else {
            let select = try SQLQueryBuilder.selectStatement(
                schema: schema, entity: entity, includesSubentities: fetch.includesSubentities, predicate: fetch.predicate, columns: "t0.Z_PK")
            sql = "UPDATE \(table) SET \(set) WHERE Z_PK IN (\(select.sql))"
            arguments = select.arguments
        }
        count()
        let statement = try db.makeStatement(sql: sql)
        // The predicate's arguments bound as a fetch binds them, the new values as a save stores them.
        statement.setArguments(assigned + arguments)
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
        let changed = db.changesCount
        try checkUniqueness(afterUpdating: entity, names: Set(values.map(\.name)), db)
        guard listing else { return StoreBatchResult(unlistedCount: changed, unlistedEntities: changed > 0 ? [entity] : []) }
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
            let columns = attributes.map { CoreDataLayout.quote(schema.columnName(for: $0)) }
            let present = columns.map { "\($0) IS NOT NULL" }.joined(separator: " AND ")
            count()
            let sql = """
                SELECT 1 FROM \(CoreDataLayout.quote(schema.tableName(for: owner))) WHERE Z_ENT IN (\(codes)) AND \(present) \
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
        guard !all.isEmpty else { return StoreBatchResult(affected: initial) }
        for (rootCode, keys) in TableLayout.keysByRoot(all) {
            let table = CoreDataLayout.quote(schema.tableName(for: model.entitiesByCode[rootCode]))
            try executeInChunks(keys, db) { "DELETE FROM \(table) WHERE Z_PK IN (\($0))" }
        }
        return try clearReferences(to: all, result: StoreBatchResult(affected: initial, deleted: all), store: store, db)
    }

    /// Deletes the rows a fetch matches with one statement, when nothing needs them first: no cascade
    /// or deny rule of the entity (or its sub-entities) to follow, no sort, limit or offset, no
    /// join. Their IDs (read first, in the same transaction, with the same condition), or nil when
    /// the request needs the general path. (`DELETE … RETURNING` would make one statement of the
    /// two, but costs SQLite 3.40 several times the plain DELETE.)
    /// Deletes the rows a fetch matches with one statement and no scan for their IDs, when nothing
    /// needs them: the conditions of ``deleteMatching(_:store:_:)``, and no relationship of the model
    /// leaves or reaches the entity's tree (no join rows, foreign keys or inverses to clear). The
    /// number of rows deleted, or nil when the request needs its rows listed.
    private func deleteMatchingUnlisted(_ fetch: StoreFetchRequest, _ db: Database) throws -> Int? {
        let root = fetch.entity.rootEntity
        for entity in model.entitiesByCode {
            for relationship in entity.declaredProperties.compactMap({ $0 as? RelationshipDescription }) {
                if entity.rootEntity === root || relationship.destinationEntity?.rootEntity === root { return nil }
            }
        }
        guard let matching = try condition(of: fetch) else { return nil }
        return try delete(fetch, where: matching, db)
    }

    /// Runs `DELETE FROM "Root" AS t0 WHERE <condition>`; the number of rows it deleted.
    private func delete(_ fetch: StoreFetchRequest, where matching: (sql: String, arguments: [Value]), _ db: Database) throws -> Int {
        count()
        try db.makeStatement(sql: "DELETE FROM \(CoreDataLayout.quote(schema.tableName(for: fetch.entity))) AS t0\(matching.sql)", arguments: matching.arguments)
            .execute()
        return db.changesCount
    }

    private func deleteMatching(_ fetch: StoreFetchRequest, store: PersistentStore, _ db: Database) throws -> [ManagedObjectID]? {
        let rules = fetch.entity.selfAndDescendants.flatMap(\.relationships).map(\.deleteRule)
        guard !rules.contains(.cascade), !rules.contains(.deny), let matching = try condition(of: fetch) else { return nil }
        let ids = try selectIDs(fetch, store: store, db)
        guard !ids.isEmpty else { return ids }
        _ = try delete(fetch, where: matching, db)
        return ids
    }

    /// What deleting rows leaves behind, cleared: join-table rows naming them, hidden foreign keys of
    /// to-many relationships without an inverse, and surviving rows' to-one relationships to them
    /// (which get a new version and join `result.updated`).
    private func clearReferences(to all: [ManagedObjectID], result: StoreBatchResult, store: PersistentStore, _ db: Database) throws -> StoreBatchResult {
        var result = result
        let keysByRoot = TableLayout.keysByRoot(all)
        guard !keysByRoot.isEmpty else { return result }
        for entity in model.entitiesByCode {
            for relationship in entity.declaredProperties.compactMap({ $0 as? RelationshipDescription }) {
                guard let destination = relationship.destinationEntity else { continue }
                if relationship.usesJoinTable, case .foreignKey(let table, let column, _) = schema.storage(forToMany: relationship) {
                    // A to-many without an inverse keeps a hidden foreign key in its destinations' rows:
                    // those naming a deleted source are cleared.
                    guard let keys = keysByRoot[entity.rootEntity.entityCode] else { continue }
                    try executeInChunks(keys, db) {
                        "UPDATE \(CoreDataLayout.quote(table)) SET \(CoreDataLayout.quote(column)) = NULL WHERE \(CoreDataLayout.quote(column)) IN (\($0))"
                    }
                } else if relationship.usesJoinTable {
                    // Join-table rows naming a deleted object, on either side.
                    guard case .joinTable(let table, let sourceColumn, let destinationColumn, _, _) = schema.storage(forToMany: relationship) else { continue }
                    for (column, root) in [(sourceColumn, entity.rootEntity!), (destinationColumn, destination.rootEntity!)] as [(String, EntityDescription)] {
                        guard let keys = keysByRoot[root.entityCode] else { continue }
                        try executeInChunks(keys, db) { "DELETE FROM \(CoreDataLayout.quote(table)) WHERE \(column) IN (\($0))" }
                    }
                } else if !relationship.isToMany, let keys = keysByRoot[destination.rootEntity.entityCode] {
                    // Surviving rows whose to-one pointed at a deleted row: cleared, with a new version.
                    let table = CoreDataLayout.quote(schema.tableName(for: entity))
                    let column = CoreDataLayout.quote(schema.columnName(for: relationship))
                    var clear = "\(column) = NULL"
                    if let entityColumn = schema.entityColumnName(forToOne: relationship) { clear += ", \(CoreDataLayout.quote(entityColumn)) = NULL" }
                    try forEachChunk(keys) { chunk, marks in
                        count()
                        let statement = try db.cachedStatement(sql: """
                            UPDATE \(table) SET \(clear), \(CoreDataLayout.versionColumn) = \(CoreDataLayout.versionColumn) + 1 \
                            WHERE \(column) IN (\(marks)) RETURNING Z_PK, Z_ENT
                            """)
                        statement.setUncheckedArguments(StatementArguments(chunk))
                        result.updated += try steppedIDs(statement.sqliteStatement, store: store, db)
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
                sql = { "SELECT \(CoreDataLayout.quote(column)), Z_PK, Z_ENT FROM \(CoreDataLayout.quote(table)) WHERE \(CoreDataLayout.quote(column)) IN (\($0))" }
            case .joinTable(let table, let sourceColumn, let destinationColumn, _, _):
                // Core Data's join tables hold no entity numbers: the destinations' table does.
                let (source, target) = (CoreDataLayout.quote(sourceColumn), CoreDataLayout.quote(destinationColumn))
                if destination.subentities.isEmpty {
                    let number = schema.entityNumber(for: destination)
                    sql = { "SELECT j.\(source), j.\(target), \(number) FROM \(CoreDataLayout.quote(table)) AS j WHERE j.\(source) IN (\($0))" }
                } else {
                    let destinationTable = CoreDataLayout.quote(schema.tableName(for: destination))
                    sql = {
                        "SELECT j.\(source), j.\(target), d.Z_ENT FROM \(CoreDataLayout.quote(table)) AS j JOIN \(destinationTable) AS d ON d.Z_PK = j.\(target) WHERE j.\(source) IN (\($0))"
                    }
                }
            }
        } else {
            let column = CoreDataLayout.quote(schema.columnName(for: relationship))
            let entityColumn = schema.entityColumnName(forToOne: relationship).map(CoreDataLayout.quote) ?? "NULL"
            let table = CoreDataLayout.quote(schema.tableName(for: relationship.entity ?? destination))
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
                let entity = schema.destinationEntity(forNumber: code, of: destination)
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
        // Read with the C API: two integer columns need no GRDB row per match.
        let select = try db.makeStatement(sql: statement.sql, arguments: statement.arguments)
        return try withExtendedLifetime(select) { try steppedIDs(select.sqliteStatement, store: store, db) }
    }

    /// Those of `ids` whose rows exist, with their concrete entities, in the order given.
    private func existingIDs(_ ids: [ManagedObjectID], store: PersistentStore, _ db: Database) throws -> [ManagedObjectID] {
        var found: [ManagedObjectID: ManagedObjectID] = [:]
        for (rootCode, keys) in TableLayout.keysByRoot(ids) {
            let table = CoreDataLayout.quote(schema.tableName(for: model.entitiesByCode[rootCode]))
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

    /// The rows a fetch matches as a condition on the root table under the alias `t0`
    /// (` WHERE …`, or nothing), for an UPDATE or a DELETE of that table; nil when the fetch needs
    /// joins, a sort, a limit or an offset, which only a SELECT has.
    private func condition(of fetch: StoreFetchRequest) throws -> (sql: String, arguments: [Value])? {
        guard fetch.sortDescriptors.isEmpty, fetch.fetchLimit <= 0, fetch.fetchOffset <= 0 else { return nil }
        var builder = SQLQueryBuilder(schema: schema, entity: fetch.entity)
        var conditions: [String] = []
        if let restriction = schema.entityRestriction(for: fetch.entity, includesSubentities: fetch.includesSubentities, alias: builder.rootAlias) {
            conditions.append(restriction)
        }
        if let predicate = fetch.predicate { conditions.append("(" + (try builder.whereClause(for: predicate)) + ")") }
        guard builder.joins.isEmpty else { return nil }
        return (conditions.isEmpty ? "" : " WHERE " + conditions.joined(separator: " AND "), builder.arguments)
    }

    /// Steps a statement whose rows are `Z_PK, Z_ENT` (a SELECT, or RETURNING) to its end; their IDs.
    private func steppedIDs(_ sqlite: SQLiteStatement, store: PersistentStore, _ db: Database) throws -> [ManagedObjectID] {
        defer { sqlite3_reset(sqlite) }
        var ids: [ManagedObjectID] = []
        while true {
            let code = sqlite3_step(sqlite)
            if code == SQLITE_DONE { return ids }
            guard code == SQLITE_ROW else {
                throw DatabaseError(resultCode: ResultCode(rawValue: code), message: String(cString: sqlite3_errmsg(db.sqliteConnection)))
            }
            if let id = id(key: sqlite3_column_int64(sqlite, 0), code: Int(sqlite3_column_int64(sqlite, 1)), store: store) { ids.append(id) }
        }
    }

    /// Runs the statement `sql` makes of a chunk's `?, ?, …` on every chunk of keys; a statement
    /// is prepared once per connection and chunk size.
    private func executeInChunks(_ keys: [Int64], _ db: Database, _ sql: (String) -> String) throws {
        try forEachChunk(keys) { chunk, marks in
            count()
            try db.cachedStatement(sql: sql(marks)).execute(arguments: StatementArguments(chunk))
        }
    }

    private func id(key: Int64, code: Int, store: PersistentStore) -> ManagedObjectID? {
        guard let entity = schema.entity(forNumber: code) else { return nil }
        return ManagedObjectID(entity: entity, store: store, primaryKey: key)
    }

    /// Runs `body` on chunks of at most ``TableLayout/keysPerStatement`` keys, with the chunk's `?, ?, …` placeholders.
    private func forEachChunk(_ keys: [Int64], _ body: ([Int64], String) throws -> Void) throws {
        for start in stride(from: 0, to: keys.count, by: TableLayout.keysPerStatement) {
            let chunk = Array(keys[start..<min(start + TableLayout.keysPerStatement, keys.count)])
            try body(chunk, Array(repeating: "?", count: chunk.count).joined(separator: ","))
        }
    }
}
