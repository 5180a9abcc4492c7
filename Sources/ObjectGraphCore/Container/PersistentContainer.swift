import Dispatch
import Foundation
import Logging
import Metrics
import Tracing

/// A model, a coordinator, its stores and the contexts that use them, set up in one place
/// (`NSPersistentContainer`).
///
/// ```swift
/// let container = PersistentContainer(name: "Notes", managedObjectModel: model)
/// try container.loadPersistentStores()        // Notes.sqlite under defaultDirectoryURL()
///
/// try await container.performBackgroundTask { context in
///     let note = context.insertNewObject(forEntityName: "Note")
///     note.setValue("Hello", forKey: "title")
///     try context.save()
/// }
///
/// try container.shutdown(timeout: .seconds(10))   // waits for saves in flight, then closes the stores
/// ```
///
/// The container knows the work in flight on the contexts it makes — ``viewContext``, the contexts
/// of ``newBackgroundContext()`` and ``performBackgroundTask(_:)->()``:
/// blocks submitted with `perform` and not yet finished, and saves under way. ``shutdown(timeout:)-1wk1w``
/// waits for that work and then closes the stores, so a program can stop without losing a save it
/// started; ``waitsForSavesAtExit(timeout:)`` does the same when the program exits, and the
/// container's `Service` conformance (swift-service-lifecycle) does it on SIGTERM. Contexts made
/// by hand on ``persistentStoreCoordinator`` are not counted.
///
/// The container is `Sendable`: use it from any thread.
public final class PersistentContainer: Sendable, CustomStringConvertible {
    /// The container's name: the default store file is `name.sqlite`, and contexts' names start with it.
    public let name: String
    /// The model of every store.
    public let managedObjectModel: ManagedObjectModel
    /// The coordinator the container's contexts and stores share.
    public let persistentStoreCoordinator: PersistentStoreCoordinator

    /// Work in flight on the background contexts (and the background tasks).
    let backgroundActivity = ActivityTracker()
    /// Work in flight on the view context, counted apart because it runs on the main queue: a
    /// caller that holds the main queue cannot wait for it.
    let viewActivity = ActivityTracker()

    struct State {
        var descriptions: [PersistentStoreDescription]
        var lifecycle = ContainerLifecycle()
        var viewContext: ManagedObjectContext?
        /// Every background context made, weakly: those that are gone are dropped when the list
        /// reaches `backgroundContextsPruneCount`, which is then twice what is left (at least 16),
        /// so that making a context costs the same however many are alive.
        var backgroundContexts: [WeakContext] = []
        var backgroundContextsPruneCount = 16
        var backgroundContextCount = 0
        var shutdownTimeout: Duration = .seconds(10)
    }

    final class WeakContext: @unchecked Sendable {  // the reference is set once in init, read under the container's mutex
        weak var context: ManagedObjectContext?
        init(_ context: ManagedObjectContext) { self.context = context }
    }

    let state: Protected<State>

    /// A container for a model, with one SQLite store description at
    /// `defaultDirectoryURL()/name.sqlite`. Nothing is opened until ``loadPersistentStores()``.
    ///
    /// ```swift
    /// let container = PersistentContainer(name: "Notes", managedObjectModel: model)
    /// ```
    ///
    /// `logger`, `metricsFactory` and `tracer` go to its coordinator (see
    /// ``PersistentStoreCoordinator/init(managedObjectModel:name:logger:metricsFactory:tracer:)``).
    public init(
        name: String, managedObjectModel: ManagedObjectModel, logger: Logger = Logger(label: "objectgraph"),
        metricsFactory: (any MetricsFactory)? = nil, tracer: (any Tracer)? = nil
    ) {
        self.name = name
        self.managedObjectModel = managedObjectModel
        self.persistentStoreCoordinator = PersistentStoreCoordinator(
            managedObjectModel: managedObjectModel, name: name, logger: logger, metricsFactory: metricsFactory, tracer: tracer)
        let url = Self.defaultDirectoryURL().appendingPathComponent("\(name).sqlite")
        self.state = Protected(State(descriptions: [PersistentStoreDescription(url: url)]))
    }

    public var description: String {
        let (count, phase) = state.withLock { ($0.lifecycle.stores.count, $0.lifecycle.phase) }
        return "PersistentContainer(\(name), \(count) stores loaded\(phase == .open ? "" : ", \(phase)"))"
    }

    /// How the stores are added by ``loadPersistentStores()``: by default one SQLite store at
    /// `defaultDirectoryURL()/name.sqlite`. Set it before loading.
    ///
    /// ```swift
    /// let description = PersistentStoreDescription(url: url)
    /// description.durability = .normal
    /// container.persistentStoreDescriptions = [description]
    /// ```
    public var persistentStoreDescriptions: [PersistentStoreDescription] {
        get { state.withLock { $0.descriptions } }
        set { state.withLock { $0.descriptions = newValue } }
    }

