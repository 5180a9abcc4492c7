import Foundation
import GRDB
import GRDBSQLite
import Synchronization

/// The SQLite store: a GRDB `DatabasePool` in WAL mode (one writer, concurrent readers).
///
/// Fetches and fault fulfilment read through the pool's readers and run concurrently with each
/// other and with a save; saves are serialized by the pool's writer, each in one transaction.
final class SQLiteStore: StoreBackend {
    let identifier: String
    let metadata: [String: String]
    let url: URL
    let schema: SQLiteSchema
    let model: ManagedObjectModel
    private let pool: DatabasePool
    private let layouts: [Int: SQLiteTableLayout]  // by root entity code
    private let statements = Atomic<Int>(0)

    var statementCount: Int { statements.load(ordering: .relaxed) }

    init(url: URL, model: ManagedObjectModel, readOnly: Bool, durability: StoreDurability,
         maximumReaderCount: Int, busyTimeout: Double) throws {
        self.url = url
        self.model = model
        self.schema = SQLiteSchema(model: model)
        let path = url.path
        try Self.checkHeader(of: url)
        if !readOnly {
            let directory = url.deletingLastPathComponent().path
            var isDirectory: ObjCBool = false
            if !FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory) || !isDirectory.boolValue {
                throw ObjectGraphError(.io, "Cannot create the SQLite store at \(path): the folder \(directory) does not exist", url: url)
            }
            if !FileManager.default.isWritableFile(atPath: directory) && !FileManager.default.fileExists(atPath: path) {
                throw ObjectGraphError(.readOnly, "Cannot create the SQLite store at \(path): the folder \(directory) is not writable", url: url)
            }
        } else if !FileManager.default.fileExists(atPath: path) {
            throw ObjectGraphError(.io, "Cannot open the read-only SQLite store at \(path): there is no such file", url: url)
        }
        var configuration = Configuration()
        configuration.readonly = readOnly
        configuration.maximumReaderCount = max(1, maximumReaderCount)
        configuration.busyMode = .timeout(busyTimeout)
        configuration.label = "ObjectGraph.SQLiteStore"
        let synchronous = durability == .full ? "FULL" : "NORMAL"
        configuration.prepareDatabase { db in
            SQLiteFunctions.register(in: db)
            if !db.configuration.readonly {
                try db.execute(sql: "PRAGMA synchronous = \(synchronous)")
            }
        }
        do {
            pool = try DatabasePool(path: path, configuration: configuration)
        } catch {
            throw Self.translate(error, url: url, while: "opening the SQLite store")
        }
        // GRDB sets `synchronous = NORMAL` on the writer when it switches the pool to WAL, after
        // `prepareDatabase` ran: set the durability asked for again, and check it took.
        if !readOnly {
            do {
                let level = try pool.writeWithoutTransaction { db -> Int in
                    try db.execute(sql: "PRAGMA synchronous = \(synchronous)")
                    return try Int.fetchOne(db, sql: "PRAGMA synchronous") ?? -1
                }
                let expected = durability == .full ? 2 : 1
                if level != expected {
                    try? pool.close()
                    throw ObjectGraphError(.io, "The SQLite store at \(path) refused synchronous = \(synchronous) (it reports \(level))", url: url)
                }
            } catch let error as ObjectGraphError {
                throw error
            } catch {
                try? pool.close()
                throw Self.translate(error, url: url, while: "setting the store's durability")
            }
        }
        var layouts: [Int: SQLiteTableLayout] = [:]
        for root in model.entitiesByCode where root.superentity == nil {
            layouts[root.entityCode] = SQLiteTableLayout(root: root, schema: schema)
        }
        self.layouts = layouts
        let schema = self.schema
        let metadata: [String: String]
        do {
            if readOnly {
                metadata = try pool.read { db in try Self.readMetadata(db) } ?? [:]
                if metadata.isEmpty {
                    throw ObjectGraphError(.incompatibleModel, "The file at \(path) is an SQLite database, but not an ObjectGraph store", url: url)
                }
            } else {
                metadata = try pool.write { db -> [String: String] in
                    if let existing = try Self.readMetadata(db) {
                        if existing[PersistentStore.metadataModelHashKey] == model.versionHash {
                            for statement in schema.userIndexStatements() { try db.execute(sql: statement) }
                        }
                        return existing
                    }
                    let tables = try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
                    if !tables.isEmpty {
                        throw ObjectGraphError(
                            .incompatibleModel,
                            "The file at \(path) is an SQLite database with tables (\(tables.prefix(3).joined(separator: ", "))), but not an ObjectGraph store",
                            url: url)
                    }
                    try db.execute(sql: "CREATE TABLE \(SQLiteSchema.metadataTable) (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
                    try db.execute(sql: "CREATE TABLE \(SQLiteSchema.primaryKeyTable) (Z_TABLE TEXT PRIMARY KEY, Z_MAX INTEGER NOT NULL)")
                    for statement in schema.createStatements() + schema.userIndexStatements() { try db.execute(sql: statement) }
                    let metadata = [
                        PersistentStore.metadataIdentifierKey: UUID().uuidString,
                        PersistentStore.metadataTypeKey: StoreType.sqlite.rawValue,
                        PersistentStore.metadataModelHashKey: model.versionHash,
                    ]
                    for (key, value) in metadata {
                        try db.execute(sql: "INSERT INTO \(SQLiteSchema.metadataTable) (key, value) VALUES (?, ?)", arguments: [key, value])
                    }
                    return metadata
                }
            }
        } catch let error as ObjectGraphError {
            try? pool.close()
            throw error
        } catch {
            try? pool.close()
            throw Self.translate(error, url: url, while: "opening the SQLite store")
        }
        if metadata[PersistentStore.metadataModelHashKey] != model.versionHash {
            try? pool.close()
            throw ObjectGraphError(
                .incompatibleModel,
                "The store at \(path) was written with another model (version hash \(metadata[PersistentStore.metadataModelHashKey] ?? "none"), this model's is \(model.versionHash)); migrate it before opening it with this model",
                url: url)
        }
        self.metadata = metadata
        self.identifier = metadata[PersistentStore.metadataIdentifierKey] ?? UUID().uuidString
    }

