import Foundation

// A context reads from and saves into its *parent store*: the coordinator for a root context, the
// parent context for a child (Core Data's own model: both are an `NSPersistentStoreCoordinator`-like
// "parent object store"). One protocol stands for both, so a context has one fault path, one fetch
// path with its pending-changes overlay, one save path and one conflict loop, and never asks which
// parent it has.
//
//     context ──reads/saves──▶ ParentStore ◀── PersistentStoreCoordinator (row cache, then the stores)
//                                          ◀── ManagedObjectContext       (its view: its parent's, with its changes)
//
// Every call is made on the requesting context's queue; a context parent answers on its own queue
// (the requester waits, recorded as entered so that work coming back down runs inline).

/// What a context reads from and saves into.
protocol ParentStore: AnyObject, Sendable {
    /// Objects as the parent store has them, by the IDs asked for; absent when they do not exist
    /// there. With `leasing`, rows of the coordinator's row cache come with a reference each in
    /// the result's ``RowLeases``, for the requester to claim.
    func snapshots(for ids: [ManagedObjectID], maximumAge: Double?, leasing: Bool, requester: StoreRequester) throws -> ViewedSnapshots

    /// The destinations of a to-many relationship for several sources, as the parent store has them.
    func destinations(of relationship: RelationshipDescription, for sources: [ManagedObjectID], requester: StoreRequester) throws
        -> [ManagedObjectID: [ManagedObjectID]]

    /// The rows a fetch matches, ordered and paged as asked when ``FetchedRows/isOrdered``. With
    /// `leasing`, rows read from the stores are registered in the row cache with a reference each,
    /// in the result's leases.
    func rows(_ request: StoreFetchRequest, leasing: Bool, requester: StoreRequester) throws -> FetchedRows

    /// The rows a fetch matches as the stores have them, with their values, without any context's
    /// unsaved changes (dictionary results, as in Core Data): the coordinator reads its stores, in
    /// the requester's query generation when it has one; a parent context asks its own parent store.
    func savedRows(_ request: StoreFetchRequest, requester: StoreRequester) throws -> [StoreRow]

    /// The keys (and entity codes) of the rows a fetch matches in each store, ordered and paged in
    /// each, without any context's unsaved changes (batched fetches), read as ``savedRows(_:requester:)``.
    func savedKeys(_ request: StoreFetchRequest, requester: StoreRequester) throws -> [(PersistentStore, [Int64], [Int32])]

    /// How many rows a fetch matches (limit and offset applied).
    func count(_ request: StoreFetchRequest, requester: StoreRequester) throws -> Int

    /// Permanent IDs for temporary ones (each with the store it is assigned to, if any), given by
    /// the coordinator and handed to every context of the requester's chain.
    func permanentIDs(for ids: [ManagedObjectID], assignments: [ManagedObjectID: PersistentStore], requester: StoreRequester) throws
        -> PermanentIDGrant

    /// Saves a context's changes: into the stores (one transaction per store) or into a parent
    /// context (all or nothing).
    ///
    /// - Throws: `VersionConflictError` when objects changed since the requester read them (nothing
    ///   is saved), `ConstraintConflictError` for uniqueness conflicts, store errors.
    func save(_ request: ContextSaveRequest, requester: StoreRequester) throws -> ContextSaveResult

    /// The permanent ID the coordinator gave a temporary ID in the requester's chain, if any.
    func permanentID(forTemporary id: ManagedObjectID) -> ManagedObjectID?

    /// Whether a temporary ID can name an object of the parent store (an ancestor's unsaved insert).
    var resolvesTemporaryIDs: Bool { get }

    /// Whether an object the parent store no longer has may be written again by a merge policy
    /// that keeps the context's version (the store: yes, as a new row under its ID; a parent
    /// context: no, its delete stands).
    var reinsertsDeletedObjects: Bool { get }

    /// How a conflict with the parent store is described in errors.
    func describeConflict(_ conflict: VersionConflict, requester: StoreRequester) -> String

    /// How conflicts with the parent store are summed up in a save's error: `optimistic locking
    /// failures` (the store), `conflicts with parent context 'name'`.
    var conflictSummary: String { get }

