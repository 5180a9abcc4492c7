import Foundation
import GRDB
import GRDBSQLite

// Before a store opens a file for writing (GRDB's pool switches it to WAL and writes to check it
// can), the file is read through a connection that cannot write: refusing a file never changes it.

extension SQLiteStore {
    /// Refuses, without touching it, a file that exists, is not empty and is not an SQLite database.
    static func checkHeader(of url: URL) throws {
        guard let handle = try? FileHandle(forReadingFrom: url) else { return }
        defer { try? handle.close() }
        let header = (try? handle.read(upToCount: 16)) ?? Data()
        if header.isEmpty { return }
        if header != Data("SQLite format 3\0".utf8) {
            throw ObjectGraphError(.notADatabase, "The file at \(url.path) is not an SQLite database; it was left as it was", url: url)
        }
    }

    /// What an existing store file holds that its layout depends on.
    struct ExistingFile {
        /// The decoded `Z_PLIST`.
        var metadata: [String: any Sendable]
        /// `Z_PRIMARYKEY`: each entity's `Z_ENT`, by name.
        var entityNumbers: [String: Int]
        /// Every table's columns, in order.
        var columns: [String: [String]]
        /// Core Data's persistent-history tables, when the store has them.
        var historyTables: [String]
    }

    /// Checks an existing SQLite file through a read-only connection: it must be a Core Data
    /// store (written by Apple's Core Data or by ObjectGraph) whose version hashes are `model`'s,
    /// or an SQLite database with no tables (nil is returned: it becomes one), and its metadata
    /// and tables must be readable. Throws `.notADatabase` or `.incompatibleModel`, naming the
    /// file, and leaves it as it was.
    ///
    /// The connection opens the file `immutable` (no lock, no -wal or -shm file created) unless a
    /// -wal file is beside it, whose content must then be read too.
    static func inspect(_ url: URL, model: ManagedObjectModel) throws -> ExistingFile? {
        try withReadOnlyConnection(to: url) { rows in try inspect(url, model: model, rows: rows) }
    }

    /// Runs `body` with a function running a query on a read-only connection to the file at `url`
    /// (`immutable` unless a -wal file is beside it) and returning its rows.
    static func withReadOnlyConnection<T>(to url: URL, _ body: (_ rows: (String) throws -> [[Value]]) throws -> T) throws -> T {
        let path = url.path
        let hasWAL = FileManager.default.fileExists(atPath: path + "-wal")
        let encoded = path.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? path
        let uri = "file:\(encoded)?" + (hasWAL ? "mode=ro" : "immutable=1")
        var connection: OpaquePointer?
        defer { sqlite3_close_v2(connection) }
        func failure(_ code: CInt) -> any Error {
            let message = connection.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(code))
            return translate(DatabaseError(resultCode: ResultCode(rawValue: code), message: message), url: url, while: "checking the file")
        }
        let opened = sqlite3_open_v2(uri, &connection, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, nil)
        guard opened == SQLITE_OK, let connection else { throw failure(opened) }
        func rows(_ sql: String) throws -> [[Value]] {
            var statement: SQLiteStatement?
            let prepared = sqlite3_prepare_v2(connection, sql, -1, &statement, nil)
            defer { sqlite3_finalize(statement) }
            guard prepared == SQLITE_OK, let statement else { throw failure(prepared) }
            var result: [[Value]] = []
            while true {
                let code = sqlite3_step(statement)
                if code == SQLITE_DONE { return result }
                guard code == SQLITE_ROW else { throw failure(code) }
                result.append((0..<sqlite3_column_count(statement)).map { column in
                    switch sqlite3_column_type(statement, column) {
                    case SQLITE_NULL: .null
                    case SQLITE_INTEGER: .int(sqlite3_column_int64(statement, column))
                    case SQLITE_BLOB: Value(statement, column: column, type: .binaryData)
                    default: .string(Value.text(statement, column))
                    }
                })
            }
        }
        return try body(rows)
    }

    private static func inspect(_ url: URL, model: ManagedObjectModel, rows: (String) throws -> [[Value]]) throws -> ExistingFile? {
        let path = url.path
        func text(_ value: Value) -> String { if case .string(let s) = value { s } else { "" } }

        let tables = try rows("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name").map { text($0[0]) }
        if tables.isEmpty { return nil }
        guard tables.contains(CoreDataLayout.metadataTable) else {
            throw ObjectGraphError(
                .incompatibleModel,
                "The file at \(path) is an SQLite database with tables (\(tables.prefix(3).joined(separator: ", "))), but not a Core Data or ObjectGraph store; it was left as it was",
                url: url)
        }
        let row = try rows("SELECT Z_PLIST, Z_UUID FROM \(CoreDataLayout.metadataTable) ORDER BY Z_VERSION LIMIT 1").first
        guard case .data(let data)? = row?.first, var metadata = CoreDataMetadata.decode(data) else {
            throw ObjectGraphError(
                .incompatibleModel, "The store at \(path) has no readable metadata (Z_METADATA.Z_PLIST); it was left as it was", url: url)
        }
        // Core Data keeps the store's UUID beside the property list, and adds it to the metadata it reads.
        if metadata[PersistentStore.metadataIdentifierKey] == nil, let uuid = row.map({ text($0[1]) }), !uuid.isEmpty {
            metadata[PersistentStore.metadataIdentifierKey] = uuid
        }
        guard let hashes = CoreDataMetadata.versionHashes(in: metadata) else {
            throw ObjectGraphError(
                .incompatibleModel,
                "The store at \(path) has no model version hashes in its metadata, so the model it was written with is unknown; it was left as it was",
                url: url)
        }
        if let reason = CoreDataMetadata.incompatibility(of: hashes, with: model) {
            throw ObjectGraphError(
                .incompatibleModel,
                "The store at \(path) was written with another model (\(reason)); open it with the model version that wrote it, or migrate it",
                url: url)
        }
        var numbers: [String: Int] = [:]
        if tables.contains(CoreDataLayout.primaryKeyTable) {
            let entities = try rows("SELECT Z_ENT, Z_NAME FROM \(CoreDataLayout.primaryKeyTable)").compactMap { row -> (number: Int64, name: String)? in
                if row.count == 2, case .int(let n) = row[0] { (n, text(row[1])) } else { nil }
            }
            numbers = try CoreDataLayout.entityNumbers(primaryKeyRows: entities, store: url)
        }
        var columns: [String: [String]] = [:]
        for table in tables {
            columns[table] = try rows("SELECT name FROM pragma_table_info(\(Value.quoteLiteral(table)))").map { text($0[0]) }
            // Read the first row of every table, so a damaged file is refused now rather than at a fetch.
            _ = try rows("SELECT 1 FROM \(CoreDataLayout.quote(table)) LIMIT 1")
        }
        let history = tables.filter { ["ATRANSACTION", "ACHANGE", "ATRANSACTIONSTRING"].contains($0) }
        return ExistingFile(metadata: metadata, entityNumbers: numbers, columns: columns, historyTables: history)
    }
}

extension Value {
    /// An SQL string literal (for names read from the file itself, never for user values).
    static func quoteLiteral(_ text: String) -> String {
        "'" + text.replacingOccurrences(of: "'", with: "''") + "'"
    }
}