    /// Refuses, without touching it, a file that exists, is not empty and is not an SQLite database.
    private static func checkHeader(of url: URL) throws {
        guard let handle = try? FileHandle(forReadingFrom: url) else { return }
        defer { try? handle.close() }
        let header = (try? handle.read(upToCount: 16)) ?? Data()
        if header.isEmpty { return }
        if header != Data("SQLite format 3\0".utf8) {
            throw ObjectGraphError(.notADatabase, "The file at \(url.path) is not an SQLite database; it was left as it was", url: url)
        }
    }

    private static func readMetadata(_ db: Database) throws -> [String: String]? {
        guard try db.tableExists(SQLiteSchema.metadataTable) else { return nil }
        var metadata: [String: String] = [:]
        for row in try Row.fetchAll(db, sql: "SELECT key, value FROM \(SQLiteSchema.metadataTable)") {
            metadata[row[0]] = row[1]
        }
        return metadata
    }

    /// Turns a GRDB or SQLite error into an ObjectGraphError that says what and where.
    static func translate(_ error: any Error, url: URL, while doing: String) -> any Error {
        if error is ObjectGraphError || error is VersionConflictError || error is ConstraintConflictError { return error }
        guard let dbError = error as? DatabaseError else { return error }
        let path = url.path
        let detail = dbError.message ?? "\(dbError.resultCode)"
        switch dbError.resultCode.primaryResultCode {
        case .SQLITE_NOTADB, .SQLITE_CORRUPT:
            return ObjectGraphError(.notADatabase, "The file at \(path) is not a valid SQLite database (\(detail)) while \(doing)", url: url)
        case .SQLITE_READONLY:
            return ObjectGraphError(.readOnly, "The store at \(path) cannot be written (\(detail)) while \(doing)", url: url)
        case .SQLITE_CANTOPEN, .SQLITE_PERM, .SQLITE_AUTH:
            return ObjectGraphError(.io, "Cannot open the store at \(path) (\(detail)) while \(doing)", url: url)
        case .SQLITE_FULL:
            return ObjectGraphError(.diskFull, "The disk holding \(path) is full (\(detail)) while \(doing); nothing was written", url: url)
        case .SQLITE_BUSY, .SQLITE_LOCKED:
            return ObjectGraphError(.busy, "The store at \(path) is locked by another connection (\(detail)) while \(doing)", url: url)
        case .SQLITE_IOERR:
            return ObjectGraphError(.io, "Input/output error on \(path) (\(detail)) while \(doing)", url: url)
        default:
            return ObjectGraphError(.io, "SQLite error on \(path): \(detail) while \(doing)", url: url)
        }
    }

