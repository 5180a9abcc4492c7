import Foundation
import GRDB
import GRDBSQLite

// A save: one transaction on the pool's writer, running the steps of a `SavePlan`.

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
                    let changes = HistoryRecording.changes(of: request, result: result)
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
    func releaseExternalFiles(of attributes: [AttributeDescription], table: String, pk: Int64, files: ExternalFileChanges?, db: Database) throws {
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

    /// Runs a save's statements in the transaction `db` is in (``SavePlan``).
    func apply(_ request: StoreSaveRequest, store: PersistentStore, db: Database, files: ExternalFileChanges? = nil) throws -> StoreSaveResult {
        try SavePlan(request, schema: schema, tables: layouts).run(on: SQLiteSaveSession(store: self, persistentStore: store, db: db, files: files), store: store)
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

    /// Runs a statement whose parameters are bound, to completion, and resets it.
    func step(_ statement: SQLiteStatement, _ db: Database) throws {
        let code = sqlite3_step(statement)
        sqlite3_reset(statement)
        guard code == SQLITE_DONE || code == SQLITE_ROW else {
            throw DatabaseError(resultCode: ResultCode(rawValue: code), message: String(cString: sqlite3_errmsg(db.sqliteConnection)))
        }
    }

    func readSnapshots(_ ids: [ManagedObjectID], store: PersistentStore, db: Database) throws -> [ManagedObjectID: Snapshot] {
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
