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
    let pool: DatabasePool
    let layouts: [Int: SQLiteTableLayout]  // by root entity code
    private let statements = Atomic<Int>(0)

    var statementCount: Int { statements.load(ordering: .relaxed) }

    init(url: URL, model: ManagedObjectModel, readOnly: Bool, durability: StoreDurability,
         maximumReaderCount: Int, busyTimeout: Double) throws {
        guard url.isFileURL else {
            throw ObjectGraphError(
                .unsupported, "Cannot add a \(StoreType.sqlite) store at \(url.absoluteString): it is not a file URL, and an \(StoreType.sqlite) store is a local file",
                url: url)
        }
        self.url = url
        self.model = model
        self.schema = SQLiteSchema(model: model)
        let path = url.path
        // Everything that can refuse the file reads it first, through a connection that cannot write.
        try Self.checkHeader(of: url)
        let isExisting = ((try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0) > 0
        if isExisting { try Self.inspect(url, model: model) }
        if !readOnly {
            let directory = url.deletingLastPathComponent().path
            var isDirectory: ObjCBool = false
            if !FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory) || !isDirectory.boolValue {
                throw ObjectGraphError(.io, "Cannot create the SQLite store at \(path): the folder \(directory) does not exist", url: url)
            }
            if FileManager.default.fileExists(atPath: path) {
                if !StoreFiles.isWritable(path) {
                    throw ObjectGraphError(.readOnly, "The SQLite store at \(path) is read-only (its permissions forbid writing); add it with the read-only option", url: url)
                }
            } else if !StoreFiles.isWritable(directory) {
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

    func count(_ n: Int = 1) { statements.add(n, ordering: .relaxed) }

    func read<T>(_ doing: String, _ body: (Database) throws -> T) throws -> T {
        do { return try pool.read(body) } catch { throw Self.translate(error, url: url, while: doing) }
    }

    /// A read of one statement: SQLite runs a lone statement in its own implicit transaction, so the
    /// explicit one `read` opens (BEGIN, COMMIT) would only add two statements to every fault.
    func readOne<T>(_ doing: String, _ body: (Database) throws -> T) throws -> T {
        do { return try pool.unsafeRead(body) } catch { throw Self.translate(error, url: url, while: doing) }
    }

    func write<T>(_ doing: String, _ body: (Database) throws -> T) throws -> T {
        do { return try pool.write(body) } catch { throw Self.translate(error, url: url, while: doing) }
    }

    static let chunkSize = 500

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
