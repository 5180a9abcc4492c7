import Dispatch
import Foundation
import Synchronization

// Parent and child contexts (DESIGN.md, concurrency point 4).
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
    let permanentIDs = Protected<[ManagedObjectID: ManagedObjectID]>([:])

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

    /// Records the context with its new parent (and leaves the old one).
    func parentDidChange(from oldValue: ManagedObjectContext?) {
        if let oldValue, oldValue !== parent { oldValue.nesting.removeChild(self) }
        guard let parent, parent !== oldValue else { return }
        var ancestor: ManagedObjectContext? = parent
        while let context = ancestor {
            if context === self {
                fatalError("ObjectGraph: context '\(debugName)' cannot be the parent of '\(parent.debugName)', which is its own ancestor: a chain of contexts must end at a context on a coordinator")
            }
            ancestor = context.parent
        }
        parent.nesting.addChild(self)
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

    /// Runs a block on the parent's queue and waits for it. The caller stays recorded as entered,
    /// so work the parent sends back down to it runs inline rather than waiting for its queue.
    func withParent<T>(_ parent: ManagedObjectContext, _ body: () throws -> T) rethrows -> T {
        try EnteredContexts.with(self) { try parent.performAndWait(body) }
    }

    /// Runs work on the context's queue: now when the caller may use the context (its block is
    /// running further up this thread), else after the blocks already submitted (`perform`); a
    /// confinement context on another thread runs it at its next save, fetch or `perform`.
    func deliver(_ work: @escaping @Sendable (ManagedObjectContext) -> Void) {
        if isOnQueue {
            work(self)
            return
        }
        switch concurrencyType {
        case .privateQueue, .mainQueue: enqueue { work(self) }
        case .confinement: nesting.post(work)
        }
    }

    /// Runs the work left for a confinement context by its ancestors.
    func deliverMailIfNeeded() {
        guard nesting.hasMail.load(ordering: .acquiring) else { return }
        for work in nesting.takeMail() { work(self) }
    }

    // MARK: - Reading through the parent

    /// An object's snapshot as this context sees it: its current values, unsaved changes included,
    /// with transformables encoded and IDs made permanent where known. The object must not be a fault.
    func viewSnapshot(of object: ManagedObject) -> Snapshot {
        var values = object.values
        for (index, value) in values.enumerated() {
            if case .objectID(let id) = value, let permanent = aliases[id] { values[index] = .objectID(permanent) }
        }
        for attribute in object.entity.attributes where attribute.attributeType == .transformable {
            let index = attribute.index
            // An unchanged value keeps its stored encoding (re-encoding could differ byte for byte).
            guard let box = object.boxed[index], object.changedIndices.contains(index) || object.snapshot == nil else { continue }
            values[index] = (try? TransformableCoding.encode(box, valueType: attribute.valueType)).map(Value.data) ?? .null
        }
        return Snapshot(entity: object.entity, version: object.snapshot?.version ?? 0, values: values)
    }

    /// A snapshot handed down the chain; a row from the row cache comes with a reference for the
    /// context that keeps it (`holdsRowCache`).
    struct ViewedSnapshot: Sendable {
        var snapshot: Snapshot
        var holdsRowCache: Bool
    }

    /// Objects as this context sees them, by the IDs asked for: its registered objects' current
    /// values, else its parent's view, else (at the root) the row cache or the store. Objects that
    /// do not exist are absent. With `retainingRows`, rows from the row cache carry a reference
    /// the caller must keep (by materializing with `holdsRowCache`) or release.
    func viewSnapshots(for ids: [ManagedObjectID], maximumAge: Double?, retainingRows: Bool) throws -> [ManagedObjectID: ViewedSnapshot] {
        var result: [ManagedObjectID: ViewedSnapshot] = [:]
        var missing: [ManagedObjectID] = []
        var seen: Set<ManagedObjectID> = []
        for id in ids where seen.insert(id).inserted {
            if let object = registered[canonical(id)]?.takeUnretainedValue(), !object.isFault {
                result[id] = ViewedSnapshot(snapshot: viewSnapshot(of: object), holdsRowCache: false)
            } else {
                missing.append(id)
            }
        }
        guard !missing.isEmpty else { return result }
        if let parent {
            let found = try withParent(parent) { try parent.viewSnapshots(for: missing, maximumAge: maximumAge, retainingRows: retainingRows) }
            result.merge(found) { mine, _ in mine }
            return result
        }
        // The root: the row cache, then the store, by permanent ID.
        let cache = coordinator.rowCache
        var unread: [ManagedObjectID: [ManagedObjectID]] = [:]
        for id in missing {
            let permanent = canonical(id)
            if permanent.isTemporaryID { continue }  // inserted nowhere above: it does not exist
            if let snapshot = cache.retainSnapshot(for: permanent, maximumAge: maximumAge) {
                // A reference is handed down only under the ID the receiver knows the object by.
                let keeps = retainingRows && permanent == id
                if !keeps { cache.release([permanent]) }
                result[id] = ViewedSnapshot(snapshot: snapshot, holdsRowCache: keeps)
            } else {
                unread[permanent, default: []].append(id)
            }
        }
        guard !unread.isEmpty else { return result }
        let fetched = try coordinator.fetchSnapshots(Array(unread.keys))
        // Each row fetched comes with one reference: handed to the requester that knows the row
        // by its permanent ID, else released.
        var release: [ManagedObjectID] = []
        for (permanent, snapshot) in fetched {
            let requesters = unread[permanent] ?? []
            let keeper = retainingRows && requesters.contains(permanent) ? permanent : nil
            for id in requesters { result[id] = ViewedSnapshot(snapshot: snapshot, holdsRowCache: id == keeper) }
            if keeper == nil { release.append(permanent) }
        }
        if !release.isEmpty { cache.release(release) }
        return result
    }

    /// Fills a fault of a child from its parent's view; false when the object does not exist there.
    func loadSnapshotFromParent(for object: ManagedObject) throws -> Bool {
        guard let parent else { return false }
        let maximumAge = stalenessInterval >= 0 ? stalenessInterval : nil
        let id = object.objectID
        let found = try withParent(parent) { try parent.viewSnapshots(for: [id], maximumAge: maximumAge, retainingRows: true) }
        guard let viewed = found[id] else { return false }
        materializeFromParent(object, viewed)
        return true
    }

    /// Fills several faults of a child with one trip up the chain.
    func fulfillFaultsFromParent(_ faults: [ManagedObject]) {
        guard let parent else { return }
        let maximumAge = stalenessInterval >= 0 ? stalenessInterval : nil
        let ids = faults.map(\.objectID)
        let found: [ManagedObjectID: ViewedSnapshot]
        do { found = try withParent(parent) { try parent.viewSnapshots(for: ids, maximumAge: maximumAge, retainingRows: true) } } catch {
            fatalError("ObjectGraph: could not fulfil \(faults.count) faults in context '\(debugName)' from its parent '\(parent.debugName)': \(error)")
        }
        for object in faults {
            if let viewed = found[object.objectID] { materializeFromParent(object, viewed) } else { inaccessibleFault(object) }
        }
    }

    /// Gives a child's fault the values its parent handed down.
    func materializeFromParent(_ object: ManagedObject, _ viewed: ViewedSnapshot) {
        guard object.isFault else {
            if viewed.holdsRowCache { coordinator.rowCache.release([object.objectID]) }
            return
        }
        materialize(object, viewed.snapshot, holdsRowCache: viewed.holdsRowCache)
        restoreUnloadedToManyRelationships(of: object)
    }

    /// An ancestor's inserted object, seen in a child under its temporary ID, has destinations
    /// outside the child: its to-many relationships load from the parent when used, rather than
    /// starting empty as a new object's do.
    func restoreUnloadedToManyRelationships(of object: ManagedObject) {
        guard parent != nil, object.objectID.isTemporaryID, !object.isInserted, !object.isFault else { return }
        for relationship in object.entity.relationships where relationship.isToMany && object.toMany[relationship.index] == nil {
            object.toMany[relationship.index] = RelationshipValue(isOrdered: relationship.isOrdered, loaded: false)
        }
    }

    /// ``restoreUnloadedToManyRelationships(of:)`` for every registered object.
    func restoreUnloadedToManyRelationships() {
        guard parent != nil else { return }
        for object in registered.values.map({ $0.takeUnretainedValue() }) where object.objectID.isTemporaryID {
            restoreUnloadedToManyRelationships(of: object)
        }
    }

    /// A to-many relationship's destinations for a child, as its parent sees them.
    func destinationsFromParent(of relationship: RelationshipDescription, for sources: [ManagedObjectID]) throws -> [ManagedObjectID: [ManagedObjectID]] {
        guard let parent else { return [:] }
        return try withParent(parent) { try parent.destinationsSeenFromHere(of: relationship, for: sources) }
    }

    /// A to-many relationship's destinations as this context sees them: its registered objects'
    /// own, else its parent's (or the store's, at the root) with this context's changes applied.
    func destinationsSeenFromHere(of relationship: RelationshipDescription, for sources: [ManagedObjectID]) throws -> [ManagedObjectID: [ManagedObjectID]] {
        var result: [ManagedObjectID: [ManagedObjectID]] = [:]
        var rest: [ManagedObjectID] = []
        for id in sources {
            if let object = registered[canonical(id)]?.takeUnretainedValue(), !object.isFault {
                result[id] = object.destinationIDs(relationship).map(canonical)
            } else {
                rest.append(id)
            }
        }
        guard !rest.isEmpty else { return result }
        var stored: [ManagedObjectID: [ManagedObjectID]] = [:]
        if let parent {
            stored = try withParent(parent) { try parent.destinationsSeenFromHere(of: relationship, for: rest) }
        } else {
            let permanent = rest.filter { !canonical($0).isTemporaryID }
            let read = try coordinator.destinations(of: relationship, for: permanent.map(canonical))
            for id in permanent { stored[id] = read[canonical(id)] ?? [] }
        }
        result.merge(destinationsSeenHere(of: relationship, stored: stored, for: rest)) { mine, _ in mine }
        return result
    }

    // MARK: - Fetching through the parent

    /// The rows this context sees for an entity and predicate: its parent's (the store's, at the
    /// root) less what it deleted or changed here, plus its changed and inserted objects that match
    /// now. Unsorted and unpaged. Rows carry this context's view of the objects when `values`.
    func viewRows(
        entity: EntityDescription, includesSubentities: Bool, predicate: FetchPredicate?, values: Bool, includingPendingChanges: Bool = true
    ) throws -> [StoreRow] {
        var rows: [StoreRow]
        if let parent {
            rows = try withParent(parent) {
                try parent.viewRows(entity: entity, includesSubentities: includesSubentities, predicate: predicate, values: values)
            }
        } else {
            rows = try coordinator.fetchRows(StoreFetchRequest(
                entity: entity, includesSubentities: includesSubentities, predicate: predicate, includesPropertyValues: values))
        }
        if aliases.isEmpty == false {
            for index in rows.indices { rows[index].id = canonical(rows[index].id) }
        }
        if values {
            for index in rows.indices {
                if let object = registered[rows[index].id]?.takeUnretainedValue(), !object.isFault, !object.hasChanges {
                    rows[index].snapshot = viewSnapshot(of: object)
                }
            }
        }
        guard includingPendingChanges else { return rows }
        if !pendingDeletes.isEmpty { processPendingChanges() }
        func relevant(_ object: ManagedObject) -> Bool {
            includesSubentities ? object.entity.isKindOf(entity: entity) : object.entity === entity
        }
        let changed = updatedObjects.filter { $0.hasChanges && !$0.isDeleted && relevant($0) }
        let inserted = insertedObjects.filter { !$0.isDeleted && relevant($0) }.sorted { $0.objectID < $1.objectID }
        var excluded = Set(deletedObjects.filter(relevant).map { canonical($0.objectID) })
        for object in changed { excluded.insert(object.objectID) }
        for object in inserted { excluded.insert(object.objectID) }
        if !excluded.isEmpty { rows.removeAll { excluded.contains($0.id) } }
        for object in Array(changed) + inserted {
            if let predicate, !(try predicate.evaluate(with: object)) { continue }
            rows.append(StoreRow(id: object.objectID, snapshot: values ? viewSnapshot(of: object) : nil))
        }
        return rows
    }

    /// What a child's fetch is for.
    enum NestedFetchPurpose {
        case objects, objectIDs, count
    }

    /// A child's fetch: the rows of the parent chain's view with this context's changes applied,
    /// registered as objects (filled from the rows) when objects are wanted or sorting needs them,
    /// then sorted and paged.
    func matchingThroughParent<T>(_ request: FetchRequest<T>, entity: EntityDescription, for purpose: NestedFetchPurpose) throws -> [(id: ManagedObjectID, object: ManagedObject?)] {
        let sorts = purpose == .count ? [] : request.sortDescriptors ?? []
        let needsObjects = purpose == .objects || !sorts.isEmpty
        let needsValues = !sorts.isEmpty || (purpose == .objects && (request.includesPropertyValues || !request.returnsObjectsAsFaults))
        let rows = try viewRows(
            entity: entity, includesSubentities: request.includesSubentities, predicate: request.predicate, values: needsValues,
            includingPendingChanges: request.includesPendingChanges)
        var matched: [(id: ManagedObjectID, object: ManagedObject?)]
        if needsObjects {
            var objects: [ManagedObject] = []
            objects.reserveCapacity(rows.count)
            for row in rows {
                // Rows carry the IDs the parent knows: no need to look further up for them.
                let object: ManagedObject
                if let registered = registered[row.id]?.takeUnretainedValue() {
                    object = registered
                } else {
                    object = makeFault(row.id)
                    register(object)
                }
                if object.isFault, let snapshot = row.snapshot {
                    materializeFromParent(object, ViewedSnapshot(snapshot: snapshot, holdsRowCache: false))
                }
                objects.append(object)
            }
            if !sorts.isEmpty { objects = try FetchSortDescriptor.sorted(objects, by: sorts, subject: { $0 }) }
            matched = objects.map { ($0.objectID, $0) }
        } else {
            matched = rows.map { ($0.id, nil) }
        }
        if request.fetchOffset > 0 { matched = Array(matched.dropFirst(request.fetchOffset)) }
        if request.fetchLimit > 0 { matched = Array(matched.prefix(request.fetchLimit)) }
        return matched
    }

    // MARK: - Permanent IDs down the chain

    /// Hands permanent IDs given by the root to every descendant (parents first); each adopts them
    /// on its own queue before running any block submitted after this call.
    func propagatePermanentIDs(_ mapping: [ManagedObjectID: ManagedObjectID]) {
        guard !mapping.isEmpty else { return }
        if parent == nil { nesting.permanentIDs.withLock { $0.merge(mapping) { _, new in new } } }
        for descendant in descendants {
            descendant.deliver { $0.adoptPermanentIDs(mapping) }
        }
    }

    /// The permanent ID the chain's root gave to a temporary ID this context never saw (the ID
    /// itself when none was given), remembered as an alias.
    func permanentIDKnownAbove(_ id: ManagedObjectID) -> ManagedObjectID {
        guard let permanent = rootContext.nesting.permanentIDs.withLock({ $0[id] }) else { return id }
        aliases[id] = permanent
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
        func remap(_ values: inout [Value]) -> Bool {
            var changed = false
            for (index, value) in values.enumerated() {
                if case .objectID(let id) = value, let permanent = mapping[id] {
                    values[index] = .objectID(permanent)
                    changed = true
                }
            }
            return changed
        }
        for object in registered.values.map({ $0.takeUnretainedValue() }) where !object.isFault {
            _ = remap(&object.values)
            if var snapshot = object.snapshot, remap(&snapshot.values) { object.snapshot = snapshot }
            for value in object.toMany.values {
                let mentioned = value.ids.contains { mapping[$0] != nil } || value.added.contains { mapping[$0] != nil }
                    || value.removed.contains { mapping[$0] != nil }
                if mentioned { value.remap(mapping) }
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
    /// shows, on the child's queue (they read the new values through this context).
    func forwardToAutomaticallyMergingChildren(_ changes: SaveChanges, except excluded: ManagedObjectContext? = nil) {
        guard !changes.isEmpty else { return }
        let followers = nesting.children.filter { $0 !== excluded && $0.nesting.mergesFromParent.load(ordering: .relaxed) }
        guard !followers.isEmpty else { return }
        let ids = SaveChanges(
            inserted: changes.insertedObjectIDs, updated: changes.updatedObjectIDs, deleted: changes.deletedObjectIDs,
            changedKeys: changes.changedKeys, snapshots: [:])
        for child in followers {
            child.deliver { $0.mergeChanges(ids) }
        }
    }

    /// Changes as a child merges them: with the parent's current view of the changed objects it
    /// may show (the objects registered here; all of them when a loaded to-many relationship may
    /// need to list or drop one).
    func changesSeenThroughParent(_ changes: SaveChanges) -> SaveChanges {
        guard let parent else { return changes }
        let changed = changes.insertedObjectIDs.union(changes.updatedObjectIDs)
        var snapshots: [ManagedObjectID: Snapshot] = [:]
        if !changed.isEmpty {
            let objects = registered.values.map { $0.takeUnretainedValue() }.filter { !$0.isFault }
            let listsObjects = objects.contains { $0.toMany.values.contains(where: \.isLoaded) }
            let wanted = listsObjects ? Array(changed) : changed.filter { registered[canonical($0)] != nil }
            if !wanted.isEmpty {
                let found = (try? withParent(parent) { try parent.viewSnapshots(for: wanted, maximumAge: nil, retainingRows: false) }) ?? [:]
                snapshots = found.mapValues(\.snapshot)
            }
        }
        return SaveChanges(
            inserted: changes.insertedObjectIDs, updated: changes.updatedObjectIDs, deleted: changes.deletedObjectIDs,
            changedKeys: changes.changedKeys, snapshots: snapshots)
    }
}
