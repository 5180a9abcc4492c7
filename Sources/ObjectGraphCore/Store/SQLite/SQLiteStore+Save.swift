import Foundation
import GRDB
import GRDBSQLite

// A save: one transaction on the pool's writer, in the steps `apply` numbers.

extension SQLiteStore {
    func allocatePrimaryKeys(for entity: EntityDescription, count n: Int) throws -> Int64 {
        try write("allocating primary keys for \(entity.name)") { db in try allocate(db, root: entity.rootEntity, count: n) }
    }

    /// Reserves keys from the root entity's `Z_PRIMARYKEY.Z_MAX`, as Core Data does (its
    /// sub-entities' rows keep 0). A `Z_MAX` Core Data left at -1, or a missing row, is replaced
    /// by the table's largest key.
    func allocate(_ db: Database, root: EntityDescription, count n: Int) throws -> Int64 {
        count(2)
        let number = schema.entityNumber(for: root)
        var current = try Int64.fetchOne(
            db.cachedStatement(sql: "SELECT Z_MAX FROM \(CoreDataLayout.primaryKeyTable) WHERE Z_ENT = ?"), arguments: [number])
        if current == nil || current! < 0 {
            count()
            let largest = try Int64.fetchOne(db, sql: "SELECT MAX(Z_PK) FROM \(CoreDataLayout.quote(schema.tableName(for: root)))") ?? 0
            current = max(current ?? 0, largest)
        }
        let first = current! + 1
        try db.cachedStatement(sql: "INSERT OR REPLACE INTO \(CoreDataLayout.primaryKeyTable) (Z_ENT, Z_NAME, Z_SUPER, Z_MAX) VALUES (?, ?, 0, ?)")
            .execute(arguments: [number, root.name, first + Int64(n) - 1])
        return first
    }

    func save(_ request: StoreSaveRequest, store: PersistentStore) throws -> StoreSaveResult {
        let files = ExternalFileChanges()
        let result: StoreSaveResult
        let started = sqlLog == nil ? 0 : DispatchTime.now().uptimeNanoseconds
        defer {
            if let sqlLog {
                let ms = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e6
                sqlLog.logger.info(
                    "save: \(request.inserted.count) inserted, \(request.updated.count) updated, \(request.deleted.count) deleted, \(request.joinInserts.count + request.joinDeletes.count) relationship rows — \(String(format: "%.3f", ms)) ms",
                    metadata: ["store": "\(sqlLog.store)"])
            }
        }
        do {
            result = try write("saving") { db in
                try prepareTombstones(db)
                var result = try self.apply(request, store: store, db: db, files: files)
                if historyTracking {
                    let changes = historyChanges(of: request, result: result)
                    result.historyTransactionNumber = try recordHistory(changes, db: db)
                    result.historyChanges = changes.count
                }
                return result
            }
        } catch {
            externalData.remove(files.written)
            throw error
        }
        removeReleasedExternalFiles(files)
        return result
    }

    /// Removes the external files a committed save stopped referring to, unless a row still does
    /// (a batch update gives several rows one file). Best effort: a file left behind is only space.
    private func removeReleasedExternalFiles(_ files: ExternalFileChanges) {
        guard !files.released.isEmpty else { return }
        let unreferenced = (try? pool.read { db in
            try files.released.filter { released in
                try Int.fetchOne(db, sql: """
                    SELECT 1 FROM \(CoreDataLayout.quote(released.table)) WHERE \(CoreDataLayout.quote(released.column)) = ? LIMIT 1
                    """, arguments: [released.reference]) == nil
            }
        }) ?? []
        externalData.remove(unreferenced.compactMap { SQLiteExternalData.fileName(inStored: .data($0.reference)) })
    }

    /// Records the external files the row `pk` of `table` refers to in `attributes`' columns, before
    /// the save deletes the row or changes those columns.
    private func releaseExternalFiles(of attributes: [AttributeDescription], table: String, pk: Int64, files: ExternalFileChanges?, db: Database) throws {
        guard let files, !attributes.isEmpty else { return }
        for attribute in attributes {
            let column = schema.columnName(for: attribute)
            count()
            if let reference = try Data.fetchOne(db, sql: "SELECT \(CoreDataLayout.quote(column)) FROM \(CoreDataLayout.quote(table)) WHERE Z_PK = ?", arguments: [pk]),
               SQLiteExternalData.fileName(inStored: .data(reference)) != nil {
                files.released.append((table, column, reference))
            }
        }
    }