    private func count(_ n: Int = 1) { statements.add(n, ordering: .relaxed) }

    private func read<T>(_ doing: String, _ body: (Database) throws -> T) throws -> T {
        do { return try pool.read(body) } catch { throw Self.translate(error, url: url, while: doing) }
    }

    /// A read of one statement: SQLite runs a lone statement in its own implicit transaction, so the
    /// explicit one `read` opens (BEGIN, COMMIT) would only add two statements to every fault.
    private func readOne<T>(_ doing: String, _ body: (Database) throws -> T) throws -> T {
        do { return try pool.unsafeRead(body) } catch { throw Self.translate(error, url: url, while: doing) }
    }

    private func write<T>(_ doing: String, _ body: (Database) throws -> T) throws -> T {
        do { return try pool.write(body) } catch { throw Self.translate(error, url: url, while: doing) }
    }

    // MARK: - Fetch

    private func selectSQL(_ request: StoreFetchRequest, columns: String, builder: inout SQLQueryBuilder, forCount: Bool = false) throws -> String {
        let entity = request.entity
        var conditions: [String] = []
        if let restriction = schema.entityRestriction(for: entity, includesSubentities: request.includesSubentities, alias: builder.rootAlias) {
            conditions.append(restriction)
        }
        if let predicate = request.predicate {
            conditions.append("(" + (try builder.whereClause(for: predicate)) + ")")
        }
        let orderBy = forCount ? "" : try builder.orderByClause(for: request.sortDescriptors)
        var sql = "SELECT \(columns) FROM \(SQLiteSchema.quote(schema.tableName(for: entity))) AS \(builder.rootAlias)"
        let joins = builder.joinClause()
        if !joins.isEmpty { sql += " " + joins }
        if !conditions.isEmpty { sql += " WHERE " + conditions.joined(separator: " AND ") }
        if !orderBy.isEmpty { sql += " ORDER BY " + orderBy }
        if !forCount {
            if request.fetchLimit > 0 { sql += " LIMIT \(request.fetchLimit)" } else if request.fetchOffset > 0 { sql += " LIMIT -1" }
            if request.fetchOffset > 0 { sql += " OFFSET \(request.fetchOffset)" }
        }
        return sql
    }

