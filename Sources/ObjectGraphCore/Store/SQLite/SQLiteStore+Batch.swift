import Foundation
import GRDB
import GRDBSQLite

// Batch requests: each one transaction on the pool's writer, as set-based SQL with bound arguments.
// Updates and deletes run the steps of a `BatchPlan`; the store finds the matching rows itself
// (`SQLiteBatchMatcher`), and records persistent history around the plan.
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
            let changes = HistoryRecording.changes(of: request, result: result)
            try recordHistory(changes, db: db)
            result.historyChanges = changes.count
            return result
        }
    }

    private func runBatch(_ request: StoreBatchRequest, store: PersistentStore, _ db: Database) throws -> StoreBatchResult {
        if case .insert(let entity, let rows) = request { return try batchInsert(entity, rows, store: store, db) }
        let matcher = SQLiteBatchMatcher(store: self, persistentStore: store, db: db)
        // History records every row by ID: without it, a request nobody needs the IDs of skips the scan for them.
        guard let plan = try BatchPlan(request, schema: schema, tables: layouts, listsEveryRow: historyTracking, matcher: matcher) else {
            return StoreBatchResult()
        }
        return try plan.run(on: SQLiteSaveSession(store: self, persistentStore: store, db: db, files: nil), matcher: matcher, store: store)
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
            guard let found = schema.entity(forNumber: Int(sqlite3_column_int64(sqlite, 1))) else { return nil }
            return ManagedObjectID(entity: found, store: store, primaryKey: sqlite3_column_int64(sqlite, 0))
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
        // The parameters as plain values (the property's index, or -1 for an entity column): the
        // loop below retains no property description per value. Only a value kept in an external
        // file needs its attribute.
        let indices = parameters.map { $0.isEntityColumn ? -1 : $0.index }
        let external = usesExternalStorage && parameters.contains { ($0.property as? AttributeDescription)?.usesExternalStorage == true }
        // Counted once, as many as were run (a failing row's statement included, as before).
        var run = 0
        defer { count(run) }
        try rows.withUnsafeBufferPointer { rows in
            for r in rows.indices {
                sqlite3_reset(sqlite)
                sqlite3_bind_int64(sqlite, 1, key)
                sqlite3_bind_int64(sqlite, 2, Int64(number))
                sqlite3_bind_int64(sqlite, 3, 1)
                for i in indices.indices {
                    let index = indices[i]
                    if index < 0 {
                        sqlite3_bind_null(sqlite, CInt(i + 4))
                    } else if external {
                        try bind(try stored(rows[r].values[index], for: parameters[i].property), to: sqlite, at: CInt(i + 4), db)
                    } else {
                        try bind(rows[r].values[index], to: sqlite, at: CInt(i + 4), db)
                    }
                }
                run += 1
                try step(sqlite, db)
                ids.append(ManagedObjectID(entity: entity, store: store, primaryKey: key))
                key += 1
            }
        }
        return StoreBatchResult(affected: ids, inserted: ids)
    }
}

/// How the SQLite store finds the rows of a batch update or delete, inside the request's
/// transaction: the predicate compiled by `SQLQueryBuilder`, its arguments bound as a fetch binds
/// them; keys read through SQLite's C API.
struct SQLiteBatchMatcher: BatchMatching {
    let store: SQLiteStore
    let persistentStore: PersistentStore
    let db: Database

    private var schema: CoreDataLayout { store.schema }
    private var model: ManagedObjectModel { store.model }

    /// One statement for every matching row; `values` bound through the C API, as a save binds
    /// them. (`UPDATE … RETURNING` would make one statement of the scan for IDs and the update, but
    /// costs SQLite 3.40 more than the two scans.)
    func update(
        _ fetch: StoreFetchRequest, assignments: String, values: [Value], where condition: BatchCondition?, reportRefusal: (String) throws -> Void
    ) throws -> Int {
        let table = CoreDataLayout.quote(schema.tableName(for: fetch.entity))
        // A predicate that joins other tables selects the keys in a subquery.
        let sql: String
        let arguments: [Value]
        if let condition {
            sql = "UPDATE \(table) AS t0 SET \(assignments)\(condition.sql)"
            arguments = condition.arguments
        } else {
            let select = try SQLQueryBuilder.selectStatement(
                schema: schema, entity: fetch.entity, includesSubentities: fetch.includesSubentities, predicate: fetch.predicate, columns: "t0.Z_PK")
            sql = "UPDATE \(table) SET \(assignments) WHERE Z_PK IN (\(select.sql))"
            arguments = select.arguments
        }
        let statement = try db.makeStatement(sql: sql)
        // The predicate's arguments bound as a fetch binds them, the new values as a save stores them.
        statement.setArguments(values + arguments)
        // The raw statement lives as long as `statement` (which finalizes it): keep it to the end.
        try withExtendedLifetime(statement) {
            let sqlite = statement.sqliteStatement
            for (i, value) in values.enumerated() { try store.bind(value, to: sqlite, at: CInt(i + 1), db) }
            do {
                try store.step(sqlite, db)
            } catch let error as DatabaseError where error.resultCode.primaryResultCode == .SQLITE_CONSTRAINT {
                try reportRefusal(error.message ?? "")
                throw error
            }
        }
        return db.changesCount
    }

