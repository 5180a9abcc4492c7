import Foundation
import GRDB
import GRDBSQLite
import Synchronization

/// The SQLite store: a GRDB `DatabasePool` in WAL mode (one writer, concurrent readers), over a
/// file in Core Data's own layout (``CoreDataLayout``): a store Apple's Core Data wrote opens with the
/// model that wrote it, and a store created here is one Core Data opens.
///
/// Fetches and fault fulfilment read through the pool's readers and run concurrently with each
/// other and with a save; saves are serialized by the pool's writer, each in one transaction.
final class SQLiteStore: StoreBackend {
    let identifier: String
    let metadata: [String: any Sendable]
    let url: URL
    let schema: CoreDataLayout
    let model: ManagedObjectModel
    let pool: DatabasePool
    let layouts: [Int: TableLayout]  // by root entity code
    /// Where values of attributes that allow external storage are kept when they are large.
    let externalData: SQLiteExternalData
    /// Whether any attribute of the model uses external storage (the save path skips it otherwise).
    let usesExternalStorage: Bool
    /// How many SQL statements the store has run (``StoreStatistics/sqlStatements``).
    let statements = StatementCounter()
    /// Whether saves and batch requests are recorded in persistent history.
    let historyTracking: Bool
    /// The SQL debug log, when asked for (nil: nothing traced).
    let sqlLog: SQLDebugLog?
    /// The SQL of the temporary triggers that keep tombstones, when history is tracked and some
    /// entity preserves attributes on deletion.
    let tombstoneSQL: String?
    /// The numbers of the history transactions this store object wrote (its coordinator's own
    /// commits), until the remote-change watcher has passed them; nil while no watcher runs.
    let ownTransactions = Protected<Set<Int64>?>(nil)
    /// The keys of ATRANSACTIONSTRING's committed strings this store has looked up.
    let internedStrings = Protected<[String: Int64]>([:])

    var statementCount: Int { statements.value }

