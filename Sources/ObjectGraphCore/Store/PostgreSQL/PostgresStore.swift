import Foundation
import Logging
import Synchronization

/// The PostgreSQL store: Core Data's relational layout (``CoreDataLayout`` with
/// ``SQLDialect/postgres``) in a schema of a PostgreSQL database, shared by every coordinator,
/// process and machine that adds the same URL, through a pool of connections (the driver the
/// program registered from ObjectGraphPostgres, over PostgresNIO).
///
/// Saves run in one `READ COMMITTED` transaction each and lock the rows they check
/// (`SELECT … FOR UPDATE`): a row's version (`Z_OPT`) cannot change between the check and the
/// write, so optimistic locking is exact across processes without `SERIALIZABLE`'s retries of
/// transactions that touched nothing in common. Reads run in `REPEATABLE READ` read-only
/// transactions: every statement of one fetch sees one version of the database.
final class PostgresStore: StoreBackend {
    let identifier: String
    let metadata: [String: any Sendable]
    let url: URL
    /// The URL without its password, for messages.
    let location: String
    let model: ManagedObjectModel
    let schema: CoreDataLayout
    /// The PostgreSQL schema holding the store's tables.
    let schemaName: String
    let driver: any PostgresDriver
    let readOnly: Bool
    /// Whether the store was added with ``PersistentStoreOption/persistentHistoryTracking``.
    let historyTracking: Bool
    let layouts: [Int: TableLayout]  // by root entity code
    /// Whether the store's UNIQUE indexes enforce every uniqueness constraint of the model, found
    /// when it opened: then a save does not check its constraints again after writing its rows
    /// (an INSERT or UPDATE an index refuses is reported as a constraint conflict all the same).
    let uniqueIndexesEnforceConstraints: Bool
    /// Primary keys reserved by this store object's committed saves, for its later saves.
    let keyReserve = PostgresKeyReserve()
    /// How many SQL statements the store has run (``StoreStatistics/sqlStatements``).
    let statements = StatementCounter()
    /// How many rows fetches and counts have read from the server: a fetch PostgreSQL answers
    /// whole reads only the rows it returns (with a limit, at most the limit), one left partly to
    /// memory reads every row the rest of its predicate selects.
    let rowsRead = StatementCounter()
    /// This store object's own name, written with each of its saves to the change log, so that its
    /// coordinator tells its own commits from others'.
    let instanceID = UUID().uuidString

    var statementCount: Int { statements.value }

    /// - Parameter client: the app's pool (``PersistentStoreOption/postgresClient``); nil for the store's own.
    /// - Parameter driver: the connections to use (tests); nil to connect to `url` with the registered driver.
    /// - Parameter migration: the migration options the store was added with: a store written with
    ///   another model is migrated when they say so (see `PostgresStore+Migration.swift`).
    init(
        url: URL, model: ManagedObjectModel, readOnly: Bool, maximumConnections: Int, client: (any Sendable)? = nil, logger: Logger,
        driver: (any PostgresDriver)? = nil, migration: MigrationSettings? = nil, historyTracking: Bool = false
    ) throws {
        self.historyTracking = historyTracking
        try StoreFiles.require(
            url.scheme == "postgres" || url.scheme == "postgresql", url: url, for: .postgres, "its URL must be postgres://user:password@host:port/database")
        self.url = url
        self.model = model
        self.readOnly = readOnly
        self.location = Self.location(of: url)
        let schemaName = PostgresStoreTables.schemaName(in: url)
        self.schemaName = schemaName
        let schema = CoreDataLayout(model: model)
        self.schema = schema
        let driver = try driver ?? PostgresDrivers.factory().connect(
            url: url, maximumConnections: max(1, maximumConnections), client: client, logger: logger)
        self.driver = driver
        let opened: PostgresStoreTables.Opened
        do {
            let migrates = !readOnly && migration?.migrates == true
            opened = try PostgresStoreTables.open(
                driver, schema: schema, schemaName: schemaName, location: location, migrates: migrates, history: historyTracking && !readOnly)
        } catch {
            driver.close()
            throw error
        }
        identifier = opened.metadata[PersistentStore.metadataIdentifierKey] as? String ?? UUID().uuidString
        // After a migration the store's metadata is the new model's, with the store's UUID.
        metadata = opened.migrateFrom == nil ? opened.metadata : Self.metadata(of: model, identifier: identifier)
        layouts = Self.layouts(of: schema, in: schemaName)
        // A migration makes the new model's tables with their indexes.
        uniqueIndexesEnforceConstraints = opened.migrateFrom != nil || opened.hasUniqueIndexes
        if let hashes = opened.migrateFrom, let migration {
            logger.info("migrating the PostgreSQL store \(location) to the coordinator's model")
            do {
                try migrate(from: hashes, settings: migration)
            } catch {
                logger.error("the migration of the PostgreSQL store \(location) failed, and it was left as it was: \(error)")
                driver.close()
                throw error
            }
            logger.info("migrated the PostgreSQL store \(location)")
        }
    }

