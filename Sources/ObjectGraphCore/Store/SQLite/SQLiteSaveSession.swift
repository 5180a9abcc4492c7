import Foundation
import GRDB
import GRDBSQLite

/// A save's statements on the SQLite store's writer, inside its transaction: cached statements,
/// bound through SQLite's C API; large binary values kept as Core Data's external storage keeps them.
struct SQLiteSaveSession: RelationalSession {
    let store: SQLiteStore
    let persistentStore: PersistentStore
    let db: Database
    /// The external files the save writes and releases (nil: none are tracked).
    let files: ExternalFileChanges?

    var dialect: SQLDialect { .sqlite }

    func table(_ name: String) -> String { CoreDataLayout.quote(name) }

    func allocateKeys(root: EntityDescription, count: Int) throws -> Int64 {
        try store.allocate(db, root: root, count: count)
    }

    /// The cached statement for `sql`, reset, with `arguments` bound.
    private func prepared(_ sql: String, _ arguments: [SQLArgument]) throws -> SQLiteStatement {
        let statement = try db.cachedStatement(sql: sql).sqliteStatement
        sqlite3_reset(statement)
        for (i, argument) in arguments.enumerated() { try store.bind(argument.value, to: statement, at: CInt(i + 1), db) }
        return statement
    }

    func execute(_ sql: String, _ arguments: [SQLArgument], entity: EntityDescription?) throws {
        try store.step(try prepared(sql, arguments), db)
    }

    func integerPairs(_ sql: String, _ arguments: [SQLArgument], entity: EntityDescription?) throws -> [(Int64, Int64?)] {
        let statement = try prepared(sql, arguments)
        defer { sqlite3_reset(statement) }
        var rows: [(Int64, Int64?)] = []
        while true {
            let code = sqlite3_step(statement)
            if code == SQLITE_DONE { return rows }
            guard code == SQLITE_ROW else {
                throw DatabaseError(resultCode: ResultCode(rawValue: code), message: String(cString: sqlite3_errmsg(db.sqliteConnection)))
            }
            let second = sqlite3_column_type(statement, 1) == SQLITE_NULL ? nil : sqlite3_column_int64(statement, 1)
            rows.append((sqlite3_column_int64(statement, 0), second))
        }
    }

    /// A store Core Data wrote enforces its uniqueness constraints with UNIQUE indexes, which refuse
    /// a row before the save's own check runs: the refusal is reported as that check reports it.
    func write(
        _ sql: String, _ arguments: [SQLArgument], entity: EntityDescription, inserting: Bool, constrained: Bool, expectedVersion: Int64?,
        reportRefusal: () throws -> Void
    ) throws -> Int64? {
        do {
            try store.step(try prepared(sql, arguments), db)
        } catch let error as DatabaseError where error.resultCode.primaryResultCode == .SQLITE_CONSTRAINT {
            try reportRefusal()
            throw error
        }
        return nil
    }

    func snapshots(_ ids: [ManagedObjectID]) throws -> [ManagedObjectID: Snapshot] {
        try store.readSnapshots(ids, store: persistentStore, db: db)
    }

    func columnValue(_ value: Value, for property: PropertyDescription) throws -> Value {
        try store.stored(value, for: property, files: files)
    }

    func willOverwrite(_ object: SavedObject, deleting: Bool, in table: TableLayout, key: Int64) throws {
        guard store.usesExternalStorage else { return }
        let attributes = object.entity.attributes.filter {
            $0.usesExternalStorage && (deleting || object.changedIndices.isEmpty || object.changedIndices.contains($0.index))
        }
        try store.releaseExternalFiles(of: attributes, table: table.tableName, pk: key, files: files, db: db)
    }

    func count(_ n: Int) { store.count(n) }
}
