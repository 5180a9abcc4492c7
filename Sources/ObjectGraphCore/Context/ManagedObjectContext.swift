import Dispatch
import Foundation
import Synchronization

/// A scratchpad of objects on one queue: it fetches them, tracks their changes and saves them
/// (`NSManagedObjectContext`).
///
/// ```swift
/// let context = ManagedObjectContext(concurrencyType: .privateQueue)
/// context.persistentStoreCoordinator = coordinator
/// try context.performAndWait {
///     let note = context.insertNewObject(forEntityName: "Note")
///     note.setValue("Hello", forKey: "title")
///     try context.save()
/// }
/// ```
///
/// A context belongs to one queue: a `.privateQueue` context owns a serial queue, a `.mainQueue`
/// context runs on the main queue (the main actor), a `.confinement` context belongs to the thread
/// that created it. Apart from ``perform(_:)``, ``performAndWait(_:)``, the locking methods, ``name``
/// and the configuration done before the context's first object work (``parent``,
/// ``persistentStoreCoordinator``, set right after `init` or inside the first `performAndWait`),
/// every method must be called on the context's queue.
///
/// It is a programmer error to call a context, or use one of its objects, from another queue: the
/// process stops with a message naming the context, its queue and the calling thread (always in
/// debug builds; in release builds when `OBJECTGRAPH_CONCURRENCY_DEBUG=1`).
public final class ManagedObjectContext: @unchecked Sendable, CustomStringConvertible {
    // @unchecked Sendable: every mutable property is used only on the context's queue (checked at
    // run time by `assertOnQueue`), except configuration set before the first object work (right
    // after init, or on the queue in the first performAndWait), and `name`, which is `Protected`.

    /// How a context is tied to a queue.
    public enum ConcurrencyType: Sendable, Hashable {
        /// The context runs on the main queue (the main actor).
        case mainQueue
        /// The context owns a private serial queue; use it through `perform` and `performAndWait`.
        case privateQueue
        /// The context belongs to the thread that created it (Core Data's legacy type).
        case confinement

        public static let mainQueueConcurrencyType = ConcurrencyType.mainQueue
        public static let privateQueueConcurrencyType = ConcurrencyType.privateQueue
        public static let confinementConcurrencyType = ConcurrencyType.confinement
    }

    /// When an `async` `perform` runs its block.
    public enum ScheduledTaskType: Sendable {
        /// Inline if the caller is already on the context's queue, otherwise enqueued.
        case immediate
        /// Always enqueued after the blocks already submitted.
        case enqueued
    }

    public let concurrencyType: ConcurrencyType
    /// The context's name, used in messages, logs and persistent history. It can be set at any
    /// time, from any thread, as in Core Data. An unnamed context is called by its number
    /// (`context 7`) in messages.
    public var name: String? {
        get { _name.withLock { $0 } }
        set { _name.withLock { $0 = newValue } }
    }
    private let _name = Protected<String?>(nil)
    /// The coordinator of a root context. Set it before the context's first object work (a fetch,
    /// an insert, a save, `object(with:)`): right after `init`, or inside the context's first
    /// `performAndWait`, as Core Data allows.
    ///
    /// It is a programmer error to set it once the context did object work, or to replace the
    /// coordinator or parent the context has.
    public var persistentStoreCoordinator: PersistentStoreCoordinator? {
        get { configuredParentStore?.coordinatorBehind }
        set {
            checkConfigurable("persistentStoreCoordinator", setting: newValue)
            rootCoordinator = newValue
            // Set after automaticallyMergesChangesFromParent: the context follows its coordinator's saves now.
            if automaticallyMergesChangesFromParent { followCoordinatorSaves(true) }
        }
    }
    /// The parent of a child context: saving pushes changes into it rather than a store, and
    /// fetches and faults see its unsaved changes (see <doc:NestedContexts>). Set it before the
    /// context's first object work, as ``persistentStoreCoordinator``. A parent must be a
    /// queue-based context.
    ///
    /// It is a programmer error to set it once the context did object work, to replace the parent
    /// or coordinator the context has, to make a context its own ancestor, or to nest contexts more
    /// than ``maximumNestingDepth`` deep.
    public var parent: ManagedObjectContext? {
        willSet { checkConfigurable("parent", setting: parentStore(withParent: newValue)) }
        didSet { parentStoreDidChange(from: parentStore(withParent: oldValue)) }
    }