    /// How the parent store is named in a context's messages: `a persistent store coordinator`,
    /// `the parent 'name'`.
    var nameInMessages: String { get }

    /// Takes a context whose parent store this has become: a parent context checks the chain
    /// (no cycle, at most ``ManagedObjectContext/maximumNestingDepth`` deep), records the child,
    /// and hands it the container work it belongs to; the coordinator has nothing to record.
    func adopt(_ child: ManagedObjectContext)

    /// Lets go of a context that no longer has this parent store.
    func release(_ child: ManagedObjectContext)

    /// The coordinator behind the parent store: the coordinator itself, or a parent context's
    /// (nil while that context has none).
    var coordinatorBehind: PersistentStoreCoordinator? { get }

    /// Hands a save the requester made into this store to the contexts that follow the store's
    /// saves: the coordinator calls its subscribers (``followSaves(_:)``); a parent context has
    /// done it already, as it took the save (its children that merge automatically follow).
    func announceSave(_ changes: ManagedObjectContext.SaveChanges, from requester: StoreRequester)

    /// Subscribes a context that merges automatically to the saves other contexts make into this
    /// store, `handler` getting each save and the identity of the context that made it: the
    /// coordinator gives a subscription; a parent context gives none (it hands its children what
    /// they follow itself, as it saves, merges or takes a child's save).
    func followSaves(_ handler: @escaping @Sendable (ManagedObjectContext.SaveChanges, ObjectIdentifier) -> Void)
        -> PersistentStoreCoordinator.SaveSubscription?

    /// The query generation a token pins for the requester: the coordinator pins the stores'
    /// versions of now (``QueryGenerationToken/current``) or finds the live generation the token
    /// names. It is a programmer error to pin a context whose parent store is a parent context: a
    /// child reads its parent, which is pinned instead.
    ///
    /// - Throws: ``ObjectGraphError/unsupported`` when no context of the coordinator holds the
    ///   token's generation any more; what a store throws opening its reader.
    func pinnedGeneration(for token: QueryGenerationToken, requester: StoreRequester) throws -> QueryGeneration
}

/// Who asks a parent store, as the parent store needs to know it: a value made on the requester's
/// queue, so that neither the coordinator nor a parent context calls back into the requesting
/// context.
struct StoreRequester: Sendable {
    /// The requesting context's identity: a parent context does not hand a child's save back to it.
    let context: ObjectIdentifier
    /// The requesting context's scheduler, which a parent context records as entered while it
    /// answers: work it hands back down then runs inline.
    let scheduler: ContextScheduler
    /// The context's number, which names it in messages when it has no name.
    let number: Int
    /// The context's ``ManagedObjectContext/name``, recorded in persistent history.
    let name: String?
    /// The context's ``ManagedObjectContext/transactionAuthor``, recorded in persistent history.
    let transactionAuthor: String?
    /// The query generation the requester reads: nil when it is not pinned, or while it saves.
    let generation: QueryGeneration?

    /// The context's name in messages.
    var debugName: String { name ?? "context \(number)" }

    /// Runs store reads made for the requester in its query generation (if it has one).
    func reading<T>(_ body: () throws -> T) rethrows -> T {
        guard let generation else { return try body() }
        return try generation.reading(body)
    }

    /// Runs `body` on `parent`'s queue and waits for it. The requester stays recorded as entered,
    /// so work the parent sends back down to it runs inline rather than waiting for its queue.
    func waiting<T>(on parent: ManagedObjectContext, _ body: () throws -> T) rethrows -> T {
        try EnteredContexts.with(scheduler) { try parent.performAndWait(body) }
    }
}

/// Permanent IDs a parent store gives for temporary ones.
struct PermanentIDGrant {
    var mapping: [ManagedObjectID: ManagedObjectID]
    /// Whether the contexts of the requester's chain have them already: a parent context hands
    /// them down its chain before it answers; the coordinator's come straight from the stores, for
    /// the requester (its chain's root) to hand down.
    var isHandedDown: Bool
}