    func apply(_ request: StoreSaveRequest, store: PersistentStore, db: Database, files: ExternalFileChanges? = nil) throws -> StoreSaveResult {
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
                let sql = "SELECT Z_PK, Z_OPT FROM \(layout.table) WHERE Z_PK IN (\(Array(repeating: "?", count: chunk.count).joined(separator: ",")))"
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
            if usesExternalStorage {
                try releaseExternalFiles(of: object.entity.attributes.filter(\.usesExternalStorage), table: layout.tableName, pk: pk, files: files, db: db)
            }
            count()
            try db.cachedStatement(sql: "DELETE FROM \(layout.table) WHERE Z_PK = ?").execute(arguments: [pk])
            for relationship in object.entity.relationships where relationship.usesJoinTable {
                count()
                switch schema.storage(forToMany: relationship) {
                case .joinTable(let table, let sourceColumn, _, _, _):
                    try db.cachedStatement(sql: "DELETE FROM \(CoreDataLayout.quote(table)) WHERE \(CoreDataLayout.quote(sourceColumn)) = ?")
                        .execute(arguments: [pk])
                case .foreignKey(let table, let column, _):
                    // A to-many without an inverse: its hidden foreign key in the destinations' rows.
                    try db.cachedStatement(sql: "UPDATE \(CoreDataLayout.quote(table)) SET \(CoreDataLayout.quote(column)) = NULL WHERE \(CoreDataLayout.quote(column)) = ?")
                        .execute(arguments: [pk])
                }
            }
        }

        // 3b. Unique values updated objects give up, cleared first: the UNIQUE indexes check each
        //     statement, so two objects that exchange values, or an insert that takes a value an
        //     update gives up, would otherwise collide halfway through the save. NULLs never collide;
        //     step 5 writes the new values, and step 8 checks the result.
        try releaseUniqueValues(request, db: db)

        // 4. Inserts.
        for object in request.inserted {
            let id = resolve(object.id)
            guard let pk = id.primaryKey, let layout = layouts[object.entity.rootEntity.entityCode]?.entities[schema.entityNumber(for: object.entity)] else { continue }
            let statement = try db.cachedStatement(sql: layout.insertSQL)
            let sqlite = statement.sqliteStatement
            sqlite3_reset(sqlite)
            _ = Value.int(pk).bind(to: sqlite, at: 1)
            _ = Value.int(Int64(schema.entityNumber(for: object.entity))).bind(to: sqlite, at: 2)
            _ = Value.int(1).bind(to: sqlite, at: 3)
            var parameter: CInt = 4
            var values = object.values
            for property in layout.insertProperties {
                let value = resolve(values[property.index])
                values[property.index] = value
                try bind(try stored(value, for: property, files: files), to: sqlite, at: parameter, db)
                parameter += 1
                if let relationship = property as? RelationshipDescription, schema.entityColumnName(forToOne: relationship) != nil {
                    if case .objectID(let destination) = value { _ = Value.int(Int64(schema.entityNumber(for: destination.entity))).bind(to: sqlite, at: parameter) }
                    else { sqlite3_bind_null(sqlite, parameter) }
                    parameter += 1
                }
            }
            count()
            try stepReportingUniqueIndexes(sqlite, db, inserted: object, resolve: resolve, store: store)
            for attribute in object.entity.attributes where attribute.isTransient { values[attribute.index] = .null }
            result.snapshots[id] = Snapshot(entity: object.entity, version: 1, values: values)
        }

        // 5. Updates of the changed columns, bumping the version.
        for object in request.updated {
            guard let pk = object.id.primaryKey, let layout = layouts[object.entity.rootEntity.entityCode] else { continue }
            var assignments: [String] = []
            var arguments: [Value] = []
            var values = object.values
            if usesExternalStorage {
                let changedExternal = object.entity.attributes.filter {
                    $0.usesExternalStorage && (object.changedIndices.isEmpty || object.changedIndices.contains($0.index))
                }
                try releaseExternalFiles(of: changedExternal, table: layout.tableName, pk: pk, files: files, db: db)
            }
            for index in object.changedIndices {
                let property = object.entity.properties[index]
                if let attribute = property as? AttributeDescription, attribute.isTransient { continue }
                if let relationship = property as? RelationshipDescription, relationship.isToMany { continue }
                let value = resolve(values[index])
                values[index] = value
                assignments.append("\(CoreDataLayout.quote(schema.columnName(for: property))) = ?")
                arguments.append(try stored(value, for: property, files: files))
                if let relationship = property as? RelationshipDescription, let entityColumn = schema.entityColumnName(forToOne: relationship) {
                    assignments.append("\(CoreDataLayout.quote(entityColumn)) = ?")
                    if case .objectID(let destination) = value { arguments.append(.int(Int64(schema.entityNumber(for: destination.entity)))) } else { arguments.append(.null) }
                }
            }
            assignments.append("Z_OPT = Z_OPT + 1")
            arguments.append(.int(pk))
            count()
            let statement = try db.cachedStatement(sql: "UPDATE \(layout.table) SET \(assignments.joined(separator: ", ")) WHERE Z_PK = ?")
            let sqlite = statement.sqliteStatement
            sqlite3_reset(sqlite)
            for (i, argument) in arguments.enumerated() { try bind(argument, to: sqlite, at: CInt(i + 1), db) }
            try stepReportingUniqueIndexes(sqlite, db, updated: object, resolve: resolve, store: store)
            for attribute in object.entity.attributes where attribute.isTransient { values[attribute.index] = .null }
            result.snapshots[object.id] = Snapshot(entity: object.entity, version: (object.expectedVersion ?? 0) + 1, values: values)
        }
        // Versions of updated rows whose expected version was unknown.
        let unknown = request.updated.filter { $0.expectedVersion == nil }.map(\.id)
        if !unknown.isEmpty {
            for (id, snapshot) in try readSnapshots(unknown, store: store, db: db) { result.snapshots[id]?.version = snapshot.version }
        }