    /// Whether firing a fault whose row no longer exists turns the object into a deleted object
    /// with default values (true), or stops the program with a message (false, the default).
    public var shouldDeleteInaccessibleFaults = false
    /// How old (seconds) a row-cache snapshot may be for a fault to use it; 0 always reads the
    /// store, a negative value (the default) accepts any age.
    public var stalenessInterval: Double = -1
    /// Whether every registered object is kept alive by the context (false, the default: only
    /// changed ones are, and unchanged objects go away when the program drops them).
    ///
    /// An object keeps its context alive too, so a context that retains its objects, and the
    /// objects, stay alive together until ``reset()``, even once the program holds neither. Reset a
    /// long-lived context when done with its objects; the context of a background task
    /// (``PersistentContainer/performBackgroundTask(_:)->_``) forgets them when its block ends.
    public var retainsRegisteredObjects = false {
        didSet {
            guard retainsRegisteredObjects != oldValue else { return }
            if retainsRegisteredObjects {
                retained.formUnion(liveObjects)
            } else {
                retained = insertedObjects.union(updatedObjects).union(deletedObjects)
            }
        }
    }
    /// Who the context's saves and batch requests are recorded as in persistent history
    /// (``PersistentHistoryTransaction/author``), with its ``name`` as the transaction's context name.
    public var transactionAuthor: String?
    /// How conflicts found at save are resolved: ``MergePolicy/error`` (the default) throws.
    public var mergePolicy: MergePolicy = .error
    /// Records the context's changes for ``undo()`` and ``redo()``; nil (the default) records
    /// nothing, at no cost. See <doc:Undo>.
    ///
    /// ```swift
    /// context.undoManager = ObjectGraph.UndoManager()
    /// ```
    public var undoManager: UndoManager? {
        didSet {
            if isUndoGroupOpen { oldValue?.endUndoGrouping() }
            isUndoGroupOpen = false
        }
    }
    /// Whether the context opened an undo group that the next `processPendingChanges()` closes.
    var isUndoGroupOpen = false
    /// Whether the `objectsDidChangeNotification` being posted is a merge's, which
    /// `didMergeChangesObjectIDsNotification` follows at once (fetched results controllers take the
    /// two as one change).
    var isPostingMergeChanges = false
    /// Whether the context merges the saves of its parent (for a child) or, for a context on a
    /// coordinator, of the other contexts on the same coordinator, as they happen. A child also
    /// follows the pushes of its siblings into the parent, and what the parent merges.
    public var automaticallyMergesChangesFromParent = false {
        didSet {
            guard automaticallyMergesChangesFromParent != oldValue else { return }
            nesting.mergesFromParent.store(automaticallyMergesChangesFromParent, ordering: .relaxed)
            followCoordinatorSaves(automaticallyMergesChangesFromParent)
        }
    }
    /// A context on a coordinator that merges automatically: its subscription to the coordinator's saves.
    private let coordinatorSaves = Protected<PersistentStoreCoordinator.SaveSubscription?>(nil)

    /// Subscribes to (or leaves) the saves other contexts write to the coordinator; a child follows
    /// its parent instead (its parent store gives no subscription).
    private func followCoordinatorSaves(_ follows: Bool) {
        guard follows, let store = configuredParentStore else {
            coordinatorSaves.withLock { $0 = nil }
            return
        }
        let me = ObjectIdentifier(self)
        let subscription = store.followSaves { [weak self] changes, source in
            guard source != me, let self else { return }
            self.enqueue { self.mergeChanges(changes) }
        }
        coordinatorSaves.withLock { $0 = subscription }
    }

    /// Counts this context's blocks and saves in flight for its container (set right after init).
    var activityTracker: ActivityTracker?
    /// Children, mail for a confinement child and the autosave timer (`ManagedObjectContext+Nesting`).
    let nesting = NestingState()
    /// Continuations of the `saves` streams handed out.
    let saveStreams = Protected<[Int: AsyncStream<SaveChanges>.Continuation]>([:])

    /// The coordinator set on the context (a root context's); a child's is its parent's.
    private(set) var rootCoordinator: PersistentStoreCoordinator?
    /// Where the context's blocks run, and whether the caller is there.
    let scheduler: ContextScheduler
    private let recursiveLock = NSRecursiveLock()

