import Foundation
import GRDB
import GRDBSQLite

// Fetches, counts, fault fulfilment and relationship reads: each through one of the pool's readers.

extension SQLiteStore {
    /// The statement for a fetch (or a count), from the one SELECT builder the tests check too.
    private func select(_ request: StoreFetchRequest, columns: String, forCount: Bool = false) throws -> (sql: String, arguments: [Value]) {
        let statement = try SQLQueryBuilder.selectStatement(
            schema: schema, entity: request.entity, includesSubentities: request.includesSubentities, predicate: request.predicate,
            sortDescriptors: forCount ? [] : request.sortDescriptors, columns: columns,
            limit: forCount || request.fetchLimit <= 0 ? nil : request.fetchLimit, offset: forCount ? nil : request.fetchOffset)
        return (statement.sql, statement.arguments)
    }

    func fetch(_ request: StoreFetchRequest, store: PersistentStore) throws -> [StoreRow] {
        guard let layout = layouts[request.entity.rootEntity.entityCode] else { return [] }
        let columns = request.includesPropertyValues ? layout.selectList : "t0.Z_PK, t0.Z_ENT"
        let (sql, arguments) = try select(request, columns: columns)
        let externalData = self.externalData
        return try readOne("fetching \(request.entity.name)") { db in
            sqlLog?.logPlan(of: sql, arguments: arguments, db)
            count()
            let statement = try db.cachedStatement(sql: sql)
            statement.setArguments(arguments)
            var rows: [StoreRow] = []
            let cursor = try Row.fetchCursor(statement)
            if request.includesPropertyValues {
                let sqlite = statement.sqliteStatement
                while try cursor.next() != nil {
                    if let storeRow = try layout.read(sqlite, store: store, externalData: externalData) { rows.append(storeRow) }
                }
            } else {
                while let row = try cursor.next() {
                    let code: Int = row[1]
                    guard let entity = layout.entities[code]?.entity else { continue }
                    rows.append(StoreRow(id: ManagedObjectID(entity: entity, store: store, primaryKey: row[0]), snapshot: nil))
                }
            }
            return rows
        }
    }

    func fetchKeys(_ request: StoreFetchRequest, store: PersistentStore) throws -> (keys: [Int64], entityCodes: [Int32]) {
        let (sql, arguments) = try select(request, columns: "t0.Z_PK, t0.Z_ENT")
        return try readOne("fetching \(request.entity.name) keys") { db in
            sqlLog?.logPlan(of: sql, arguments: arguments, db)
            count()
            let statement = try db.cachedStatement(sql: sql)
            statement.setArguments(arguments)
            let cursor = try Row.fetchCursor(statement)
            let sqlite = statement.sqliteStatement
            var keys: [Int64] = [], codes: [Int32] = []
            while try cursor.next() != nil {
                // Z_ENT is the store's entity number; a row of an entity the model lacks is skipped, as `fetch` skips it.
                guard let entity = schema.entity(forNumber: Int(truncatingIfNeeded: sqlite3_column_int64(sqlite, 1))) else { continue }
                keys.append(sqlite3_column_int64(sqlite, 0))
                codes.append(Int32(entity.entityCode))
            }
            return (keys, codes)
        }
    }

    func count(_ request: StoreFetchRequest, store: PersistentStore) throws -> Int {
        let (select, arguments) = try select(request, columns: "1", forCount: true)
        let sql: String
        if request.fetchLimit > 0 || request.fetchOffset > 0 {
            sql = "SELECT COUNT(*) FROM (\(select) LIMIT \(request.fetchLimit > 0 ? request.fetchLimit : -1) OFFSET \(request.fetchOffset))"
        } else {
            sql = "SELECT COUNT(*) FROM (\(select))"
        }
        return try readOne("counting \(request.entity.name)") { db in
            sqlLog?.logPlan(of: sql, arguments: arguments, db)
            count()
            let statement = try db.cachedStatement(sql: sql)
            statement.setArguments(arguments)
            return try Int.fetchOne(statement) ?? 0
        }
    }

    func snapshots(for ids: [ManagedObjectID], store: PersistentStore) throws -> [ManagedObjectID: Snapshot] {
        let chunks = TableLayout.chunks(of: ids, in: layouts, size: TableLayout.keysPerStatement)
        let externalData = self.externalData
        return try (chunks.count == 1 ? readOne : read)("reading objects") { db in
            var result: [ManagedObjectID: Snapshot] = [:]
            result.reserveCapacity(ids.count)
            for (layout, chunk) in chunks {
                count()
                let statement = try db.cachedStatement(sql: layout.rowsQuery(count: chunk.count, dialect: .sqlite))
                statement.setUncheckedArguments(StatementArguments(Array(chunk)))
                let cursor = try Row.fetchCursor(statement)
                let sqlite = statement.sqliteStatement
                while try cursor.next() != nil {
                    if let storeRow = try layout.read(sqlite, store: store, externalData: externalData), let snapshot = storeRow.snapshot {
                        result[storeRow.id] = snapshot
                    }
                }
            }
            return result
        }
    }

    func destinations(of relationship: RelationshipDescription, for sources: [ManagedObjectID], store: PersistentStore) throws
        -> [ManagedObjectID: [ManagedObjectID]]
    {
        guard let destination = relationship.destinationEntity else { return [:] }
        var bySource: [Int64: ManagedObjectID] = [:]
        for id in sources { if let pk = id.primaryKey { bySource[pk] = id } }
        let keys = Array(bySource.keys)
        let schema = self.schema
        return try read("reading \(relationship.entity?.name ?? "").\(relationship.name)") { db in
            var result: [ManagedObjectID: [ManagedObjectID]] = [:]
            for id in sources { result[id] = [] }
            for chunk in TableLayout.statementChunks(keys) {
                guard let sql = schema.destinationsQuery(of: relationship, count: chunk.count, dialect: .sqlite, table: CoreDataLayout.quote) else { break }
                count()
                let cursor = try Row.fetchCursor(db, sql: sql, arguments: StatementArguments(chunk))
                while let row = try cursor.next() {
                    // Decoded with errors: a damaged store can hold a NULL or a text where a key belongs.
                    let sourceKey = try row.decode(Int64.self, atIndex: 0)
                    let destinationKey = try row.decode(Int64.self, atIndex: 1)
                    let code = try row.decode(Int.self, atIndex: 2)
                    guard let source = bySource[sourceKey] else { continue }
                    let entity = schema.destinationEntity(forNumber: code, of: destination)
                    result[source, default: []].append(ManagedObjectID(entity: entity, store: store, primaryKey: destinationKey))
                }
            }
            return result
        }
    }
}