    init(url: URL, model: ManagedObjectModel, readOnly: Bool, durability: StoreDurability,
         maximumReaderCount: Int, busyTimeout: Double, historyTracking: Bool = false, sqlLog: SQLDebugLog? = nil) throws {
        try StoreFiles.require(url.isFileURL, url: url, for: .sqlite, "it is not a file URL, and an \(StoreType.sqlite) store is a local file")
        self.url = url
        self.model = model
        self.externalData = SQLiteExternalData(storeURL: url)
        self.usesExternalStorage = model.entities.contains { $0.attributes.contains(where: \.usesExternalStorage) }
        let path = url.path
        // Everything that can refuse the file reads it first, through a connection that cannot write.
        try Self.checkHeader(of: url)
        let isExisting = ((try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0) > 0
        let existing = isExisting ? try Self.inspect(url, model: model) : nil
        if let existing, !existing.historyTables.isEmpty, !readOnly, !historyTracking {
            // Core Data's rule: a store with history opened without tracking would hide changes from history readers.
            throw ObjectGraphError(
                .readOnly,
                "The store at \(path) records persistent history (\(existing.historyTables.joined(separator: ", "))): add it with the \(PersistentStoreOption.persistentHistoryTracking) option (or read-only), or a save would hide its changes from the app's history readers",
                url: url)
        }
        self.historyTracking = historyTracking
        self.schema = existing.map { CoreDataLayout(model: model, entityNumbers: $0.entityNumbers, existingColumns: $0.columns) }
            ?? CoreDataLayout(model: model)
        self.tombstoneSQL = historyTracking ? Self.tombstoneTriggerSQL(schema: schema) : nil
        try Self.checkFiles(at: url, readOnly: readOnly)
        self.sqlLog = sqlLog
        pool = try Self.openPool(
            at: url, readOnly: readOnly, durability: durability, maximumReaderCount: maximumReaderCount, busyTimeout: busyTimeout, sqlLog: sqlLog)
        layouts = TableLayout.layouts(of: schema, dialect: .sqlite)
        let metadata = try Self.prepare(pool, at: url, existing: existing, readOnly: readOnly, historyTracking: historyTracking, schema: schema)
        self.metadata = metadata
        self.identifier = metadata[PersistentStore.metadataIdentifierKey] as? String ?? UUID().uuidString
    }

    /// Refuses a store that cannot be opened as asked: a missing folder, or a file or folder that
    /// is not writable (unless read-only), or a missing file (read-only).
    private static func checkFiles(at url: URL, readOnly: Bool) throws {
        let path = url.path
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
    }

    /// The pool over the file, each connection with ObjectGraph's SQL functions and the durability
    /// asked for.
    private static func openPool(
        at url: URL, readOnly: Bool, durability: StoreDurability, maximumReaderCount: Int, busyTimeout: Double, sqlLog: SQLDebugLog?
    ) throws -> DatabasePool {
        let path = url.path
        let pool: DatabasePool
        var configuration = Configuration()
        configuration.readonly = readOnly
        configuration.maximumReaderCount = max(1, maximumReaderCount)
        configuration.busyMode = .timeout(busyTimeout)
        configuration.label = "ObjectGraph.SQLiteStore"
        let synchronous = durability == .full ? "FULL" : "NORMAL"
        configuration.prepareDatabase { db in
            SQLiteFunctions.register(in: db)
            sqlLog?.install(on: db)
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
        return pool
    }

    /// The store's metadata: an existing store's (with the model's declared indexes added to a
    /// store ObjectGraph wrote), or a new store's tables created; history tables where asked for.
    private static func prepare(
        _ pool: DatabasePool, at url: URL, existing: ExistingFile?, readOnly: Bool, historyTracking: Bool, schema: CoreDataLayout
    ) throws -> [String: any Sendable] {
        let path = url.path
        let metadata: [String: any Sendable]
        do {
            if let existing {
                metadata = existing.metadata
                // Indexes the model declares, added to stores ObjectGraph wrote (never to Apple's, whose
                // own migrations would then find names they mean to create).
                if !readOnly && existing.metadata[PersistentStore.metadataModelHashKey] != nil {
                    try pool.write { db in for statement in schema.userIndexStatements() { try db.execute(sql: statement) } }
                }
            } else if readOnly {
                throw ObjectGraphError(.incompatibleModel, "The file at \(path) is an SQLite database, but not a Core Data store", url: url)
            } else {
                metadata = try pool.write { db -> [String: any Sendable] in
                    let tables = try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
                    if !tables.isEmpty {
                        throw ObjectGraphError(
                            .incompatibleModel,
                            "The file at \(path) gained tables (\(tables.prefix(3).joined(separator: ", "))) while it was being opened; add it again",
                            url: url)
                    }
                    return try Self.create(in: db, schema: schema)
                }
            }
            if historyTracking && !readOnly {
                try pool.write { db in try Self.createHistoryTables(in: db, schema: schema) }
            }
        } catch let error as ObjectGraphError {
            try? pool.close()
            throw error
        } catch {
            try? pool.close()
            throw Self.translate(error, url: url, while: "opening the SQLite store")
        }
        return metadata
    }

    /// Creates Core Data's tables for `schema` in an empty database: `Z_PRIMARYKEY` (every entity,
    /// `Z_MAX` 0), `Z_METADATA` (one row, the metadata as a binary property list), `Z_MODELCACHE`
    /// (one row, the compiled model as Core Data caches it), the entity and join tables and their
    /// indexes. Returns the metadata.
    private static func create(in db: Database, schema: CoreDataLayout) throws -> [String: any Sendable] {
        try db.execute(sql: "CREATE TABLE \(CoreDataLayout.primaryKeyTable) (Z_ENT INTEGER PRIMARY KEY, Z_NAME VARCHAR, Z_SUPER INTEGER, Z_MAX INTEGER)")
        try db.execute(sql: "CREATE TABLE \(CoreDataLayout.metadataTable) (Z_VERSION INTEGER PRIMARY KEY, Z_UUID VARCHAR(255), Z_PLIST BLOB)")
        try db.execute(sql: "CREATE TABLE \(CoreDataLayout.modelCacheTable) (Z_CONTENT BLOB)")
        try db.execute(
            sql: "INSERT INTO \(CoreDataLayout.modelCacheTable) (Z_CONTENT) VALUES (?)",
            arguments: [try CompiledModelWriter.modelCacheContent(schema.model)])
        for statement in schema.createStatements() + schema.userIndexStatements() { try db.execute(sql: statement) }
        for (number, name, superentity) in schema.primaryKeyRows() {
            try db.execute(
                sql: "INSERT INTO \(CoreDataLayout.primaryKeyTable) (Z_ENT, Z_NAME, Z_SUPER, Z_MAX) VALUES (?, ?, ?, 0)",
                arguments: [number, name, superentity])
        }
        let identifier = UUID().uuidString
        var metadata = CoreDataMetadata.new(model: schema.model)
        try db.execute(
            sql: "INSERT INTO \(CoreDataLayout.metadataTable) (Z_VERSION, Z_UUID, Z_PLIST) VALUES (1, ?, ?)",
            arguments: [identifier, try CoreDataMetadata.encode(metadata)])
        metadata[PersistentStore.metadataIdentifierKey] = identifier
        return metadata
    }

    /// Turns a GRDB or SQLite error into an ObjectGraphError that says what and where.
    static func translate(_ error: any Error, url: URL, while doing: String) -> any Error {
        if error is ObjectGraphError || error is VersionConflictError || error is ConstraintConflictError { return error }
        if let decoding = error as? RowDecodingError {
            return ObjectGraphError(.notADatabase, "The store at \(url.path) holds a value of the wrong type (\(decoding)) while \(doing)", url: url)
        }
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

    func count(_ n: Int = 1) { statements.add(n) }

    /// A read in one transaction: of the pinned version of a query generation when one is reading.
    func read<T>(_ doing: String, _ body: (Database) throws -> T) throws -> T {
        do {
            if let pinned = QueryGeneration.pinnedVersion(of: self, as: PinnedReader.self) { return try pinned.content.read(body) }
            return try pool.read(body)
        } catch { throw Self.translate(error, url: url, while: doing) }
    }

    /// A read of one statement: SQLite runs a lone statement in its own implicit transaction, so the
    /// explicit one `read` opens (BEGIN, COMMIT) would only add two statements to every fault.
    func readOne<T>(_ doing: String, _ body: (Database) throws -> T) throws -> T {
        do {
            if let pinned = QueryGeneration.pinnedVersion(of: self, as: PinnedReader.self) { return try pinned.content.read(body) }
            return try pool.unsafeRead(body)
        } catch { throw Self.translate(error, url: url, while: doing) }
    }

    /// A query generation's version of the store: a reader connection of its own, in a read
    /// transaction opened when the generation was pinned (GRDB's `DatabaseSnapshot`). While it lives,
    /// checkpoints cannot move the write-ahead log's content into the database past it.
    typealias PinnedReader = PinnedContent<DatabaseSnapshot>

    func pinVersion(store: PersistentStore) throws -> any PinnedStoreVersion {
        do { return PinnedReader(try pool.makeSnapshot(), backend: self) } catch {
            throw Self.translate(error, url: url, while: "pinning a query generation")
        }
    }

    func write<T>(_ doing: String, _ body: (Database) throws -> T) throws -> T {
        do { return try pool.write(body) } catch { throw Self.translate(error, url: url, while: doing) }
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