    /// Registered objects by ID, held weakly: an object the program drops goes away, and its entry
    /// is swept here, on the context's queue (never from the thread that dropped it).
    var registered: [ManagedObjectID: WeakObject] = [:]
    /// When the identity map is next swept of entries whose objects went away.
    var identityMapSweep = IdentityMapSweep()
    /// Registered objects that went away since the last sweep, counted by their `deinit` on
    /// whatever thread dropped them (the only thing it touches here).
    let identityMapDeaths = Atomic<Int>(0)
    /// Objects kept alive while registered (changed ones, or all with `retainsRegisteredObjects`).
    var retained: Set<ManagedObject> = []
    /// Inserted objects assigned to a store with `assign(_:to:)`, by temporary ID.
    var assignedStores: [ManagedObjectID: PersistentStore] = [:]
    /// Temporary IDs of objects that got permanent ones, so old references still resolve.
    var aliases = IDAliases()
    /// The unsaved changes: inserted, updated and deleted objects, pending deletes, unreported changes.
    var changes = ChangeSet()
    /// Rows fetched as IDs with their values, held in the row cache until `reset()`.
    var pinnedRows: [ManagedObjectID] = []
    /// The query generation the context is pinned to, if any (`ManagedObjectContext+QueryGeneration`).
    var queryGeneration = ContextQueryGeneration()

    /// Whether the context was used: its configuration (``name``, ``parent``,
    /// ``persistentStoreCoordinator``) is fixed from then on.
    private let isConfigurationFrozen = Atomic<Bool>(false)
    /// The context's number, unique in the process: an unnamed context is called by it.
    let number: Int

    /// Creates a context of the given type.
    public init(concurrencyType: ConcurrencyType) {
        self.concurrencyType = concurrencyType
        self.number = Self.counter.add(1, ordering: .relaxed).newValue
        self.scheduler = ContextScheduler(concurrencyType, label: "ObjectGraph.context.\(number)")
    }

    private static let counter = Atomic<Int>(0)

    deinit {
        for continuation in saveStreams.withLock({ $0.values }) { continuation.finish() }
        // Objects keep their context alive: none is left by now but weak entries. Rows the context
        // pinned (fetched IDs, prefetching) go back to the cache.
        persistentStoreCoordinator?.rowCache.release(pinnedRows)
    }

    public var description: String { "ManagedObjectContext(\(debugName), \(concurrencyType))" }

    var debugName: String { name ?? "context \(number)" }

    /// Fixes the configuration: called by the context's first object work (a fetch, an insert, a
    /// save, `object(with:)`, a request). A `perform` block is no use by itself: Core Data's queue
    /// contexts are configured inside their first `performAndWait` too.
    @inline(__always)
    func freezeConfiguration() {
        if !isConfigurationFrozen.load(ordering: .relaxed) { isConfigurationFrozen.store(true, ordering: .relaxed) }
    }

    /// Stops the program when the parent or coordinator is set after the context did object work,
    /// or when setting `store` replaces the parent store the context has (Core Data refuses both).
    private func checkConfigurable(_ property: String, setting store: (any ParentStore)?) {
        if isConfigurationFrozen.load(ordering: .relaxed) {
            fatalError("""
                ObjectGraph: cannot set \(property) of context '\(debugName)' after it was used: a context's parent and coordinator \
                are configuration, set before its first fetch, insert, save or object(with:)
                """)
        }
        if let current = configuredParentStore, current !== store {
            fatalError("""
                ObjectGraph: cannot set \(property) of context '\(debugName)': it has \(current.nameInMessages) already, and a context's parent or \
                coordinator, once set, is not replaced (make a new context instead)
                """)
        }
    }

    var model: ManagedObjectModel? { persistentStoreCoordinator?.managedObjectModel }

    var coordinator: PersistentStoreCoordinator {
        guard let coordinator = persistentStoreCoordinator else {
            fatalError("ObjectGraph: context '\(debugName)' has no persistent store coordinator and no parent; set one right after creating it")
        }
        return coordinator
    }

    // MARK: - Queue

    /// Whether the caller runs on the context's queue.
    @inline(__always)
    var isOnQueue: Bool { scheduler.isOnQueue }

    /// Stops the program when called off the context's queue (when checks are enabled).
    @inline(__always)
    func assertOnQueue(_ operation: @autoclosure () -> String) {
        if ConcurrencyChecks.enabled && !isOnQueue { concurrencyViolation(operation(), object: nil) }
    }

    func assertOnQueue(operation: String, object: ManagedObject) {
        if !isOnQueue { concurrencyViolation(operation, object: object) }
    }

