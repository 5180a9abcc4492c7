import Foundation
import Logging
import Metrics
import Synchronization
import Tracing

/// Counters that show what the stores and the row cache did.
public struct StoreStatistics: Sendable, Hashable, CustomStringConvertible {
    /// SQL statements run by the coordinator's stores for its contexts and requests. A PostgreSQL
    /// store's change listener, which reads other coordinators' saves on a queue of its own at any
    /// moment, is not counted.
    public var sqlStatements: Int
    /// Faults fulfilled from the row cache, without the store.
    public var rowCacheHits: Int
    /// Faults that found nothing in the row cache.
    public var rowCacheMisses: Int
    /// Faults fulfilled by reading the store.
    public var faultsFromStore: Int
    /// Rows in the row cache now.
    public var rowCacheCount: Int
    /// Query generations pinned now (``ManagedObjectContext/setQueryGenerationFrom(_:)``): each
    /// holds a snapshot of the stores, and, on an SQLite store, a reader connection in its read transaction.
    public var pinnedQueryGenerations: Int = 0

    public var description: String {
        "sqlStatements: \(sqlStatements), rowCacheHits: \(rowCacheHits), rowCacheMisses: \(rowCacheMisses), faultsFromStore: \(faultsFromStore), rowCacheCount: \(rowCacheCount), pinnedQueryGenerations: \(pinnedQueryGenerations)"
    }
}

/// The coordinator: one model, its stores, and the row cache, shared by any number of contexts on
/// any queues (`NSPersistentStoreCoordinator`).
///
/// ```swift
/// let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
/// try coordinator.addPersistentStore(type: .sqlite, at: url)
/// ```
///
/// It is safe to use from any thread: it locks itself internally. Fetches and fault fulfilment on
/// an SQLite store read through a pool of connections and run concurrently with each other and
/// with a save; saves are serialized.
public final class PersistentStoreCoordinator: Sendable, CustomStringConvertible {
    /// The model of every store.
    public let managedObjectModel: ManagedObjectModel
    /// A name, for debugging.
    public let name: String?

    private let stores = Protected<[PersistentStore]>([])
    let rowCache = RowCache()
    let faultsFromStoreCounter = Atomic<Int>(0)
    private let exclusive = CoordinatorLock()
    /// Who hears the saves of the contexts on this coordinator, by subscription number: the
    /// coordinator holds no context, only what each subscriber asked to be called with.
    private let saveSubscribers = Protected<[Int: @Sendable (ManagedObjectContext.SaveChanges, ObjectIdentifier) -> Void]>([:])
    private let subscriptionCounter = Atomic<Int>(0)
    /// Remote-change watchers and the `remoteChanges` streams.
    let remoteState = Protected(RemoteChangeState())
    /// Live query generations (pinned snapshots), for ``StoreStatistics/pinnedQueryGenerations``.
    let pinnedGenerations = Atomic<Int>(0)
    /// The live query generations, by token, so that a token pins another context to its generation.
    let queryGenerations = Protected(QueryGenerationRegistry())

    /// Where the coordinator logs (swift-log): the SQL its stores run when asked
    /// (``PersistentStoreOption/sqlDebugLevel``, `OBJECTGRAPH_SQL_DEBUG`), and each save then; and,
    /// as warnings, the model's ``ManagedObjectModel/validationWarnings`` when it is created.
    /// A logger labelled "objectgraph" unless one is given.
    public let logger: Logger

    /// Metrics, spans and the slow-operation threshold.
    let instrumentation: CoordinatorInstrumentation

    /// Creates a coordinator for a model.
    ///
    /// - Parameters:
    ///   - managedObjectModel: the model of every store added.
    ///   - name: a name, for debugging, logs and the metrics' `coordinator` dimension.
    ///   - logger: receives what it logs (see ``logger``).
    ///   - metricsFactory: where its counters and timers go (``ObjectGraphMetric``); nil, the
    ///     default: the factory bootstrapped with `MetricsSystem.bootstrap`, if any, when the
    ///     coordinator is created.
    ///   - tracer: what makes its spans (save, fetch, fault, batch request, migration); nil, the
    ///     default: the tracer bootstrapped with `InstrumentationSystem.bootstrap`, if any.
    public init(
        managedObjectModel: ManagedObjectModel, name: String? = nil, logger: Logger = Logger(label: "objectgraph"),
        metricsFactory: (any MetricsFactory)? = nil, tracer: (any Tracer)? = nil
    ) {
        self.managedObjectModel = managedObjectModel
        self.name = name
        self.logger = logger
        self.instrumentation = CoordinatorInstrumentation(coordinatorName: name, metricsFactory: metricsFactory, tracer: tracer)
        // What momc warns of and Core Data accepts (crossed inverses), said once per coordinator.
        for warning in managedObjectModel.validationWarnings {
            logger.warning("the model: \(warning.message)", metadata: ["coordinator": "\(name ?? "unnamed")"])
        }
    }

