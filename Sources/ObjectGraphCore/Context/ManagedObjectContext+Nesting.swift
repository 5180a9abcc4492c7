import Dispatch
import Foundation
import Synchronization

// Parent and child contexts: a child reads through its parent and saves into it.
//
// A child context sees the world through its parent: its faults fill from the parent's objects as
// the parent has them (unsaved changes included), falling back through the chain to the
// coordinator's row cache and the store; its fetches match the parent chain's unsaved inserts,
// updates and deletes; its save pushes its changes into the parent, which then has them unsaved.
// Only the context at the top of the chain, on the coordinator, writes the store.
//
// Calls go up the chain synchronously (`performAndWait` on the parent's queue, with the child
// recorded as entered so that a call coming back down runs inline), and never down: a parent
// reaches its children only asynchronously (`perform`), or inline when the child's block is
// already running further up the same thread's stack. Up-only waiting is what keeps chains of any
// depth and any mix of queues free of deadlock.

/// What a context keeps for nesting: its children (weakly), work waiting for a confinement child,
/// and the autosave timer.
final class NestingState: Sendable {
    final class WeakContext: Sendable {
        weak let context: ManagedObjectContext?
        init(_ context: ManagedObjectContext) { self.context = context }
    }

    struct Autosave {
        var timer: (any DispatchSourceTimer)?
        var onError: (@Sendable (any Error) -> Void)?
        /// Whether an autosave block is waiting on the context's queue (ticks do not pile up).
        var isPending = false
    }

    private let childReferences = Protected<[WeakContext]>([])
    /// `automaticallyMergesChangesFromParent`, readable from the parent's queue.
    let mergesFromParent = Atomic<Bool>(false)
    private let mailbox = Protected<[@Sendable (ManagedObjectContext) -> Void]>([])
    let hasMail = Atomic<Bool>(false)
    let autosave = Protected(Autosave())
    /// At the root of a chain: every permanent ID it gave, by temporary ID, so that any context of
    /// the chain resolves a temporary ID it never saw without a trip up the chain.
    let permanentIDs = Protected(IDAliases())

    deinit {
        autosave.withLock { $0.timer?.cancel() }
    }

    /// The children still alive.
    var children: [ManagedObjectContext] {
        childReferences.withLock { references in
            references.removeAll { $0.context == nil }
            return references.compactMap(\.context)
        }
    }

    func addChild(_ child: ManagedObjectContext) {
        childReferences.withLock { references in
            if !references.contains(where: { $0.context === child }) { references.append(WeakContext(child)) }
        }
    }

    func removeChild(_ child: ManagedObjectContext) {
        childReferences.withLock { $0.removeAll { $0.context == nil || $0.context === child } }
    }

    /// Leaves work for a confinement context, run on its thread at its next entry point.
    func post(_ work: @escaping @Sendable (ManagedObjectContext) -> Void) {
        mailbox.withLock { $0.append(work) }
        hasMail.store(true, ordering: .releasing)
    }

    func takeMail() -> [@Sendable (ManagedObjectContext) -> Void] {
        mailbox.withLock { mail in
            hasMail.store(false, ordering: .relaxed)
            defer { mail = [] }
            return mail
        }
    }
}

extension ManagedObjectContext {
    // MARK: - The chain

    /// How many contexts a chain may hold, from the root to the deepest child.
    public static let maximumNestingDepth = 100

    /// Leaves the parent store the context had and joins the one it has now.
    func parentStoreDidChange(from oldStore: (any ParentStore)?) {
        let newStore = configuredParentStore
        guard oldStore !== newStore else { return }
        oldStore?.release(self)
        newStore?.adopt(self)
    }

    /// Stops the program when `parent` cannot take the context as a child: the chain would hold
    /// a cycle, or be more than ``maximumNestingDepth`` contexts deep.
    func checkChain(under parent: ManagedObjectContext) {
        var ancestor: ManagedObjectContext? = parent
        var depth = 1
        while let context = ancestor {
            depth += 1
            if depth > Self.maximumNestingDepth {
                fatalError("""
                    ObjectGraph: context '\(debugName)' cannot be a child of '\(parent.debugName)': the chain would be more than \
                    \(Self.maximumNestingDepth) contexts deep (ObjectGraph's limit: every read and save walks the whole chain)
                    """)
            }
            if context === self {
                fatalError("ObjectGraph: context '\(debugName)' cannot be the parent of '\(parent.debugName)', which is its own ancestor: a chain of contexts must end at a context on a coordinator")
            }
            ancestor = context.parent
        }
    }

    /// The context's children, grandchildren and so on, parents before their children.
    var descendants: [ManagedObjectContext] {
        var result: [ManagedObjectContext] = []
        var level = nesting.children
        while !level.isEmpty {
            result += level
            level = level.flatMap(\.nesting.children)
        }
        return result
    }

    /// Runs work on the context's queue: now when the caller may use the context (its block is
    /// running further up this thread), else after the blocks already submitted (`perform`); a
    /// confinement context on another thread runs it at its next save, fetch or `perform`.
    func deliver(_ work: @escaping @Sendable (ManagedObjectContext) -> Void) {
        switch scheduler.delivery {
        case .now: work(self)
        case .enqueued: enqueue { work(self) }
        case .mail: nesting.post(work)
        }
    }