    func fetch(_ request: StoreFetchRequest, store: PersistentStore) throws -> [StoreRow] {
        guard let layout = layouts[request.entity.rootEntity.entityCode] else { return [] }
        var builder = SQLQueryBuilder(schema: schema, entity: request.entity)
        let columns = request.includesPropertyValues ? layout.selectList : "t0.Z_PK, t0.Z_ENT"
        let sql = try selectSQL(request, columns: columns, builder: &builder)
        let arguments = StatementArguments(builder.arguments.map(\.databaseValue))
        let model = self.model
        return try readOne("fetching \(request.entity.name)") { db in
            count()
            let statement = try db.cachedStatement(sql: sql)
            statement.setUncheckedArguments(arguments)
            var rows: [StoreRow] = []
            let cursor = try Row.fetchCursor(statement)
            if request.includesPropertyValues {
                let sqlite = statement.sqliteStatement
                while try cursor.next() != nil {
                    if let storeRow = layout.read(sqlite, store: store, model: model) { rows.append(storeRow) }
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
        var builder = SQLQueryBuilder(schema: schema, entity: request.entity)
        let sql = try selectSQL(request, columns: "t0.Z_PK, t0.Z_ENT", builder: &builder)
        let arguments = StatementArguments(builder.arguments.map(\.databaseValue))
        return try readOne("fetching \(request.entity.name) keys") { db in
            count()
            let statement = try db.cachedStatement(sql: sql)
            statement.setUncheckedArguments(arguments)
            let cursor = try Row.fetchCursor(statement)
            let sqlite = statement.sqliteStatement
            var keys: [Int64] = [], codes: [Int32] = []
            while try cursor.next() != nil {
                keys.append(sqlite3_column_int64(sqlite, 0))
                codes.append(Int32(truncatingIfNeeded: sqlite3_column_int64(sqlite, 1)))
            }
            return (keys, codes)
        }
    }

    func count(_ request: StoreFetchRequest, store: PersistentStore) throws -> Int {
        var builder = SQLQueryBuilder(schema: schema, entity: request.entity)
        var sql = try selectSQL(request, columns: "1", builder: &builder, forCount: true)
        if request.fetchLimit > 0 || request.fetchOffset > 0 {
            sql = "SELECT COUNT(*) FROM (\(sql) LIMIT \(request.fetchLimit > 0 ? request.fetchLimit : -1) OFFSET \(request.fetchOffset))"
        } else {
            sql = "SELECT COUNT(*) FROM (\(sql))"
        }
        let arguments = StatementArguments(builder.arguments.map(\.databaseValue))
        return try readOne("counting \(request.entity.name)") { db in
            count()
            return try Int.fetchOne(db.cachedStatement(sql: sql), arguments: arguments) ?? 0
        }
    }

    private static let chunkSize = 500

    func snapshots(for ids: [ManagedObjectID], store: PersistentStore) throws -> [ManagedObjectID: Snapshot] {
        var byRoot: [Int: [Int64]] = [:]
        for id in ids {
            guard let pk = id.primaryKey else { continue }
            byRoot[id.entity.rootEntity.entityCode, default: []].append(pk)
        }
        let model = self.model
        let single = byRoot.count == 1 && (byRoot.first?.value.count ?? 0) <= Self.chunkSize
        return try (single ? readOne : read)("reading objects") { db in
            var result: [ManagedObjectID: Snapshot] = [:]
            result.reserveCapacity(ids.count)
            for (rootCode, keys) in byRoot {
                guard let layout = layouts[rootCode] else { continue }
                for start in stride(from: 0, to: keys.count, by: Self.chunkSize) {
                    let chunk = keys[start..<min(start + Self.chunkSize, keys.count)]
                    let sql = chunk.count == 1
                        ? "SELECT \(layout.selectList) FROM \(SQLiteSchema.quote(layout.table)) AS t0 WHERE t0.Z_PK = ?"
                        : "SELECT \(layout.selectList) FROM \(SQLiteSchema.quote(layout.table)) AS t0 WHERE t0.Z_PK IN (\(Array(repeating: "?", count: chunk.count).joined(separator: ",")))"
                    count()
                    let statement = try db.cachedStatement(sql: sql)
                    statement.setUncheckedArguments(StatementArguments(Array(chunk)))
                    let cursor = try Row.fetchCursor(statement)
                    let sqlite = statement.sqliteStatement
                    while try cursor.next() != nil {
                        if let storeRow = layout.read(sqlite, store: store, model: model), let snapshot = storeRow.snapshot {
                            result[storeRow.id] = snapshot
                        }
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
        let storage = schema.storage(forToMany: relationship)
        let model = self.model
        return try read("reading \(relationship.entity?.name ?? "").\(relationship.name)") { db in
            var result: [ManagedObjectID: [ManagedObjectID]] = [:]
            for id in sources { result[id] = [] }
            for start in stride(from: 0, to: keys.count, by: Self.chunkSize) {
                let chunk = Array(keys[start..<min(start + Self.chunkSize, keys.count)])
                let marks = Array(repeating: "?", count: chunk.count).joined(separator: ",")
                let sql: String
                switch storage {
                case .foreignKey(let table, let column, let orderColumn):
                    let order = orderColumn.map { ", \(SQLiteSchema.quote($0))" } ?? ", Z_PK"
                    sql = "SELECT \(SQLiteSchema.quote(column)), Z_PK, Z_ENT FROM \(SQLiteSchema.quote(table)) WHERE \(SQLiteSchema.quote(column)) IN (\(marks)) ORDER BY \(SQLiteSchema.quote(column))\(order)"
                case .joinTable(let table, let sourceColumn, let destinationColumn, let destinationEntityColumn, let orderColumn):
                    let order = orderColumn.map { ", \($0)" } ?? ", \(destinationColumn)"
                    sql = "SELECT \(sourceColumn), \(destinationColumn), \(destinationEntityColumn) FROM \(SQLiteSchema.quote(table)) WHERE \(sourceColumn) IN (\(marks)) ORDER BY \(sourceColumn)\(order)"
                }
                count()
                let cursor = try Row.fetchCursor(db, sql: sql, arguments: StatementArguments(chunk))
                while let row = try cursor.next() {
                    let sourceKey: Int64 = row[0]
                    let destinationKey: Int64 = row[1]
                    let code: Int = row[2]
                    guard let source = bySource[sourceKey] else { continue }
                    let entity = code >= 0 && code < model.entitiesByCode.count ? model.entitiesByCode[code] : destination
                    result[source, default: []].append(ManagedObjectID(entity: entity, store: store, primaryKey: destinationKey))
                }
            }
            return result
        }
    }

    // MARK: - Write

    func allocatePrimaryKeys(for entity: EntityDescription, count n: Int) throws -> Int64 {
        try write("allocating primary keys for \(entity.name)") { db in try allocate(db, root: entity.rootEntity, count: n) }
    }

    private func allocate(_ db: Database, root: EntityDescription, count n: Int) throws -> Int64 {
        count(2)
        let table = root.name
        var current = try Int64.fetchOne(
            db.cachedStatement(sql: "SELECT Z_MAX FROM \(SQLiteSchema.primaryKeyTable) WHERE Z_TABLE = ?"), arguments: [table])
        if current == nil {
            count()
            current = try Int64.fetchOne(db, sql: "SELECT MAX(Z_PK) FROM \(SQLiteSchema.quote(table))") ?? 0
        }
        let first = current! + 1
        try db.cachedStatement(sql: "INSERT OR REPLACE INTO \(SQLiteSchema.primaryKeyTable) (Z_TABLE, Z_MAX) VALUES (?, ?)")
            .execute(arguments: [table, first + Int64(n) - 1])
        return first
    }

    func save(_ request: StoreSaveRequest, store: PersistentStore) throws -> StoreSaveResult {
        try write("saving") { db in try self.apply(request, store: store, db: db) }
    }

    private func apply(_ request: StoreSaveRequest, store: PersistentStore, db: Database) throws -> StoreSaveResult {
        var result = StoreSaveResult()
        // Keys in the order objects were created, so rows are appended to the table's B-tree.
        var request = request
        request.inserted.sort { $0.id < $1.id }
        // 1. Permanent IDs for inserted objects that have none yet.
        var pending: [Int: [ManagedObjectID]] = [:]
        for object in request.inserted where object.id.isTemporaryID {
            pending[object.entity.rootEntity.entityCode, default: []].append(object.id)
        }
        for (rootCode, ids) in pending {
            let root = model.entitiesByCode[rootCode]
            var key = try allocate(db, root: root, count: ids.count)
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

        // 2. Optimistic locking: every updated or deleted object's version must be the one its context saw.
        var conflicts: [VersionConflict] = []
        var checks: [Int: [(Int64, SavedObject)]] = [:]
        for object in request.updated + request.deleted {
            guard object.expectedVersion != nil, let pk = object.id.primaryKey else { continue }
            checks[object.entity.rootEntity.entityCode, default: []].append((pk, object))
        }
        for (rootCode, list) in checks {
            guard let layout = layouts[rootCode] else { continue }
            var versions: [Int64: Int64] = [:]
            for start in stride(from: 0, to: list.count, by: Self.chunkSize) {
                let chunk = list[start..<min(start + Self.chunkSize, list.count)].map(\.0)
                count()
                let sql = "SELECT Z_PK, Z_OPT FROM \(SQLiteSchema.quote(layout.table)) WHERE Z_PK IN (\(Array(repeating: "?", count: chunk.count).joined(separator: ",")))"
                for row in try Row.fetchAll(db, sql: sql, arguments: StatementArguments(chunk)) {
                    versions[row[0]] = row[1]
                }
            }
            for (pk, object) in list where versions[pk] != object.expectedVersion {
                conflicts.append(VersionConflict(id: object.id, expectedVersion: object.expectedVersion ?? 0, persisted: nil))
            }
        }
        if !conflicts.isEmpty {
            let ids = conflicts.map(\.id)
            let persisted = try readSnapshots(ids, store: store, db: db)
            for i in conflicts.indices { conflicts[i].persisted = persisted[conflicts[i].id] }
            throw VersionConflictError(conflicts: conflicts)
        }

        // 3. Deletes, with their join-table rows.
        for object in request.deleted {
            guard let pk = object.id.primaryKey, let layout = layouts[object.entity.rootEntity.entityCode] else { continue }
            count()
            try db.cachedStatement(sql: "DELETE FROM \(SQLiteSchema.quote(layout.table)) WHERE Z_PK = ?").execute(arguments: [pk])
            for relationship in object.entity.relationships where relationship.usesJoinTable {
                if case .joinTable(let table, let sourceColumn, _, _, _) = schema.storage(forToMany: relationship) {
                    count()
                    try db.cachedStatement(sql: "DELETE FROM \(SQLiteSchema.quote(table)) WHERE \(sourceColumn) = ?").execute(arguments: [pk])
                }
            }
        }

        // 4. Inserts.
        for object in request.inserted {
            let id = resolve(object.id)
            guard let pk = id.primaryKey, let layout = layouts[object.entity.rootEntity.entityCode]?.entities[object.entity.entityCode] else { continue }
            let statement = try db.cachedStatement(sql: layout.insertSQL)
            let sqlite = statement.sqliteStatement
            sqlite3_reset(sqlite)
            _ = Value.int(pk).bind(to: sqlite, at: 1)
            _ = Value.int(Int64(object.entity.entityCode)).bind(to: sqlite, at: 2)
            _ = Value.int(1).bind(to: sqlite, at: 3)
            var parameter: CInt = 4
            var values = object.values
            for property in layout.insertProperties {
                let value = resolve(values[property.index])
                values[property.index] = value
                _ = value.bind(to: sqlite, at: parameter)
                parameter += 1
                if let relationship = property as? RelationshipDescription, schema.entityColumnName(forToOne: relationship) != nil {
                    if case .objectID(let destination) = value { _ = Value.int(Int64(destination.entity.entityCode)).bind(to: sqlite, at: parameter) }
                    else { sqlite3_bind_null(sqlite, parameter) }
                    parameter += 1
                }
            }
            count()
            try step(sqlite, db)
            for attribute in object.entity.attributes where attribute.isTransient { values[attribute.index] = .null }
            result.snapshots[id] = Snapshot(entity: object.entity, version: 1, values: values)
        }

        // 5. Updates of the changed columns, bumping the version.
        for object in request.updated {
            guard let pk = object.id.primaryKey, let layout = layouts[object.entity.rootEntity.entityCode] else { continue }
            var assignments: [String] = []
            var arguments: [DatabaseValue] = []
            var values = object.values
            for index in object.changedIndices {
                let property = object.entity.properties[index]
                if let attribute = property as? AttributeDescription, attribute.isTransient { continue }
                if let relationship = property as? RelationshipDescription, relationship.isToMany { continue }
                let value = resolve(values[index])
                values[index] = value
                assignments.append("\(SQLiteSchema.quote(schema.columnName(for: property))) = ?")
                arguments.append(value.databaseValue)
                if let relationship = property as? RelationshipDescription, let entityColumn = schema.entityColumnName(forToOne: relationship) {
                    assignments.append("\(SQLiteSchema.quote(entityColumn)) = ?")
                    if case .objectID(let destination) = value { arguments.append(destination.entity.entityCode.databaseValue) } else { arguments.append(.null) }
                }
            }
            assignments.append("Z_OPT = Z_OPT + 1")
            arguments.append(pk.databaseValue)
            count()
            let statement = try db.cachedStatement(sql: "UPDATE \(SQLiteSchema.quote(layout.table)) SET \(assignments.joined(separator: ", ")) WHERE Z_PK = ?")
            let sqlite = statement.sqliteStatement
            sqlite3_reset(sqlite)
            for (i, argument) in arguments.enumerated() { _ = argument.bind(to: sqlite, at: CInt(i + 1)) }
            try step(sqlite, db)
            for attribute in object.entity.attributes where attribute.isTransient { values[attribute.index] = .null }
            result.snapshots[object.id] = Snapshot(entity: object.entity, version: (object.expectedVersion ?? 0) + 1, values: values)
        }
        // Versions of updated rows whose expected version was unknown.
        let unknown = request.updated.filter { $0.expectedVersion == nil }.map(\.id)
        if !unknown.isEmpty {
            for (id, snapshot) in try readSnapshots(unknown, store: store, db: db) { result.snapshots[id]?.version = snapshot.version }
        }

        // 6. Join tables.
        for change in request.joinDeletes {
            guard case .joinTable(let table, let sourceColumn, let destinationColumn, _, _) = schema.storage(forToMany: change.relationship),
                  let s = resolve(change.source).primaryKey, let d = resolve(change.destination).primaryKey else { continue }
            count()
            try db.cachedStatement(sql: "DELETE FROM \(SQLiteSchema.quote(table)) WHERE \(sourceColumn) = ? AND \(destinationColumn) = ?")
                .execute(arguments: [s, d])
        }
        for change in request.joinInserts {
            guard case .joinTable(let table, let sourceColumn, let destinationColumn, _, _) = schema.storage(forToMany: change.relationship) else { continue }
            let source = resolve(change.source), destination = resolve(change.destination)
            guard let s = source.primaryKey, let d = destination.primaryKey else { continue }
            let sourceEntityColumn = sourceColumn + "_ENT", destinationEntityColumn = destinationColumn + "_ENT"
            count()
            try db.cachedStatement(sql: """
                INSERT OR IGNORE INTO \(SQLiteSchema.quote(table)) (\(sourceColumn), \(sourceEntityColumn), \(destinationColumn), \(destinationEntityColumn)) \
                VALUES (?, ?, ?, ?)
                """).execute(arguments: [s, source.entity.entityCode, d, destination.entity.entityCode])
        }

        // 7. Orders of ordered to-many relationships.
        for ordering in request.orderings {
            guard let s = resolve(ordering.source).primaryKey else { continue }
            switch schema.storage(forToMany: ordering.relationship) {
            case .foreignKey(let table, _, let orderColumn?):
                let statement = try db.cachedStatement(sql: "UPDATE \(SQLiteSchema.quote(table)) SET \(SQLiteSchema.quote(orderColumn)) = ? WHERE Z_PK = ?")
                for (position, destination) in ordering.destinations.enumerated() {
                    guard let d = resolve(destination).primaryKey else { continue }
                    count()
                    try statement.execute(arguments: [position, d])
                }
            case .joinTable(let table, let sourceColumn, let destinationColumn, _, let orderColumn?):
                let statement = try db.cachedStatement(sql: "UPDATE \(SQLiteSchema.quote(table)) SET \(orderColumn) = ? WHERE \(sourceColumn) = ? AND \(destinationColumn) = ?")
                for (position, destination) in ordering.destinations.enumerated() {
                    guard let d = resolve(destination).primaryKey else { continue }
                    count()
                    try statement.execute(arguments: [position, s, d])
                }
            default:
                break
            }
        }

        // 8. Uniqueness constraints, checked once everything is written.
        try checkUniqueness(request, resolve: resolve, store: store, db: db)
        return result
    }

    /// Runs a statement whose parameters are bound, to completion, and resets it.
    private func step(_ statement: SQLiteStatement, _ db: Database) throws {
        let code = sqlite3_step(statement)
        sqlite3_reset(statement)
        guard code == SQLITE_DONE || code == SQLITE_ROW else {
            throw DatabaseError(resultCode: ResultCode(rawValue: code), message: String(cString: sqlite3_errmsg(db.sqliteConnection)))
        }
    }

    private func checkUniqueness(_ request: StoreSaveRequest, resolve: (ManagedObjectID) -> ManagedObjectID, store: PersistentStore, db: Database) throws {
        var errors: [ObjectGraphError] = []
        var conflicts: [ConstraintConflict] = []
        var saved: Set<Int64> = []
        for object in request.inserted + request.updated { if let pk = resolve(object.id).primaryKey { saved.insert(pk) } }
        for object in request.inserted + request.updated {
            let id = resolve(object.id)
            for (_, e, attributes) in InMemorySave.constraints(of: object.entity)
            where object.changedIndices.isEmpty || attributes.contains(where: { object.changedIndices.contains($0.index) }) {
                let values = attributes.map { object.values[$0.index] }
                if values.contains(where: \.isNull) { continue }
                let codes = e.selfAndDescendants.map { String($0.entityCode) }.joined(separator: ",")
                let conditions = attributes.map { "\(SQLiteSchema.quote(schema.columnName(for: $0))) = ?" }.joined(separator: " AND ")
                count()
                let row = try Row.fetchOne(
                    db.cachedStatement(sql: "SELECT Z_PK, Z_ENT FROM \(SQLiteSchema.quote(e.rootEntity.name)) WHERE Z_ENT IN (\(codes)) AND \(conditions) AND Z_PK <> ? LIMIT 1"),
                    arguments: StatementArguments(values.map(\.databaseValue) + [(id.primaryKey ?? -1).databaseValue]))
                guard let row else { continue }
                let otherKey: Int64 = row[0]
                let otherCode: Int = row[1]
                let described = zip(attributes.map(\.name), values).map { "\($0) = \($1.debugText)" }.joined(separator: ", ")
                errors.append(ObjectGraphError(
                    .constraintConflict, "Another \(e.name) already has \(described)",
                    entityName: e.name, key: attributes.map(\.name).joined(separator: ","), objectID: id))
                let existing = saved.contains(otherKey) || otherCode >= model.entitiesByCode.count
                    ? nil : ManagedObjectID(entity: model.entitiesByCode[otherCode], store: store, primaryKey: otherKey)
                conflicts.append(ConstraintConflict(objectID: object.id, existing: existing))
            }
        }
        if !errors.isEmpty { throw ConstraintConflictError.make(errors, conflicts) }
    }

    private func readSnapshots(_ ids: [ManagedObjectID], store: PersistentStore, db: Database) throws -> [ManagedObjectID: Snapshot] {
        var result: [ManagedObjectID: Snapshot] = [:]
        for id in ids {
            guard let pk = id.primaryKey, let layout = layouts[id.entity.rootEntity.entityCode] else { continue }
            count()
            let statement = try db.cachedStatement(sql: "SELECT \(layout.selectList) FROM \(SQLiteSchema.quote(layout.table)) AS t0 WHERE t0.Z_PK = ?")
            statement.setUncheckedArguments([pk])
            let cursor = try Row.fetchCursor(statement)
            if try cursor.next() != nil, let storeRow = layout.read(statement.sqliteStatement, store: store, model: model) {
                result[id] = storeRow.snapshot
            }
        }
        return result
    }

    func close() throws {
        // Fold the WAL into the database so closing leaves one file (GRDB closes the writer first).
        if !pool.configuration.readonly {
            _ = try? pool.writeWithoutTransaction { try $0.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)") }
        }
        try pool.close()
    }

    /// The writer's `PRAGMA synchronous` (2 = FULL, 1 = NORMAL), for diagnostics and tests.
    func synchronousLevel() throws -> Int {
        try pool.writeWithoutTransaction { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") ?? -1 }
    }

    /// The names of the indexes in the file (for diagnostics and tests).
    func indexNames() throws -> [String] {
        try read("listing indexes") { db in
            try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'index' AND name NOT LIKE 'sqlite_%' ORDER BY name")
        }
    }

    /// Runs `PRAGMA integrity_check`; "ok" when the file is sound.
    func integrityCheck() throws -> String {
        try read("checking integrity") { db in try String.fetchOne(db, sql: "PRAGMA integrity_check") ?? "" }
    }
}