    /// (`DELETE … RETURNING` would make one statement of the scan for IDs and the delete, but costs
    /// SQLite 3.40 several times the plain DELETE.)
    func delete(_ fetch: StoreFetchRequest, where condition: BatchCondition) throws -> Int {
        try db.makeStatement(sql: "DELETE FROM \(CoreDataLayout.quote(schema.tableName(for: fetch.entity))) AS t0\(condition.sql)", arguments: condition.arguments)
            .execute()
        return db.changesCount
    }

    /// The destinations of a relationship for sources, read inside the writer's transaction.
    func destinations(of relationship: RelationshipDescription, for sources: [ManagedObjectID]) throws
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
            store.count()
            let cursor = try Row.fetchCursor(db, sql: sql(marks), arguments: StatementArguments(chunk))
            while let row = try cursor.next() {
                let sourceKey: Int64 = row[0]
                let destinationKey: Int64 = row[1]
                let code: Int? = row[2]
                guard let source = bySource[sourceKey] else { continue }
                let entity = schema.destinationEntity(forNumber: code, of: destination)
                result[source, default: []].append(ManagedObjectID(entity: entity, store: persistentStore, primaryKey: destinationKey))
            }
        }
        return result
    }


    /// The IDs a fetch matches, read inside the writer's transaction.
    func matchingIDs(_ fetch: StoreFetchRequest) throws -> [ManagedObjectID] {
        let statement = try SQLQueryBuilder.selectStatement(
            schema: schema, entity: fetch.entity, includesSubentities: fetch.includesSubentities, predicate: fetch.predicate,
            sortDescriptors: fetch.sortDescriptors, columns: "t0.Z_PK, t0.Z_ENT",
            limit: fetch.fetchLimit > 0 ? fetch.fetchLimit : nil, offset: fetch.fetchOffset)
        store.count()
        // Read with the C API: two integer columns need no GRDB row per match.
        let select = try db.makeStatement(sql: statement.sql, arguments: statement.arguments)
        return try withExtendedLifetime(select) { try steppedIDs(select.sqliteStatement) }
    }

    /// Those of `ids` whose rows exist, with their concrete entities, in the order given.
    func existingIDs(_ ids: [ManagedObjectID]) throws -> [ManagedObjectID] {
        var found: [ManagedObjectID: ManagedObjectID] = [:]
        for (layout, chunk) in TableLayout.chunks(of: ids, in: store.layouts, size: TableLayout.keysPerStatement) {
            store.count()
            let marks = SQLDialect.sqlite.placeholders(chunk.count)
            let cursor = try Row.fetchCursor(db, sql: "SELECT Z_PK, Z_ENT FROM \(layout.table) WHERE Z_PK IN (\(marks))", arguments: StatementArguments(chunk))
            while let row = try cursor.next() {
                if let id = id(key: row[0], code: row[1]) { found[id] = id }
            }
        }
        var seen: Set<ManagedObjectID> = []
        return ids.compactMap { found[$0] }.filter { seen.insert($0).inserted }
    }

    /// The rows a fetch matches as a condition on the root table under the alias `t0`
    /// (` WHERE …`, or nothing), for an UPDATE or a DELETE of that table; nil when the fetch needs
    /// joins, a sort, a limit or an offset, which only a SELECT has.
    func condition(of fetch: StoreFetchRequest) throws -> BatchCondition? {
        guard fetch.sortDescriptors.isEmpty, fetch.fetchLimit <= 0, fetch.fetchOffset <= 0 else { return nil }
        var builder = SQLQueryBuilder(schema: schema, entity: fetch.entity)
        var conditions: [String] = []
        if let restriction = schema.entityRestriction(for: fetch.entity, includesSubentities: fetch.includesSubentities, alias: builder.rootAlias) {
            conditions.append(restriction)
        }
        if let predicate = fetch.predicate { conditions.append("(" + (try builder.whereClause(for: predicate)) + ")") }
        guard builder.joins.isEmpty else { return nil }
        return BatchCondition(sql: conditions.isEmpty ? "" : " WHERE " + conditions.joined(separator: " AND "), arguments: builder.arguments)
    }

    /// Steps a statement whose rows are `Z_PK, Z_ENT` (a SELECT, or RETURNING) to its end; their IDs.
    private func steppedIDs(_ sqlite: SQLiteStatement) throws -> [ManagedObjectID] {
        defer { sqlite3_reset(sqlite) }
        var ids: [ManagedObjectID] = []
        while true {
            let code = sqlite3_step(sqlite)
            if code == SQLITE_DONE { return ids }
            guard code == SQLITE_ROW else {
                throw DatabaseError(resultCode: ResultCode(rawValue: code), message: String(cString: sqlite3_errmsg(db.sqliteConnection)))
            }
            if let id = id(key: sqlite3_column_int64(sqlite, 0), code: Int(sqlite3_column_int64(sqlite, 1))) { ids.append(id) }
        }
    }

    private func id(key: Int64, code: Int) -> ManagedObjectID? {
        guard let entity = schema.entity(forNumber: code) else { return nil }
        return ManagedObjectID(entity: entity, store: persistentStore, primaryKey: key)
    }

    /// Runs `body` on chunks of at most ``TableLayout/keysPerStatement`` keys, with the chunk's `?, ?, …` placeholders.
    private func forEachChunk(_ keys: [Int64], _ body: (ArraySlice<Int64>, String) throws -> Void) throws {
        for chunk in TableLayout.statementChunks(keys) { try body(chunk, SQLDialect.sqlite.placeholders(chunk.count)) }
    }
}