    /// Runs the work left for a confinement context by its ancestors.
    func deliverMailIfNeeded() {
        guard nesting.hasMail.load(ordering: .acquiring) else { return }
        for work in nesting.takeMail() { work(self) }
    }

    // MARK: - Ancestors' inserted objects

    /// An ancestor's inserted object, seen in a child under its temporary ID, has destinations
    /// outside the child: its to-many relationships load from the parent when used, rather than
    /// starting empty as a new object's do.
    func restoreUnloadedToManyRelationships(of object: ManagedObject) {
        guard parentStore.resolvesTemporaryIDs, object.objectID.isTemporaryID, !object.isInserted, !object.isFault else { return }
        object.markMissingToManyRelationshipsUnloaded()
    }

    /// ``restoreUnloadedToManyRelationships(of:)`` for every registered object.
    func restoreUnloadedToManyRelationships() {
        guard parentStore.resolvesTemporaryIDs else { return }
        for object in liveObjects where object.objectID.isTemporaryID {
            restoreUnloadedToManyRelationships(of: object)
        }
    }

    // MARK: - Permanent IDs down the chain

    /// Hands permanent IDs given by the coordinator to every descendant (parents first); each adopts
    /// them on its own queue before running any block submitted after this call. The chain's root
    /// keeps them for the chain's `permanentID(forTemporary:)`.
    func propagatePermanentIDs(_ mapping: [ManagedObjectID: ManagedObjectID]) {
        guard !mapping.isEmpty else { return }
        rootContext.rememberPermanentIDs(mapping)
        for descendant in descendants {
            descendant.deliver { $0.adoptPermanentIDs(mapping) }
        }
    }

    /// Keeps permanent IDs the coordinator gave this context, the root of its chain, for the
    /// chain's `permanentID(forTemporary:)`.
    func rememberPermanentIDs(_ mapping: [ManagedObjectID: ManagedObjectID]) {
        nesting.permanentIDs.withLock { $0.add(mapping) }
    }

    /// The permanent ID the chain's root gave to a temporary ID this context never saw (the ID
    /// itself when none was given), remembered as an alias.
    func permanentIDKnownAbove(_ id: ManagedObjectID) -> ManagedObjectID {
        guard let permanent = parentStore.permanentID(forTemporary: id) else { return id }
        aliases.add(id, permanent)
        return permanent
    }

    /// The context on the coordinator at the top of the chain.
    var rootContext: ManagedObjectContext {
        var context = self
        while let parent = context.parent { context = parent }
        return context
    }

    /// Re-registers objects under permanent IDs and rewrites the references to them (values,
    /// snapshots, to-many relationships), keeping the temporary IDs as aliases so that they still
    /// resolve here (as the root keeps those of the objects it saves).
    func adoptPermanentIDs(_ mapping: [ManagedObjectID: ManagedObjectID]) {
        guard !mapping.isEmpty else { return }
        for object in liveObjects where !object.isFault {
            object.remapObjectIDs(mapping)
            for value in object.toMany.values {
                let mentioned = value.ids.contains { mapping[$0] != nil } || value.added.contains { mapping[$0] != nil }
                    || value.removed.contains { mapping[$0] != nil }
                if mentioned { value.remap { mapping[$0] } }
            }
        }
        adopt(mapping)
    }

    // MARK: - Following the parent

    /// After a save (into the store or the parent): children that merge automatically follow.
    func didSaveForNesting(_ changes: SaveChanges) {
        forwardToAutomaticallyMergingChildren(changes)
    }

    /// After a merge: children that merge automatically follow.
    func didMergeForNesting(_ changes: SaveChanges) {
        restoreUnloadedToManyRelationships()
        forwardToAutomaticallyMergingChildren(changes)
    }

    /// Has each child with `automaticallyMergesChangesFromParent` merge changes this context now
    /// shows, on the child's queue. The changes carry this context's view of the objects, read
    /// here and now, so that the child's merge never waits on this context's queue (a child merging
    /// while this context's queue waits for the child would deadlock).
    func forwardToAutomaticallyMergingChildren(_ changes: SaveChanges, except excluded: ObjectIdentifier? = nil) {
        guard !changes.isEmpty else { return }
        let followers = nesting.children.filter { ObjectIdentifier($0) != excluded && $0.nesting.mergesFromParent.load(ordering: .relaxed) }
        guard !followers.isEmpty else { return }
        let changed = Array(changes.insertedObjectIDs.union(changes.updatedObjectIDs))
        let views = (try? viewSnapshots(for: changed, maximumAge: nil, leasing: false).snapshots) ?? [:]
        let seen = SaveChanges(
            inserted: changes.insertedObjectIDs, updated: changes.updatedObjectIDs, deleted: changes.deletedObjectIDs,
            changedKeys: changes.changedKeys, snapshots: views, source: self)
        for child in followers {
            child.deliver { $0.mergeChanges(seen) }
        }
    }
}