    deinit {
        stopAllRemoteChangeWatchers()
        for store in stores.withLock({ $0 }) { store.backend.coordinatorWentAway() }
    }

    public var description: String { "PersistentStoreCoordinator(\(name ?? "unnamed"), \(persistentStores.count) stores)" }

    /// The stores, in the order they were added.
    public var persistentStores: [PersistentStore] { stores.withLock { $0 } }

    /// Adds a store.
    ///
    /// ```swift
    /// try coordinator.addPersistentStore(type: .sqlite, at: url)
    /// try coordinator.addPersistentStore(type: .inMemory, at: nil)   // a new, empty store each call
    /// ```
    ///
    /// - Parameters:
    ///   - type: SQLite, in-memory, binary, XML or PostgreSQL (see <doc:ScalingOutWithPostgreSQL>).
    ///   - configuration: the model configuration whose entities the store holds; nil for all.
    ///   - url: the store's file; for an in-memory store, nil or any URL; for a PostgreSQL store,
    ///     `postgres://user:password@host:port/database` (`?schema=NAME` for a schema other than `public`).
    ///   - options: ``PersistentStoreOption`` keys: durability (`synchronous` FULL by default, or NORMAL),
    ///     read-only, reader count, busy timeout.
    /// - Throws: ``ObjectGraphError/invalidModel`` when the model is invalid,
    ///   ``ObjectGraphError/notADatabase`` for a file that is not an SQLite database (left as it was),
    ///   ``ObjectGraphError/incompatibleModel`` for a store written with another model (unless the
    ///   options ask for a migration: see <doc:MigratingStores>), ``ObjectGraphError/migration`` for a
    ///   migration that cannot run (the store left as it was),
    ///   ``ObjectGraphError/io`` or ``ObjectGraphError/readOnly`` for a location that cannot be written.
    @discardableResult
    public func addPersistentStore(
        type: StoreType, configuration: String? = nil, at url: URL? = nil, options: [String: any Sendable]? = nil
    ) throws -> PersistentStore {
        try managedObjectModel.validate()
        let postgresClient = options?[PersistentStoreOption.postgresClient]
        if let configuration, configuration != Self.defaultConfigurationName,
           managedObjectModel.entities(forConfigurationName: configuration) == nil {
            throw ObjectGraphError(
                .invalidModel, "The model has no configuration named '\(configuration)' (it has: \(managedObjectModel.configurations.joined(separator: ", ")))",
                url: url)
        }
        try migrateStoreIfNeeded(type: type, at: url, options: options)
        // A PostgreSQL store migrates itself, in the transaction that opens it.
        let migration = try MigrationSettings(options)
        let options = try StoreOptions(options)
        let readOnly = options.readOnly, durability = options.durability
        let readers = options.maximumReaderCount, busyTimeout = options.busyTimeout
        if type != .sqlite && type != .postgres && (options.historyTracking || options.remoteChangeNotifications) {
            throw ObjectGraphError(
                .unsupported,
                "A \(type) store keeps no persistent history and hears no remote changes (as in Core Data, only an SQLite store does): remove the \(options.historyTracking ? PersistentStoreOption.persistentHistoryTracking : PersistentStoreOption.remoteChangeNotificationPost) option",
                url: url)
        }
        if type != .postgres && options.mergesRemoteChanges && !(options.historyTracking && options.remoteChangeNotifications) {
            throw ObjectGraphError(
                .unsupported,
                "\(PersistentStoreOption.mergesRemoteChangesAutomatically) needs \(PersistentStoreOption.persistentHistoryTracking) and \(PersistentStoreOption.remoteChangeNotificationPost) too: remote changes are merged from history",
                url: url)
        }
        lock()
        defer { unlock() }
        let backend: any StoreBackend
        switch type {
        case .sqlite:
            guard let url else {
                throw ObjectGraphError(.io, "An SQLite store needs a file URL")
            }
            if let existing = persistentStore(for: url) {
                throw ObjectGraphError(.io, "The store at \(url.path) is already added to this coordinator as \(existing.identifier)", url: url)
            }
            backend = try SQLiteStore(
                url: url, model: managedObjectModel, readOnly: readOnly, durability: durability,
                maximumReaderCount: readers, busyTimeout: busyTimeout, historyTracking: options.historyTracking,
                sqlLog: SQLDebugLog.make(logger: logger, optionLevel: options.sqlDebugLevel, store: url.lastPathComponent))
        case .inMemory:
            backend = InMemoryStore(model: managedObjectModel)
        case .postgres:
            guard let url else {
                throw ObjectGraphError(.io, "A \(type) store needs a postgres://user:password@host:port/database URL")
            }
            if let existing = persistentStores.first(where: { $0.url == url }) {
                throw ObjectGraphError(.io, "The store at \(url.host ?? "")\(url.path) is already added to this coordinator as \(existing.identifier)", url: url)
            }
            // Connections: one per reader the options allow, and one for saves.
            backend = try PostgresStore(
                url: url, model: managedObjectModel, readOnly: readOnly, maximumConnections: readers + 1, client: postgresClient, logger: logger,
                migration: migration,
                historyTracking: options.historyTracking)
        case .binary, .xml:
            guard let url else { throw ObjectGraphError(.io, "A \(type) store needs a file URL") }
            backend = try AtomicStore(url: url, model: managedObjectModel, format: type == .xml ? .xml : .binary, readOnly: readOnly)
        default:
            throw ObjectGraphError(.unsupported, "Unknown store type '\(type)'")
        }
        return try attach(backend, type: type, configuration: configuration, url: url, readOnly: readOnly, durability: durability, options: options)
    }