    /// The time limit of the shutdown the container runs as a `Service` when graceful shutdown
    /// begins (10 seconds unless set).
    public var shutdownTimeout: Duration {
        get { state.withLock { $0.shutdownTimeout } }
        set { state.withLock { $0.shutdownTimeout = newValue } }
    }

    // MARK: - Default location

    /// The folder the default store description points into, created when the stores are loaded.
    ///
    /// On Linux and other Unix systems: `$XDG_DATA_HOME/<program name>` when `XDG_DATA_HOME` is an
    /// absolute path, else `~/.local/share/<program name>` (the XDG base directory rules). On Apple's
    /// systems: the user's Application Support folder, as Core Data.
    ///
    /// ```swift
    /// PersistentContainer.defaultDirectoryURL()   // /home/ada/.local/share/notes-server
    /// ```
    public static func defaultDirectoryURL() -> URL {
        #if canImport(Darwin)
        return FileManager.default.urls(for: .applicationSupportDirectory, in: .userDomainMask)[0]
        #else
        return defaultDirectoryURL(
            environment: ProcessInfo.processInfo.environment,
            home: FileManager.default.homeDirectoryForCurrentUser,
            programName: ProcessInfo.processInfo.processName)
        #endif
    }

    /// The XDG rule of ``defaultDirectoryURL()``, with its inputs spelled out (for tests).
    static func defaultDirectoryURL(environment: [String: String], home: URL, programName: String) -> URL {
        let base: URL
        if let data = environment["XDG_DATA_HOME"], data.hasPrefix("/") {
            base = URL(fileURLWithPath: data, isDirectory: true)
        } else {
            base = home.appendingPathComponent(".local/share", isDirectory: true)
        }
        let folder = programName.isEmpty ? "ObjectGraph" : programName.replacingOccurrences(of: "/", with: "_")
        return base.appendingPathComponent(folder, isDirectory: true)
    }

    // MARK: - Loading

    /// Adds a store for each of ``persistentStoreDescriptions``, in order, and returns when all are
    /// added. A description whose store is already added is skipped.
    ///
    /// ```swift
    /// try container.loadPersistentStores()
    /// ```
    ///
    /// The folder of a writable file store is created if needed. ``PersistentStoreDescription/shouldAddStoreAsynchronously``
    /// does not apply: this form always waits.
    ///
    /// - Throws: the first failure, as ``PersistentStoreCoordinator/addPersistentStore(type:configuration:at:options:)``
    ///   reports it (``ObjectGraphError/incompatibleModel``, ``ObjectGraphError/notADatabase``,
    ///   ``ObjectGraphError/io``, ...); the stores added before it stay added, the ones after it are
    ///   not tried. ``PersistentContainerError/shutDown`` after ``shutdown(timeout:)-1wk1w``.
    public func loadPersistentStores() throws {
        for description in persistentStoreDescriptions {
            try load(description)
        }
    }

    /// Adds a store for each of ``persistentStoreDescriptions`` and calls `completionHandler` once
    /// for each, with the error if it failed (Core Data's form).
    ///
    /// ```swift
    /// container.loadPersistentStores { description, error in
    ///     if let error { fatalError("Cannot open \(description): \(error)") }
    /// }
    /// ```
    ///
    /// A description with ``PersistentStoreDescription/shouldAddStoreAsynchronously`` is added on a
    /// background queue and its handler is called there, after `loadPersistentStores` returned;
    /// the others are added, and their handlers called, on the calling thread before it returns.
    public func loadPersistentStores(
        completionHandler: @escaping @Sendable (PersistentStoreDescription, (any Error)?) -> Void
    ) {
        for description in persistentStoreDescriptions {
            if description.shouldAddStoreAsynchronously {
                DispatchQueue.global(qos: .userInitiated).async { [self] in
                    completionHandler(description, loadError(description))
                }
            } else {
                completionHandler(description, loadError(description))
            }
        }
    }

    private func loadError(_ description: PersistentStoreDescription) -> (any Error)? {
        do {
            try load(description)
            return nil
        } catch {
            return error
        }
    }

    private func load(_ description: PersistentStoreDescription) throws {
        let key = ObjectIdentifier(description)
        switch state.withLock({ $0.lifecycle.beginLoading(key) }) {
        case .add: break
        case .alreadyLoaded: return
        case .refuse: throw shutDownError("loadPersistentStores()")
        }
        let store: PersistentStore
        do {
            let (type, url, configuration, options) = (description.type, description.url, description.configuration, description.optionsForAdding)
            if let url, [.sqlite, .binary, .xml].contains(type), !description.isReadOnly {
                try createFolder(for: url)
            }
            store = try persistentStoreCoordinator.addPersistentStore(
                type: type, configuration: configuration, at: url, options: options)
        } catch {
            _ = state.withLock { $0.lifecycle.finishLoading(key, store: nil) }
            throw error
        }
        if !state.withLock({ $0.lifecycle.finishLoading(key, store: store) }) {
            try? persistentStoreCoordinator.removePersistentStore(store)
            throw shutDownError("loadPersistentStores()")
        }
    }