    private func concurrencyViolation(_ operation: String, object: ManagedObject?) -> Never {
        let what = object.map { "object \($0.objectID) of context '\(debugName)'" } ?? "context '\(debugName)'"
        fatalError("""
            ObjectGraph concurrency violation: \(operation) on \(what), which belongs to \(scheduler.queueDescription), \
            was called from \(ConcurrencyChecks.currentThreadDescription()). A context and its objects must be used \
            only on the context's queue: wrap the call in context.perform { } or context.performAndWait { }, and pass \
            objectIDs, not objects, between queues.
            """)
    }

    /// Runs a block asynchronously on the context's queue; blocks run in the order submitted.
    ///
    /// Pending changes are processed at the end of the block.
    public func perform(_ block: @escaping @Sendable () -> Void) {
        if !enqueue(block) { refuseWorkAfterShutdown("perform(_:)") }
    }

    /// Enqueues a block (runs it now on a confinement context's own thread); false, and nothing
    /// runs, once the context's container was shut down. ObjectGraph's own asynchronous work
    /// (autosave, permanent IDs and merges handed down a chain) goes through here and is dropped
    /// then rather than stopping the program.
    @discardableResult
    func enqueue(_ block: @escaping @Sendable () -> Void) -> Bool {
        scheduler.enqueue(countedBy: activityTracker, contextName: debugName) { [self] in
            deliverMailIfNeeded()
            block()
            endOfBlock()
        }
    }

    /// Work that leaves the queue and comes back to it (an asynchronous fetch's read): counted by
    /// the container, which waits for it before it shuts down, from now until `block` has run on
    /// the queue. Nil when the container is shutting down. Called on the queue.
    func holdForReturn() -> ReturnHold? {
        let tracker = activityTracker
        guard tracker?.blockSubmitted() != false else { return nil }
        return ReturnHold(context: self, tracker: tracker)
    }

    /// A hold ``holdForReturn()`` took: ``finish(_:)`` runs a block on the context's queue, once.
    struct ReturnHold: Sendable {
        let context: ManagedObjectContext
        let tracker: ActivityTracker?

        func finish(_ block: @escaping @Sendable () -> Void) {
            let enqueued = context.scheduler.enqueue(countedBy: nil, contextName: context.debugName) { [context, tracker] in
                context.deliverMailIfNeeded()
                block()
                context.endOfBlock()
                tracker?.blockFinished()
            }
            if !enqueued { tracker?.blockFinished() }
        }
    }

    /// Runs a block synchronously on the context's queue and returns its result. Reentrant: called
    /// from the context's queue, the block runs inline.
    public func performAndWait<T>(_ block: () throws -> T) rethrows -> T {
        if isOnQueue {
            deliverMailIfNeeded()
            let result = try block()
            endOfBlock()
            return result
        }
        return try scheduler.runAndWait(contextName: debugName) {
            let result = try block()
            endOfBlock()
            return result
        }
    }

    /// Runs a block on the context's queue and returns its result to the awaiting caller.
    ///
    /// ```swift
    /// let n = try await context.perform { try context.count(for: request) }
    /// ```
    public func perform<T: Sendable, E: Error>(
        schedule: ScheduledTaskType = .immediate, _ block: @escaping @Sendable () throws(E) -> T
    ) async throws(E) -> T {
        if schedule == .immediate && isOnQueue {
            let result = try block()
            endOfBlock()
            return result
        }
        let tracker = activityTracker
        guard tracker?.blockSubmitted() != false else { refuseWorkAfterShutdown("perform(schedule:_:)") }
        defer { tracker?.blockFinished() }
        let result = await scheduler.run { [self] in
            let result = Result<T, E> { () throws(E) -> T in try block() }
            endOfBlock()
            return result
        }
        return try result.get()
    }

    private func refuseWorkAfterShutdown(_ operation: String) -> Never {
        fatalError("ObjectGraph: \(operation) on context '\(debugName)' after its container was shut down: its stores are closed and it takes no new work")
    }

    fileprivate func endOfBlock() {
        if !changes.pendingDeletes.isEmpty || !changes.unreported.isEmpty { processPendingChanges() }
    }

    // MARK: - Locking

    /// Takes the context's lock (recursive), for a run of operations that must not interleave.
    public func lock() { recursiveLock.lock() }
    /// Releases the context's lock.
    public func unlock() { recursiveLock.unlock() }
    /// Takes the context's lock if it is free.
    public func tryLock() -> Bool { recursiveLock.try() }

    /// Whether the end of the main queue's turn will process this main-queue context's changes.
    var isMainQueueTurnScheduled = false

}