    /// Adds a store over a backend made for it (a test's, for one).
    func addTestStore(type: StoreType, url: URL?, backend: any StoreBackend) throws -> PersistentStore {
        lock()
        defer { unlock() }
        return try attach(backend, type: type, configuration: nil, url: url, readOnly: false, durability: .full, options: try StoreOptions(nil))
    }

    /// Makes the store of a backend, starts hearing its remote changes when it should, and adds it
    /// to the coordinator. Called with the coordinator locked.
    private func attach(
        _ backend: any StoreBackend, type: StoreType, configuration: String?, url: URL?, readOnly: Bool, durability: StoreDurability, options: StoreOptions
    ) throws -> PersistentStore {
        let store = PersistentStore(
            type: type, url: url, configurationName: configuration, isReadOnly: readOnly, durability: durability, backend: backend)
        if options.remoteChangeNotifications, let sqlite = backend as? SQLiteStore {
            do { try startWatchingRemoteChanges(of: store, backend: sqlite, merging: options.mergesRemoteChanges) } catch {
                try? backend.close()
                throw error
            }
        }
        // Coordinators sharing a PostgreSQL store always hear each other (that is what the store is for).
        if let postgres = backend as? PostgresStore {
            do { try startListeningForChanges(of: store, backend: postgres) } catch {
                try? backend.close()
                throw error
            }
        }
        stores.withLock { $0.append(store) }
        return store
    }

    /// Removes a store; its objects become inaccessible to contexts that have not fetched them.
    public func removePersistentStore(_ store: PersistentStore) throws {
        lock()
        defer { unlock() }
        stores.withLock { $0.removeAll { $0 === store } }
        stopWatchingRemoteChanges(of: store)
        try store.backend.close()
    }

    /// The store at a URL, if added.
    public func persistentStore(for url: URL) -> PersistentStore? {
        let path = url.standardizedFileURL.path
        return persistentStores.first { $0.url?.standardizedFileURL.path == path }
    }

