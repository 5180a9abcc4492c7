import Foundation

/// The kind of a persistent store.
public struct StoreType: Hashable, Sendable, CustomStringConvertible, ExpressibleByStringLiteral {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(stringLiteral value: String) { self.rawValue = value }
    public var description: String { rawValue }

    /// An SQLite database file (GRDB `DatabasePool`, WAL).
    public static let sqlite = StoreType(rawValue: "SQLite")
    /// A store that lives in memory only; each one added is a new, empty store.
    public static let inMemory = StoreType(rawValue: "InMemory")
    /// An atomic store written whole to a binary property list file at each save.
    public static let binary = StoreType(rawValue: "Binary")
    /// An atomic store written whole to an XML property list file at each save.
    public static let xml = StoreType(rawValue: "XML")
    /// A PostgreSQL database, shared by coordinators on several machines (through PostgresNIO).
    ///
    /// Its driver is the product `ObjectGraphPostgres`: a program that uses this store depends on
    /// it and calls `PersistentStoreCoordinator.registerPostgresStore()` once, before adding one.
    public static let postgres = StoreType(rawValue: "PostgreSQL")
}

/// Durability of an SQLite store: what an acknowledged save survives.
public enum StoreDurability: String, Sendable, Hashable {
    /// `synchronous = FULL` (the default): an acknowledged save survives power loss.
    case full
    /// `synchronous = NORMAL`: an acknowledged save survives a crash of the process; the last
    /// transactions may roll back on power loss. Faster.
    case normal
}

/// Option keys for `addPersistentStore(type:configuration:at:options:)`.
public enum PersistentStoreOption {
    /// A `StoreDurability` (or its raw string): `synchronous = FULL` or `NORMAL`. Default: `.full`.
    public static let durability = "ObjectGraphDurability"
    /// A `Bool`: open the store read-only; a save then throws `ObjectGraphError.readOnly`.
    public static let readOnly = "NSReadOnlyPersistentStoreOption"
    /// A `PostgresClient` (PostgresNIO's pool, from the product `ObjectGraphPostgres`): the
    /// connections of a PostgreSQL store, shared with the app's own queries. The app runs the
    /// client (`client.run()`, or the client as a service of its `ServiceGroup`), and it must be
    /// running when the store is added; the store leaves it running when it is removed. Without it
    /// a PostgreSQL store has a client of its own, of as many connections as it has readers, plus
    /// one. See <doc:ScalingOutWithPostgreSQL>.
    public static let postgresClient = "ObjectGraphPostgresClient"
    /// An `Int`: how many SQLite reader connections the store may open at once. Default: 5.
    public static let maximumReaderCount = "ObjectGraphMaximumReaderCount"
    /// A `Double`: how long (seconds) a writer waits on a lock held by another process. Default: 5.
    public static let busyTimeout = "ObjectGraphBusyTimeout"
    /// A `Bool`: record every save and batch request in the store's persistent history (Core Data's
    /// `ATRANSACTION` and `ACHANGE` tables), for ``PersistentHistoryChangeRequest``. SQLite stores
    /// only, as in Core Data. See <doc:HistoryAndMultipleProcesses>.
    public static let persistentHistoryTracking = "NSPersistentHistoryTrackingKey"
    /// A `Bool`: post `Notification.Name.persistentStoreRemoteChange` and yield on
    /// ``PersistentStoreCoordinator/remoteChanges`` for every commit to the store, by this
    /// coordinator, another one in this process or another process. SQLite stores only.
    public static let remoteChangeNotificationPost = "NSPersistentStoreRemoteChangeNotificationOptionKey"
    /// A `Bool` (ObjectGraph's own): with history tracking and remote-change notifications, the
    /// coordinator reads the history of every commit made elsewhere (another coordinator or
    /// process) and its contexts that have `automaticallyMergesChangesFromParent` merge it, without
    /// the app's own fetch-and-merge loop. Default: false.
    public static let mergesRemoteChangesAutomatically = "ObjectGraphMergesRemoteChangesAutomatically"
    /// An `Int` from 0 to 4: log the SQL the store runs to the coordinator's
    /// ``PersistentStoreCoordinator/logger``, as Core Data's `-com.apple.CoreData.SQLDebug` prints
    /// it (1: statements and their duration; 2: rows changed; 3: values bound; 4: query plans). The
    /// environment variable `OBJECTGRAPH_SQL_DEBUG` does the same for every store; the higher wins.
    /// Default: 0, nothing logged, at no cost. SQLite stores only.
    public static let sqlDebugLevel = "ObjectGraphSQLDebug"
}

/// A store added to a coordinator (`NSPersistentStore`).
public final class PersistentStore: Sendable, CustomStringConvertible {
    /// The store's kind.
    public let type: StoreType
    /// The store's location (nil or a placeholder URL for an in-memory store).
    public let url: URL?
    /// The store's unique identifier, saved in the store; it appears in object ID URIs.
    public let identifier: String
    /// The configuration (set of entities) the store was added with; nil for all entities.
    public let configurationName: String?
    /// Whether saves to the store are refused.
    public let isReadOnly: Bool
    /// The durability of saves.
    public let durability: StoreDurability
    /// The store's metadata (Core Data's `[String: Any]`): its identifier (`"NSStoreUUID"`, a `String`),
    /// its type (`"NSStoreType"`, a `String`), the version hash of each entity of the model that
    /// wrote it (`"NSStoreModelVersionHashes"`, `[String: Data]`) and ObjectGraph's hash of that
    /// model. An SQLite store's is its `Z_METADATA` property list, as Core Data reads it: also
    /// `"NSStoreModelVersionIdentifiers"`, `"NSPersistenceFrameworkVersion"` and the others Core Data wrote.
    public let metadata: [String: any Sendable]
    /// A hash of ``identifier``, computed once: object IDs hash by it.
    let identifierHash: Int

    let backend: any StoreBackend

    init(type: StoreType, url: URL?, configurationName: String?, isReadOnly: Bool, durability: StoreDurability, backend: any StoreBackend) {
        self.type = type
        self.url = url
        self.configurationName = configurationName
        self.isReadOnly = isReadOnly
        self.durability = durability
        self.backend = backend
        self.identifier = backend.identifier
        self.metadata = backend.metadata
        var hasher = Hasher()
        hasher.combine(backend.identifier)
        self.identifierHash = hasher.finalize()
    }

    public var description: String { "PersistentStore(\(type), \(url?.path ?? "in memory"), \(identifier))" }

    /// Metadata keys.
    public static let metadataIdentifierKey = "NSStoreUUID"
    public static let metadataTypeKey = "NSStoreType"
    public static let metadataModelHashKey = "ObjectGraphModelVersionHash"
}