        // 6. Join tables (and the hidden foreign keys of to-many relationships without an inverse).
        for change in request.joinDeletes {
            guard let s = resolve(change.source).primaryKey, let d = resolve(change.destination).primaryKey else { continue }
            count()
            switch schema.storage(forToMany: change.relationship) {
            case .joinTable(let table, let sourceColumn, let destinationColumn, _, _):
                try db.cachedStatement(sql: """
                    DELETE FROM \(CoreDataLayout.quote(table)) WHERE \(CoreDataLayout.quote(sourceColumn)) = ? AND \(CoreDataLayout.quote(destinationColumn)) = ?
                    """).execute(arguments: [s, d])
            case .foreignKey(let table, let column, _):
                try db.cachedStatement(sql: "UPDATE \(CoreDataLayout.quote(table)) SET \(CoreDataLayout.quote(column)) = NULL WHERE Z_PK = ? AND \(CoreDataLayout.quote(column)) = ?")
                    .execute(arguments: [d, s])
            }
        }
        for change in request.joinInserts {
            guard let s = resolve(change.source).primaryKey, let d = resolve(change.destination).primaryKey else { continue }
            count()
            switch schema.storage(forToMany: change.relationship) {
            case .joinTable(let table, let sourceColumn, let destinationColumn, _, _):
                try db.cachedStatement(sql: """
                    INSERT OR IGNORE INTO \(CoreDataLayout.quote(table)) (\(CoreDataLayout.quote(sourceColumn)), \(CoreDataLayout.quote(destinationColumn))) VALUES (?, ?)
                    """).execute(arguments: [s, d])
            case .foreignKey(let table, let column, _):
                try db.cachedStatement(sql: "UPDATE \(CoreDataLayout.quote(table)) SET \(CoreDataLayout.quote(column)) = ? WHERE Z_PK = ?")
                    .execute(arguments: [s, d])
            }
        }