    /// A reader of the tables `model` describes in `schemaName`, through `driver`, that opens
    /// nothing and writes nothing: the old model's side of a migration, used in its transaction.
    init(readingTablesOf model: ManagedObjectModel, url: URL, location: String, schemaName: String, driver: any PostgresDriver) {
        self.url = url
        self.model = model
        readOnly = true
        historyTracking = false
        self.location = location
        self.schemaName = schemaName
        schema = CoreDataLayout(model: model)
        self.driver = driver
        identifier = ""
        metadata = [:]
        layouts = Self.layouts(of: schema, in: schemaName)
        uniqueIndexesEnforceConstraints = false
    }


    /// The layout of each root entity's table, in the PostgreSQL schema `schemaName`.
    private static func layouts(of schema: CoreDataLayout, in schemaName: String) -> [Int: TableLayout] {
        TableLayout.layouts(of: schema, dialect: .postgres) { "\(CoreDataLayout.quote(schemaName)).\(CoreDataLayout.quote($0))" }
    }

    /// The metadata a store of `model` records (Core Data's keys, the model's version hashes).
    static func metadata(of model: ManagedObjectModel, identifier: String) -> [String: any Sendable] {
        var metadata = CoreDataMetadata.new(model: model)
        metadata[PersistentStore.metadataTypeKey] = StoreType.postgres.rawValue
        metadata[PersistentStore.metadataIdentifierKey] = identifier
        return metadata
    }

    /// A table's name, qualified by the store's schema and quoted.
    func table(_ name: String) -> String { "\(CoreDataLayout.quote(schemaName)).\(CoreDataLayout.quote(name))" }

    /// The table of an entity (its root entity's).
    func table(for entity: EntityDescription) -> String { table(schema.tableName(for: entity)) }

    func count(_ n: Int = 1) { statements.add(n) }

    /// A read in one `REPEATABLE READ` read-only transaction: of the snapshot of the query
    /// generation the reading context is pinned to, if any, and of the latest commits otherwise.
    ///
    /// - Parameter oneStatement: true when `body` runs exactly one statement: unless the context
    ///   is pinned, it runs outside a transaction, which reads the same snapshot (a statement's
    ///   own) without a BEGIN and a COMMIT.
    func read<T>(_ doing: String, oneStatement: Bool = false, _ body: (any PostgresSession) throws -> T) throws -> T {
        do {
            if let pinned = QueryGeneration.pinnedVersion(of: self, as: PinnedSnapshot.self) {
                let id = pinned.content.snapshot.id.replacingOccurrences(of: "'", with: "''")
                return try driver.transaction(isolation: .repeatableRead, readOnly: true) { session in
                    try session.execute("SET TRANSACTION SNAPSHOT '\(id)'", [])
                    return try body(session)
                }
            }
            if oneStatement { return try driver.readOneStatement(body) }
            return try driver.transaction(isolation: .repeatableRead, readOnly: true, body)
        } catch let error as PostgresDriverError {
            throw translate(error, while: doing)
        }
    }

    /// A write in one `READ COMMITTED` transaction: committed when `body` returns, rolled back when it throws.
    ///
    /// - Parameter inDoubt: when the connection is lost during COMMIT, what the write returns or
    ///   throws instead (see ``resolveCommit(of:while:)``); without it, an ``ObjectGraphError/io`` error.
    func write<T>(_ doing: String, inDoubt: ((PostgresDriverError) throws -> T)? = nil, _ body: (any PostgresSession) throws -> T) throws -> T {
        if readOnly {
            throw ObjectGraphError(.readOnly, "The \(StoreType.postgres) store \(location) was added read-only: cannot do \(doing)", url: url)
        }
        do {
            return try driver.transaction(isolation: .readCommitted, readOnly: false, body)
        } catch let error as PostgresDriverError {
            if error.commitInDoubt, let inDoubt { return try inDoubt(error) }
            throw translate(error, while: doing)
        }
    }