    /// The ID named by a URI from `ManagedObjectID.uriRepresentation()` or from Apple's Core Data:
    /// `x-coredata://STORE-UUID/Entity/pN` (or `x-objectgraph://…`, as earlier versions of ObjectGraph
    /// wrote it).
    ///
    /// ```swift
    /// let id = coordinator.managedObjectID(forURIRepresentation: URL(string: "x-coredata://6B1D3C2A-…/Note/p12")!)
    /// ```
    ///
    /// - Returns: nil when the URI is not of that form (a temporary ID's URI, another scheme, a
    ///   query, a key that is not a positive number), or names no store of this coordinator or no
    ///   entity of its model.
    public func managedObjectID(forURIRepresentation url: URL) -> ManagedObjectID? {
        guard let scheme = url.scheme?.lowercased(), ManagedObjectID.uriSchemes.contains(scheme),
              let host = url.host, !host.isEmpty,
              url.user == nil, url.password == nil, url.port == nil, url.query == nil, url.fragment == nil
        else { return nil }
        // "/Entity/pN"
        let parts = url.path.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].isEmpty, let entity = managedObjectModel.entitiesByName[String(parts[1])],
              parts[2].first == "p", parts[2].count > 1, parts[2].dropFirst().allSatisfy({ $0.isASCII && $0.isNumber }),
              let pk = Int64(parts[2].dropFirst()), pk > 0,
              let store = persistentStores.first(where: { $0.identifier.caseInsensitiveCompare(host) == .orderedSame })
        else { return nil }
        return ManagedObjectID(entity: entity, store: store, primaryKey: pk)
    }

    /// Counters of store and row-cache activity.
    public var statistics: StoreStatistics {
        StoreStatistics(
            sqlStatements: persistentStores.reduce(0) { $0 + $1.backend.statementCount },
            rowCacheHits: rowCache.hits.load(ordering: .relaxed),
            rowCacheMisses: rowCache.misses.load(ordering: .relaxed),
            faultsFromStore: faultsFromStoreCounter.load(ordering: .relaxed),
            rowCacheCount: rowCache.count,
            pinnedQueryGenerations: pinnedGenerations.load(ordering: .relaxed))
    }

    // MARK: - Saves, to subscribers

    /// A subscription to the saves written to this coordinator's stores; cancelled when dropped.
    final class SaveSubscription: Sendable {
        private let number: Int
        private weak let coordinator: PersistentStoreCoordinator?
        fileprivate init(number: Int, coordinator: PersistentStoreCoordinator) {
            self.number = number
            self.coordinator = coordinator
        }
        deinit { _ = coordinator?.saveSubscribers.withLock { $0.removeValue(forKey: number) } }
    }

    /// Calls `handler` with every save a context writes to this coordinator's stores (and the
    /// identity of the context that saved), on the saving context's queue, until the subscription
    /// is dropped.
    func subscribeToSaves(_ handler: @escaping @Sendable (ManagedObjectContext.SaveChanges, ObjectIdentifier) -> Void) -> SaveSubscription {
        let number = subscriptionCounter.add(1, ordering: .relaxed).newValue
        saveSubscribers.withLock { $0[number] = handler }
        return SaveSubscription(number: number, coordinator: self)
    }

    /// Hands a save written to the stores to the subscribers, with the identity of the context
    /// that saved.
    func didSave(_ changes: ManagedObjectContext.SaveChanges, from source: ObjectIdentifier) {
        let handlers = saveSubscribers.withLock { Array($0.values) }
        for handler in handlers { handler(changes, source) }
    }

    /// Hands changes written to the stores without a context's save (batch requests) to every
    /// subscriber, the contexts that merge automatically, but `excluded`.
    func didWriteWithoutContext(_ changes: ManagedObjectContext.SaveChanges, except excluded: ManagedObjectContext? = nil) {
        let handlers = saveSubscribers.withLock { Array($0.values) }
        // A subscriber skips changes from itself; no context has the coordinator's identity.
        let source = excluded.map { ObjectIdentifier($0) } ?? ObjectIdentifier(self)
        for handler in handlers { handler(changes, source) }
    }

    // MARK: - Locking

    /// Takes the coordinator's lock (recursive): until `unlock()`, other threads' store access waits.
    public func lock() { exclusive.lock() }
    /// Releases the lock taken by `lock()` or a successful `tryLock()`.
    public func unlock() { exclusive.unlock() }
    /// Takes the lock if no other thread holds it.
    public func tryLock() -> Bool { exclusive.tryLock() }

    /// Runs a store access, waiting while another thread holds the coordinator's lock.
    func access<T>(_ body: () throws -> T) rethrows -> T {
        exclusive.waitUntilAvailable()
        return try body()
    }

    // MARK: - Store access for contexts

    /// This coordinator's store of an ID: its own store, or, for an ID made by another coordinator
    /// on the same store (same UUID), this coordinator's store with that UUID.
    func localStore(of id: ManagedObjectID) -> PersistentStore? {
        guard let store = id.persistentStore else { return nil }
        let stores = persistentStores
        if stores.contains(where: { $0 === store }) { return store }
        return stores.first { $0.identifier == store.identifier }
    }

    /// An ID as this coordinator knows it: made with its own store and model when another
    /// coordinator on the same store made it (nil when no store of this coordinator has it).
    func localID(_ id: ManagedObjectID) -> ManagedObjectID? {
        guard let store = id.persistentStore, let pk = id.primaryKey else { return id }
        if persistentStores.contains(where: { $0 === store }) { return id }
        guard let local = localStore(of: id), let entity = managedObjectModel.entitiesByName[id.entityName] else { return nil }
        return ManagedObjectID(entity: entity, store: local, primaryKey: pk)
    }

    func fetchRows(_ request: StoreFetchRequest) throws -> [StoreRow] {
        try access {
            let stores = persistentStores
            if stores.isEmpty {
                throw ObjectGraphError(.noPersistentStore, "The coordinator has no persistent store to fetch \(request.entity.name) from", entityName: request.entity.name)
            }
            // The first store's rows are taken whole: appending them to an empty array would copy
            // every row (a retain per value array and ID) and then free the original.
            var rows = try stores[0].backend.fetch(request, store: stores[0])
            for store in stores.dropFirst() { rows += try store.backend.fetch(request, store: store) }
            return rows
        }
    }

    /// The rows of a fetch from one store, and the rows of the destinations of its to-one
    /// prefetches that the store reads with them (``StoreBackend/fetch(_:store:destinations:)``).
    func fetchRows(_ request: StoreFetchRequest, from store: PersistentStore, destinations: inout [StoreRow]) throws -> [StoreRow] {
        try access { try store.backend.fetch(request, store: store, destinations: &destinations) }
    }

    func fetchKeys(_ request: StoreFetchRequest) throws -> [(PersistentStore, [Int64], [Int32])] {
        try access {
            let stores = persistentStores
            if stores.isEmpty {
                throw ObjectGraphError(.noPersistentStore, "The coordinator has no persistent store to fetch \(request.entity.name) from", entityName: request.entity.name)
            }
            return try stores.map { store in
                let (keys, codes) = try store.backend.fetchKeys(request, store: store)
                return (store, keys, codes)
            }
        }
    }

    func countRows(_ request: StoreFetchRequest) throws -> Int {
        try access {
            try persistentStores.reduce(0) { $0 + (try $1.backend.count(request, store: $1)) }
        }
    }

    /// Snapshots of objects from the store (not the cache), registered in the row cache with a
    /// reference each.
    func fetchSnapshots(_ ids: [ManagedObjectID]) throws -> [ManagedObjectID: Snapshot] {
        let mark = rowCache.evictionMark
        let result = try readSnapshots(ids)
        rowCache.register(result.map { StoreRow(id: $0.key, snapshot: $0.value) }, retain: true, readSince: mark)
        return result
    }

    /// Snapshots of objects from the stores (of a pinned generation while one is reading), not
    /// registered in the row cache.
    func readSnapshots(_ ids: [ManagedObjectID]) throws -> [ManagedObjectID: Snapshot] {
        guard instrumentation.isOn else {
            return try readSnapshotsFromStores(ids)
        }
        return try instrumentation.span("ObjectGraph fault") { span in
            span?.attributes["objectgraph.objects"] = ids.count
            let result = try measured(\.faultDuration, describe: { (result: [ManagedObjectID: Snapshot]?) in
                "fault of \(ids.count) object\(ids.count == 1 ? "" : "s") (\(ids.first?.entityName ?? "")\(ids.count > 1 ? ", …" : "")) from the store"
                    + (result == nil ? " (failed)" : "")
            }) { try readSnapshotsFromStores(ids) }
            instrumentation.metrics?.faultsFromStore.increment(by: result.count)
            return result
        }
    }

    private func readSnapshotsFromStores(_ ids: [ManagedObjectID]) throws -> [ManagedObjectID: Snapshot] {
        try access {
            var result: [ManagedObjectID: Snapshot] = [:]
            // The IDs of each store, found without a lock or a hash per ID (usually one store).
            let stores = persistentStores
            var lists = [[ManagedObjectID]](repeating: [], count: stores.count)
            for id in ids {
                guard let store = id.persistentStore else { continue }
                let index = stores.count == 1 && stores[0] === store ? 0
                    : stores.firstIndex { $0 === store } ?? stores.firstIndex { $0.identifier == store.identifier }
                if let index { lists[index].append(id) }
            }
            for (store, list) in zip(stores, lists) where !list.isEmpty {
                let found = try store.backend.snapshots(for: list, store: store)
                if result.isEmpty { result = found } else { result.merge(found) { a, _ in a } }
            }
            faultsFromStoreCounter.add(result.count, ordering: .relaxed)
            logger.trace("fault: \(result.count) of \(ids.count) objects read from the store", metadata: ["coordinator": "\(name ?? "unnamed")"])
            return result
        }
    }

    func destinations(of relationship: RelationshipDescription, for sources: [ManagedObjectID]) throws -> [ManagedObjectID: [ManagedObjectID]] {
        try access {
            var result: [ManagedObjectID: [ManagedObjectID]] = [:]
            var byStore: [ObjectIdentifier: (PersistentStore, [ManagedObjectID])] = [:]
            for id in sources {
                guard let store = localStore(of: id) else { continue }
                byStore[ObjectIdentifier(store), default: (store, [])].1.append(id)
            }
            for (store, list) in byStore.values {
                result.merge(try store.backend.destinations(of: relationship, for: list, store: store)) { a, _ in a }
            }
            return result
        }
    }

    /// Permanent IDs for temporary ones, from the store each object goes to (its assigned store,
    /// else the first whose configuration has its entity).
    func allocatePermanentIDs(for ids: [ManagedObjectID], assignments: [ManagedObjectID: PersistentStore] = [:]) throws
        -> [ManagedObjectID: ManagedObjectID] {
        try access {
            var result: [ManagedObjectID: ManagedObjectID] = [:]
            var groups: [[ObjectIdentifier]: (store: PersistentStore, ids: [ManagedObjectID])] = [:]
            for id in ids where id.isTemporaryID {
                let store = try assignments[id] ?? store(for: id.entity)
                groups[[ObjectIdentifier(id.entity.rootEntity), ObjectIdentifier(store)], default: (store, [])].ids.append(id)
            }
            for (store, list) in groups.values {
                if store.isReadOnly { throw ObjectGraphError(.readOnly, "The store \(store.url?.path ?? store.identifier) is read-only", url: store.url) }
                var key = try store.backend.allocatePrimaryKeys(for: list[0].entity, count: list.count)
                for id in list {
                    result[id] = ManagedObjectID(entity: id.entity, store: store, primaryKey: key)
                    key += 1
                }
            }
            return result
        }
    }

    /// Writes a save to the store in one transaction and updates the row cache.
    func save(_ request: StoreSaveRequest, to store: PersistentStore, info: TransactionInfo = TransactionInfo()) throws -> StoreSaveResult {
        try access {
            if store.isReadOnly {
                throw ObjectGraphError(.readOnly, "The store \(store.url?.path ?? store.identifier) is read-only; nothing was written", url: store.url)
            }
            let result: StoreSaveResult
            do {
                result = try TransactionInfo.$current.withValue(info) { try store.backend.save(request, store: store) }
            } catch let error as VersionConflictError {
                instrumentation.metrics?.conflicts.increment(by: error.conflicts.count)
                throw error
            } catch let error as ConstraintConflictError {
                instrumentation.metrics?.conflicts.increment(by: max(error.conflicts.count, 1))
                throw error
            }
            rowCache.didSave(snapshots: result.snapshots, deleted: request.deleted.map(\.id))
            if result.historyChanges > 0 { instrumentation.metrics?.historyRows.increment(by: result.historyChanges) }
            return result
        }
    }
}

/// The coordinator's `lock()`: recursive and exclusive, while store accesses only wait for it to be free.
final class CoordinatorLock: @unchecked Sendable {  // state guarded by `condition`
    private let condition = NSCondition()
    private var owner: pthread_t?
    private var depth = 0

    private var isOwnedByCurrentThread: Bool {
        guard let owner else { return false }
        return pthread_equal(owner, pthread_self()) != 0
    }

    func lock() {
        condition.lock()
        while owner != nil && !isOwnedByCurrentThread { condition.wait() }
        owner = pthread_self()
        depth += 1
        condition.unlock()
    }

    func tryLock() -> Bool {
        condition.lock()
        defer { condition.unlock() }
        if owner != nil && !isOwnedByCurrentThread { return false }
        owner = pthread_self()
        depth += 1
        return true
    }

    func unlock() {
        condition.lock()
        precondition(isOwnedByCurrentThread, "ObjectGraph: unlock() of a lock this thread does not hold")
        depth -= 1
        if depth == 0 {
            owner = nil
            condition.broadcast()
        }
        condition.unlock()
    }

    func waitUntilAvailable() {
        condition.lock()
        while owner != nil && !isOwnedByCurrentThread { condition.wait() }
        condition.unlock()
    }
}