        // 7. Orders of ordered to-many relationships.
        for ordering in request.orderings {
            guard let s = resolve(ordering.source).primaryKey else { continue }
            switch schema.storage(forToMany: ordering.relationship) {
            case .foreignKey(let table, _, let orderColumn?):
                let statement = try db.cachedStatement(sql: "UPDATE \(CoreDataLayout.quote(table)) SET \(CoreDataLayout.quote(orderColumn)) = ? WHERE Z_PK = ?")
                for (position, destination) in ordering.destinations.enumerated() {
                    guard let d = resolve(destination).primaryKey else { continue }
                    count()
                    try statement.execute(arguments: [position, d])
                }
            case .joinTable(let table, let sourceColumn, let destinationColumn, _, let orderColumn?):
                let statement = try db.cachedStatement(sql: """
                    UPDATE \(CoreDataLayout.quote(table)) SET \(CoreDataLayout.quote(orderColumn)) = ? \
                    WHERE \(CoreDataLayout.quote(sourceColumn)) = ? AND \(CoreDataLayout.quote(destinationColumn)) = ?
                    """)
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

    /// The value as the column holds it: an attribute that allows external storage keeps Core
    /// Data's marker before its value, or a reference to the file its value is written to.
    @inline(__always)
    func stored(_ value: Value, for property: PropertyDescription, files: ExternalFileChanges? = nil) throws -> Value {
        guard usesExternalStorage, let attribute = property as? AttributeDescription, attribute.usesExternalStorage else { return value }
        let stored = try externalData.encode(value, attribute: attribute)
        if let files, let name = SQLiteExternalData.fileName(inStored: stored) { files.written.append(name) }
        return stored
    }

    /// Binds a value, or throws when SQLite refuses it (too big): a parameter that failed to bind
    /// would keep the previous row's value.
    @inline(__always)
    func bind(_ value: Value, to statement: SQLiteStatement, at index: CInt, _ db: Database) throws {
        let code = value.bind(to: statement, at: index)
        guard code == SQLITE_OK else {
            throw DatabaseError(resultCode: ResultCode(rawValue: code), message: String(cString: sqlite3_errmsg(db.sqliteConnection)))
        }
    }

    /// Runs an object's INSERT or UPDATE. A store Core Data wrote enforces its uniqueness
    /// constraints with UNIQUE indexes, which refuse the row before the save's own check runs: the
    /// refusal is reported as that check reports it (a constraint conflict naming the other object).
    private func stepReportingUniqueIndexes(
        _ statement: SQLiteStatement, _ db: Database, inserted: SavedObject? = nil, updated: SavedObject? = nil,
        resolve: (ManagedObjectID) -> ManagedObjectID, store: PersistentStore
    ) throws {
        do {
            try step(statement, db)
        } catch let error as DatabaseError where error.resultCode.primaryResultCode == .SQLITE_CONSTRAINT {
            var single = StoreSaveRequest()
            if let inserted { single.inserted = [inserted] }
            if let updated { single.updated = [updated] }
            try checkUniqueness(single, resolve: resolve, store: store, db: db)
            throw error
        }
    }

    /// Sets to NULL the constrained columns that updated objects change (``StoreUniqueness/valuesToRelease(in:)``).
    private func releaseUniqueValues(_ request: StoreSaveRequest, db: Database) throws {
        for (object, attributes) in StoreUniqueness.valuesToRelease(in: request) {
            guard let pk = object.id.primaryKey else { continue }
            let columns = Set(attributes.map { schema.columnName(for: $0) }).sorted()
            count()
            try db.cachedStatement(sql: """
                UPDATE \(CoreDataLayout.quote(schema.tableName(for: object.entity))) SET \(columns.map { "\(CoreDataLayout.quote($0)) = NULL" }.joined(separator: ", ")) WHERE Z_PK = ?
                """).execute(arguments: [pk])
        }
    }

    /// Runs a statement whose parameters are bound, to completion, and resets it.
    func step(_ statement: SQLiteStatement, _ db: Database) throws {
        let code = sqlite3_step(statement)
        sqlite3_reset(statement)
        guard code == SQLITE_DONE || code == SQLITE_ROW else {
            throw DatabaseError(resultCode: ResultCode(rawValue: code), message: String(cString: sqlite3_errmsg(db.sqliteConnection)))
        }
    }

    private func checkUniqueness(_ request: StoreSaveRequest, resolve: (ManagedObjectID) -> ManagedObjectID, store: PersistentStore, db: Database) throws {
        try StoreUniqueness.check(request, resolve: resolve, store: store, schema: schema) { e, attributes, values, excluding in
            let codes = e.selfAndDescendants.map { String(schema.entityNumber(for: $0)) }.joined(separator: ",")
            let conditions = attributes.map { "\(CoreDataLayout.quote(schema.columnName(for: $0))) = ?" }.joined(separator: " AND ")
            count()
            // Bound as stored (a string with a NUL, a NaN), so a value matches the column holding it.
            let statement = try db.cachedStatement(
                sql: "SELECT Z_PK, Z_ENT FROM \(CoreDataLayout.quote(schema.tableName(for: e))) WHERE Z_ENT IN (\(codes)) AND \(conditions) AND Z_PK <> ? LIMIT 1")
            let sqlite = statement.sqliteStatement
            sqlite3_reset(sqlite)
            for (i, value) in values.enumerated() { try bind(value, to: sqlite, at: CInt(i + 1), db) }
            _ = Value.int(excluding).bind(to: sqlite, at: CInt(values.count + 1))
            let code = sqlite3_step(sqlite)
            defer { sqlite3_reset(sqlite) }
            guard code == SQLITE_ROW else {
                if code == SQLITE_DONE { return nil }
                throw DatabaseError(resultCode: ResultCode(rawValue: code), message: String(cString: sqlite3_errmsg(db.sqliteConnection)))
            }
            return (sqlite3_column_int64(sqlite, 0), Int(sqlite3_column_int64(sqlite, 1)))
        }
    }

    private func readSnapshots(_ ids: [ManagedObjectID], store: PersistentStore, db: Database) throws -> [ManagedObjectID: Snapshot] {
        var result: [ManagedObjectID: Snapshot] = [:]
        for id in ids {
            guard let pk = id.primaryKey, let layout = layouts[id.entity.rootEntity.entityCode] else { continue }
            count()
            let statement = try db.cachedStatement(sql: "SELECT \(layout.selectList) FROM \(layout.table) AS t0 WHERE t0.Z_PK = ?")
            statement.setUncheckedArguments([pk])
            let cursor = try Row.fetchCursor(statement)
            if try cursor.next() != nil, let storeRow = try layout.read(statement.sqliteStatement, store: store, externalData: externalData) {
                result[id] = storeRow.snapshot
            }
        }
        return result
    }
}