    /// A write whose body returns its result and its transaction's ID (nil when it wrote nothing):
    /// when the connection is lost during COMMIT, the server is asked whether it committed, and the
    /// result is returned if it did (see ``resolveCommit(of:while:lost:)``).
    ///
    /// - Throws: ``ObjectGraphError/io`` saying nothing was written when the server rolled it back.
    func writeResolvingCommit<T: Sendable>(_ doing: String, _ body: (any PostgresSession) throws -> (T, Int64?)) throws -> T {
        let committing = Protected<(result: T, txid: Int64)?>(nil)
        return try write(doing, inDoubt: { lost in
            guard let (result, txid) = committing.withLock({ $0 }) else { throw self.translate(lost, while: doing) }
            if try self.resolveCommit(of: txid, while: doing, lost: lost) { return result }
            throw ObjectGraphError(
                .io, "The connection to \(self.location) was lost while \(doing) (\(lost.message)); the server rolled it back: nothing was written",
                url: self.url)
        }) { session in
            let (result, txid) = try body(session)
            if let txid { committing.withLock { $0 = (result, txid) } }
            return result
        }
    }

    /// How long a save whose COMMIT lost its connection waits for the server to say whether it committed.
    static let commitResolutionTimeout: Double = 30

    /// Asks the server, on new connections, whether the transaction `txid` committed: true or false,
    /// once it knows; waits while it cannot be reached (a restart), up to ``commitResolutionTimeout``.
    ///
    /// - Throws: ``ObjectGraphError/io`` when the server cannot tell in time (the outcome is unknown).
    func resolveCommit(of txid: Int64, while doing: String, lost: PostgresDriverError) throws -> Bool {
        try askUntilKnown(while: doing, lost: lost) {
            let status = try? driver.transaction(isolation: .readCommitted, readOnly: true) { session in
                try session.query("SELECT txid_status($1)", [.int(txid)]).first?.first
            }
            switch status {
            case .text("committed")?: return true
            case .text("aborted")?: return false
            default: return nil  // unreachable, or still "in progress" until the server sees the connection gone
            }
        }
    }

    /// Asks `committed` until it knows whether a write whose connection was lost committed (nil:
    /// not yet), pausing longer each time, up to ``commitResolutionTimeout``.
    ///
    /// - Throws: ``ObjectGraphError/io`` when the server cannot tell in time (the outcome is unknown).
    func askUntilKnown(while doing: String, lost: PostgresDriverError, _ committed: () -> Bool?) throws -> Bool {
        let deadline = Date().addingTimeInterval(Self.commitResolutionTimeout)
        var pause = 0.05
        while true {
            if let known = committed() { return known }
            if Date() > deadline {
                throw ObjectGraphError(
                    .io,
                    "The connection to \(location) was lost while \(doing) was committing (\(lost.message)), and the server could not say within \(Int(Self.commitResolutionTimeout)) s whether it committed: read the store again before saving these changes again",
                    url: url)
            }
            Thread.sleep(forTimeInterval: pause)
            pause = min(pause * 2, 1)
        }
    }

    /// A driver error as an ObjectGraphError that says what and where.
    func translate(_ error: PostgresDriverError, while doing: String) -> ObjectGraphError {
        switch (error.kind, error.sqlState) {
        case (.server, "40001"?), (.server, "40P01"?), (.server, "55P03"?):
            return ObjectGraphError(.busy, "The \(StoreType.postgres) store \(location) is busy (\(error.message)) while \(doing); nothing was written", url: url)
        case (.server, "53100"?):
            return ObjectGraphError(.diskFull, "The PostgreSQL server of \(location) is out of disk space (\(error.message)) while \(doing); nothing was written", url: url)
        case (.poolExhausted, _):
            return ObjectGraphError(.busy, "The \(StoreType.postgres) store \(location) is busy: \(error.message) while \(doing); nothing was sent", url: url)
        case (.server, "25006"?):
            return ObjectGraphError(.readOnly, "The PostgreSQL server of \(location) refused a write (\(error.message)) while \(doing)", url: url)
        default:
            return PostgresStoreTables.translate(error, location: location, while: doing)
        }
    }

    /// A query generation's version of the store: a transaction of its own, kept open (on a
    /// connection outside the pool) while a context is pinned to it, whose exported snapshot every
    /// read of those contexts imports.
    func pinVersion(store: PersistentStore) throws -> any PinnedStoreVersion {
        do {
            return PinnedSnapshot(SnapshotHolder(try driver.exportSnapshot()), backend: self)
        } catch let error as PostgresDriverError {
            throw translate(error, while: "pinning a query generation")
        }
    }

    typealias PinnedSnapshot = PinnedContent<SnapshotHolder>

    /// Releases its snapshot when the last context pinned to the generation lets it go.
    final class SnapshotHolder: Sendable {
        let snapshot: any PostgresExportedSnapshot
        init(_ snapshot: any PostgresExportedSnapshot) { self.snapshot = snapshot }
        deinit { snapshot.release() }
    }

    func close() throws { driver.close() }
}