    private func createFolder(for url: URL) throws {
        let folder = url.deletingLastPathComponent()
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: folder.path, isDirectory: &isDirectory), isDirectory.boolValue { return }
        do {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        } catch {
            throw ObjectGraphError(
                .io, "Cannot create the folder \(folder.path) for the store of container '\(name)': \(error.localizedDescription)",
                url: url)
        }
    }

    // MARK: - Contexts

    /// The main-queue context, on the coordinator (made on first use).
    ///
    /// ```swift
    /// let notes = try container.viewContext.fetch(request)   // on the main queue / main actor
    /// ```
    ///
    /// As in Core Data, it does not merge other contexts' saves unless you set
    /// ``ManagedObjectContext/automaticallyMergesChangesFromParent``.
    public var viewContext: ManagedObjectContext {
        state.withLock { state in
            if let context = state.viewContext { return context }
            let context = ManagedObjectContext(concurrencyType: .mainQueue)
            context.name = "\(name).viewContext"
            context.persistentStoreCoordinator = persistentStoreCoordinator
            context.activityTracker = viewActivity
            state.viewContext = context
            return context
        }
    }

    /// A new private-queue context on the coordinator, whose work the container waits for at shutdown.
    ///
    /// ```swift
    /// let context = container.newBackgroundContext()
    /// context.perform {
    ///     // insert, then
    ///     try? context.save()
    /// }
    /// ```
    ///
    /// It is a programmer error to call it after ``shutdown(timeout:)-1wk1w`` closed the stores:
    /// the process stops with a message naming the container.
    public func newBackgroundContext() -> ManagedObjectContext {
        guard let context = makeBackgroundContext() else {
            fatalError(shutDownError("newBackgroundContext()").message)
        }
        return context
    }

    /// Runs a block on a new private-queue context, asynchronously.
    ///
    /// ```swift
    /// container.performBackgroundTask { context in
    ///     let note = context.insertNewObject(forEntityName: "Note")
    ///     note.setValue("Imported", forKey: "title")
    ///     do { try context.save() } catch { log(error) }
    /// }
    /// ```
    ///
    /// It is a programmer error to call it after ``shutdown(timeout:)-1wk1w`` closed the stores:
    /// the process stops with a message naming the container (the `async` form throws instead).
    ///
    /// The context is ephemeral, as Core Data's: once the block has run, it forgets its objects and
    /// any change left unsaved, and goes away with them. Work the block sends to the context with
    /// `perform` runs after that, on a context with no objects.
    public func performBackgroundTask(_ block: @escaping @Sendable (ManagedObjectContext) -> Void) {
        let context = newBackgroundContext()
        context.perform {
            block(context)
            context.discardAfterTask()
        }
    }

    /// Runs a block on a new private-queue context and returns its result.
    ///
    /// ```swift
    /// let count = try await container.performBackgroundTask { context in
    ///     try context.count(for: FetchRequest<ManagedObject>(entityName: "Note"))
    /// }
    /// ```
    ///
    /// The context is ephemeral, as Core Data's: once the block has run, it forgets its objects and
    /// any change left unsaved (a failed save's among them), and goes away with them.
    ///
    /// - Throws: what the block throws; ``PersistentContainerError/shutDown`` when the container was
    ///   shut down (the block does not run).
    public func performBackgroundTask<T: Sendable>(
        _ block: @escaping @Sendable (ManagedObjectContext) throws -> T
    ) async throws -> T {
        guard let context = makeBackgroundContext() else { throw shutDownError("performBackgroundTask(_:)") }
        return try await context.perform(schedule: .enqueued) {
            defer { context.discardAfterTask() }
            return try block(context)
        }
    }

    /// A counted private-queue context, or nil when the container is closed.
    private func makeBackgroundContext() -> ManagedObjectContext? {
        state.withLock { state -> ManagedObjectContext? in
            guard state.lifecycle.acceptsWork else { return nil }
            state.backgroundContextCount += 1
            let context = ManagedObjectContext(concurrencyType: .privateQueue)
            context.name = "\(name).background.\(state.backgroundContextCount)"
            context.persistentStoreCoordinator = persistentStoreCoordinator
            context.activityTracker = backgroundActivity
            if state.backgroundContexts.count >= state.backgroundContextsPruneCount {
                state.backgroundContexts.removeAll { $0.context == nil }
                state.backgroundContextsPruneCount = max(16, 2 * state.backgroundContexts.count)
            }
            state.backgroundContexts.append(WeakContext(context))
            return context
        }
    }

    func shutDownError(_ operation: String) -> PersistentContainerError {
        PersistentContainerError(
            .shutDown,
            "ObjectGraph: \(operation) on container '\(name)', which was shut down: its stores are closed and it takes no new work",
            containerName: name)
    }
}
