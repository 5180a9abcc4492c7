import Foundation

// A context as its children's parent store: what it serves is its *view* — its parent store's
// objects and rows with its own unsaved changes applied — and what it takes is a child's save,
// all or nothing. Each call arrives on the child's queue and runs on this context's queue (the
// child waits, recorded as entered, so that work sent back down to it runs inline).
//
// The view is also what the context's own fetches and faults read (`viewRows`,
// `viewSnapshots`, `destinationsSeenFromHere`): one overlay of unsaved changes, used for both.

extension ManagedObjectContext: ParentStore {
    /// Where this context reads from and saves into: its parent, or its coordinator.
    ///
    /// It is a programmer error to use a context that has neither.
    var parentStore: any ParentStore {
        guard let store = configuredParentStore else {
            fatalError("ObjectGraph: context '\(debugName)' has no persistent store coordinator and no parent; set one right after creating it")
        }
        return store
    }

    /// The context as it asks its parent store: its identity, names and query generation now.
    var storeRequester: StoreRequester {
        StoreRequester(
            context: ObjectIdentifier(self), scheduler: scheduler, number: number, name: name, transactionAuthor: transactionAuthor, generation: readingGeneration)
    }

    /// Permanent IDs for temporary ones, from the coordinator through the chain. The chain's root
    /// hands them down: it keeps them for the chain's ``permanentID(forTemporary:)`` and every
    /// context of its chain, itself included, adopts them.
    func chainPermanentIDs(for ids: [ManagedObjectID], assignments: [ManagedObjectID: PersistentStore]) throws -> [ManagedObjectID: ManagedObjectID] {
        let grant = try parentStore.permanentIDs(for: ids, assignments: assignments, requester: storeRequester)
        if !grant.isHandedDown {
            adoptPermanentIDs(grant.mapping)
            propagatePermanentIDs(grant.mapping)
        }
        return grant.mapping
    }

    /// The parent store, if the context has one yet.
    var configuredParentStore: (any ParentStore)? { parentStore(withParent: parent) }

    /// The parent store this context has with `parent` as its parent: the parent, or else the
    /// coordinator set on the context. The one place that asks whether a context has a parent.
    func parentStore(withParent parent: ManagedObjectContext?) -> (any ParentStore)? {
        if let parent { return parent }
        return rootCoordinator
    }

    func snapshots(for ids: [ManagedObjectID], maximumAge: Double?, leasing: Bool, requester: StoreRequester) throws -> ViewedSnapshots {
        try requester.waiting(on: self) { try viewSnapshots(for: ids, maximumAge: maximumAge, leasing: leasing) }
    }

    func destinations(of relationship: RelationshipDescription, for sources: [ManagedObjectID], requester: StoreRequester) throws
        -> [ManagedObjectID: [ManagedObjectID]] {
        try requester.waiting(on: self) { try destinationsSeenFromHere(of: relationship, for: sources) }
    }

    func rows(_ request: StoreFetchRequest, leasing: Bool, requester: StoreRequester) throws -> FetchedRows {
        try requester.waiting(on: self) { try viewRows(request, includingPendingChanges: true, leasing: leasing, forChild: true) }
    }

    func savedRows(_ request: StoreFetchRequest, requester: StoreRequester) throws -> [StoreRow] {
        try requester.waiting(on: self) { try parentStore.savedRows(request, requester: storeRequester) }
    }

    func savedKeys(_ request: StoreFetchRequest, requester: StoreRequester) throws -> [(PersistentStore, [Int64], [Int32])] {
        try requester.waiting(on: self) { try parentStore.savedKeys(request, requester: storeRequester) }
    }

    func count(_ request: StoreFetchRequest, requester: StoreRequester) throws -> Int {
        try requester.waiting(on: self) { try viewCount(request, includingPendingChanges: true) }
    }

    func permanentIDs(for ids: [ManagedObjectID], assignments: [ManagedObjectID: PersistentStore], requester: StoreRequester) throws
        -> PermanentIDGrant {
        try requester.waiting(on: self) { PermanentIDGrant(mapping: try chainPermanentIDs(for: ids, assignments: assignments), isHandedDown: true) }
    }

    func save(_ request: ContextSaveRequest, requester: StoreRequester) throws -> ContextSaveResult {
        try requester.waiting(on: self) { try receive(request, from: requester) }
    }

    func permanentID(forTemporary id: ManagedObjectID) -> ManagedObjectID? {
        rootContext.nesting.permanentIDs.withLock { $0[id] }
    }

    var resolvesTemporaryIDs: Bool { true }

    var reinsertsDeletedObjects: Bool { false }

    func describeConflict(_ conflict: VersionConflict, requester: StoreRequester) -> String {
        let state = conflict.persisted == nil ? "deleted it" : "changed it"
        return "\(conflict.id) cannot be saved from context '\(requester.debugName)' into its parent '\(debugName)': the parent \(state) since '\(requester.debugName)' read it"
    }

    var conflictSummary: String { "conflicts with parent context '\(debugName)'" }

    var nameInMessages: String { "the parent '\(debugName)'" }

    var coordinatorBehind: PersistentStoreCoordinator? { persistentStoreCoordinator }

    func adopt(_ child: ManagedObjectContext) {
        child.checkChain(under: self)
        // A child of a container's context is the container's work too: shutdown waits for it.
        if child.activityTracker == nil { child.activityTracker = activityTracker }
        nesting.addChild(child)
    }

    func release(_ child: ManagedObjectContext) { nesting.removeChild(child) }

    /// Nothing to announce: this context handed the save to its children that merge
    /// automatically as it took it (`receive(_:from:)`).
    func announceSave(_ changes: SaveChanges, from requester: StoreRequester) {}

    /// None: a child follows its parent through `forwardToAutomaticallyMergingChildren`.
    func followSaves(_ handler: @escaping @Sendable (SaveChanges, ObjectIdentifier) -> Void) -> PersistentStoreCoordinator.SaveSubscription? {
        nil
    }

    /// None: a child reads its parent, which is pinned instead.
    func pinnedGeneration(for token: QueryGenerationToken, requester: StoreRequester) throws -> QueryGeneration {
        fatalError("""
            ObjectGraph: setQueryGenerationFrom(_:) on child context '\(requester.debugName)': a child context reads its parent, \
            so only a context on a coordinator can be pinned to a query generation; pin the parent instead
            """)
    }

    // MARK: - The view: objects

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

    /// Objects as this context sees them, by the IDs asked for: its registered objects' current
    /// values, else its parent store's. Objects that do not exist are absent. With `leasing`, rows
    /// of the row cache come with references the caller may claim.
    func viewSnapshots(for ids: [ManagedObjectID], maximumAge: Double?, leasing: Bool) throws -> ViewedSnapshots {
        var result = ViewedSnapshots()
        var missing: [ManagedObjectID] = []
        var asked: [ManagedObjectID: [ManagedObjectID]] = [:]
        for id in ids where result.snapshots[id] == nil {
            if let object = registered[canonical(id)]?.object, !object.isFault {
                result.snapshots[id] = viewSnapshot(of: object)
            } else {
                let known = canonical(id)
                if asked[known] == nil { missing.append(known) }
                asked[known, default: []].append(id)
            }
        }
        guard !missing.isEmpty else { return result }
        let found = try parentStore.snapshots(for: missing, maximumAge: maximumAge, leasing: leasing, requester: storeRequester)
        for (known, snapshot) in found.snapshots {
            for id in asked[known] ?? [] { result.snapshots[id] = snapshot }
        }
        // A reference is handed on only under the ID the requester knows the row by; the others
        // go back to the cache with the leases.
        result.leases = found.leases
        return result
    }

    /// A to-many relationship's destinations as this context sees them: its registered objects'
    /// own, else its parent store's with this context's changes applied.
    func destinationsSeenFromHere(of relationship: RelationshipDescription, for sources: [ManagedObjectID]) throws
        -> [ManagedObjectID: [ManagedObjectID]] {
        var result: [ManagedObjectID: [ManagedObjectID]] = [:]
        var rest: [ManagedObjectID] = []
        for id in sources {
            if let object = registered[canonical(id)]?.object, !object.isFault {
                result[id] = object.destinationIDs(relationship).map(canonical)
            } else {
                rest.append(id)
            }
        }
        guard !rest.isEmpty else { return result }
        let read = try parentStore.destinations(of: relationship, for: rest.map(canonical), requester: storeRequester)
        var stored: [ManagedObjectID: [ManagedObjectID]] = [:]
        for id in rest { stored[id] = read[canonical(id)] ?? [] }
        result.merge(destinationsSeenHere(of: relationship, stored: stored, for: rest)) { mine, _ in mine }
        return result
    }

    // MARK: - The view: rows

    /// The unsaved changes a fetch of an entity must see.
    struct Overlay {
        /// Rows the parent store returns that this context changed or deleted.
        var excluded: Set<ManagedObjectID> = []
        /// Changed and inserted objects, candidates to match.
        var candidates: [ManagedObject] = []
        /// Whether the predicate or the sort reads, through a relationship, an entity with unsaved
        /// changes (`folder.name` while a folder is renamed): the parent store's answer rests on the
        /// related rows it holds, so every row is read and matched here.
        var readsChangedRelatedObjects = false
        var isEmpty: Bool { excluded.isEmpty && candidates.isEmpty && !readsChangedRelatedObjects }
    }

    func overlay(for request: StoreFetchRequest) -> Overlay {
        if !changes.pendingDeletes.isEmpty { processPendingChanges() }
        let entity = request.entity
        func relevant(_ object: ManagedObject) -> Bool {
            request.includesSubentities ? object.entity.isKindOf(entity: entity) : object.entity === entity
        }
        var overlay = Overlay()
        guard !(insertedObjects.isEmpty && updatedObjects.isEmpty && deletedObjects.isEmpty) else { return overlay }
        for object in deletedObjects where relevant(object) { overlay.excluded.insert(canonical(object.objectID)) }
        for object in updatedObjects where object.hasChanges && !object.isDeleted && relevant(object) {
            overlay.excluded.insert(object.objectID)
            overlay.candidates.append(object)
        }
        let inserted = insertedObjects.filter { !$0.isDeleted && relevant($0) }.sorted { $0.objectID < $1.objectID }
        for object in inserted {
            overlay.excluded.insert(object.objectID)
            overlay.candidates.append(object)
        }
        let related = request.entitiesReadThroughRelationships
        if !related.isEmpty {
            overlay.readsChangedRelatedObjects = [insertedObjects, updatedObjects, deletedObjects].contains { objects in
                objects.contains { object in related.contains { object.entity.isKindOf(entity: $0) } }
            }
        }
        return overlay
    }

    /// The rows this context sees for a request: its parent store's, with its unsaved changes
    /// applied. Without changes that touch the entity, the parent store orders and pages them;
    /// with some, the rows come unordered and unpaged, for the requester to order.
    ///
    /// `forChild`: rows go to a child, so they carry this context's view of its registered objects.
    func viewRows(_ request: StoreFetchRequest, includingPendingChanges: Bool, leasing: Bool, forChild: Bool) throws -> FetchedRows {
        let overlay = includingPendingChanges ? overlay(for: request) : Overlay()
        var asked = overlay.isEmpty ? request : request.unpaged
        if overlay.readsChangedRelatedObjects {
            // Every row, matched here against the objects as this context sees them.
            asked.predicate = nil
            asked.sortDescriptors = []
            asked.includesPropertyValues = true
        }
        var fetched = try parentStore.rows(asked, leasing: leasing, requester: storeRequester)
        if !aliases.isEmpty { canonicalizeIDs(of: &fetched) }
        if forChild && request.includesPropertyValues {
            for index in fetched.rows.indices {
                if let object = registered[fetched.rows[index].id]?.object, !object.isFault, !object.hasChanges {
                    fetched.rows[index].snapshot = viewSnapshot(of: object)
                }
            }
        }
        guard !overlay.isEmpty else { return fetched }
        fetched.rows.removeAll { overlay.excluded.contains($0.id) }
        if overlay.readsChangedRelatedObjects {
            if let predicate = request.predicate {
                let objects = register(fetched.rows, asFaults: false, leases: fetched.leases)
                var kept: [StoreRow] = []
                kept.reserveCapacity(fetched.rows.count)
                for (row, object) in zip(fetched.rows, objects) where try predicate.evaluate(with: object) { kept.append(row) }
                fetched.rows = kept
            }
            if !request.includesPropertyValues {
                for index in fetched.rows.indices { fetched.rows[index].snapshot = nil }
            }
        }
        for object in overlay.candidates {
            if let predicate = request.predicate, !(try predicate.evaluate(with: object)) { continue }
            fetched.rows.append(StoreRow(id: object.objectID, snapshot: request.includesPropertyValues ? viewSnapshot(of: object) : nil))
        }
        fetched.isOrdered = false
        return fetched
    }

    /// The IDs of fetched rows as this context names them (see `aliases`); a function of its own,
    /// so that the frame of ``viewRows(_:includingPendingChanges:leasing:forChild:)``, one per
    /// context of a chain, stays small.
    @inline(never)
    func canonicalizeIDs(of fetched: inout FetchedRows) {
        for index in fetched.rows.indices { fetched.rows[index].id = canonical(fetched.rows[index].id) }
        for index in fetched.destinations.indices { fetched.destinations[index].id = canonical(fetched.destinations[index].id) }
    }

    /// How many rows this context sees for a request.
    func viewCount(_ request: StoreFetchRequest, includingPendingChanges: Bool) throws -> Int {
        let overlay = includingPendingChanges ? overlay(for: request) : Overlay()
        guard !overlay.isEmpty else { return try parentStore.count(request, requester: storeRequester) }
        var unpaged = request.unpaged
        unpaged.sortDescriptors = []
        unpaged.includesPropertyValues = false
        let total = try viewRows(unpaged, includingPendingChanges: true, leasing: false, forChild: false).rows.count
        return request.pagedCount(ofUnpaged: total)
    }

    // MARK: - Taking a child's save

    /// Takes a child's save, on this (the parent's) queue: checks that the objects it updates or
    /// deletes are as the child read them, then applies it all, or nothing.
    ///
    /// - Throws: `VersionConflictError` listing the objects this context changed or deleted since
    ///   the child read them; nothing is applied.
    func receive(_ request: ContextSaveRequest, from child: StoreRequester) throws -> ContextSaveResult {
        let checked = request.updated + request.deleted
        if !checked.isEmpty {
            let views = try viewSnapshots(for: checked.map(\.id), maximumAge: nil, leasing: false).snapshots
            var conflicts: [VersionConflict] = []
            for changed in checked {
                let local = registered[canonical(changed.id)]?.object
                guard let view = views[changed.id], local?.isDeleted != true else {
                    conflicts.append(VersionConflict(id: changed.id, expectedVersion: changed.base?.version ?? 0, persisted: nil))
                    continue
                }
                if let base = changed.base, !storesSameValues(base, view) {
                    conflicts.append(VersionConflict(id: changed.id, expectedVersion: base.version, persisted: view))
                }
            }
            if !conflicts.isEmpty { throw VersionConflictError(conflicts: conflicts) }
        }

        var touched: [ManagedObject] = []
        for changed in request.inserted {
            touched.append(applyInsert(changed))
            if let store = changed.store { assignedStores[changed.id] = store }
        }
        for changed in request.updated { touched.append(applyUpdate(changed)) }
        for changed in request.deleted {
            let object = object(with: changed.id)
            if !object.isDeleted { delete(object) }
        }
        processPendingChanges()

        var result = ContextSaveResult()
        for (changed, object) in zip(request.inserted + request.updated, touched) where !object.isFault && object.managedObjectContext === self {
            result.snapshots[changed.id] = viewSnapshot(of: object)
        }
        var changedKeys: [ManagedObjectID: Set<String>] = [:]
        for changed in request.updated {
            changedKeys[canonical(changed.id)] = Set((changed.changedIndices + changed.relationships.map(\.index)).map { changed.entity.properties[$0].name })
        }
        let changes = SaveChanges(
            inserted: Set(request.inserted.map { canonical($0.id) }), updated: Set(request.updated.map { canonical($0.id) }),
            deleted: Set(request.deleted.map { canonical($0.id) }), changedKeys: changedKeys, snapshots: [:], source: nil)
        forwardToAutomaticallyMergingChildren(changes, except: child.context)
        return result
    }

    /// Registers an object a child inserted, under the child's ID, as inserted here.
    private func applyInsert(_ changed: ChangedObject) -> ManagedObject {
        let object: ManagedObject
        if let existing = registered[canonical(changed.id)]?.object {
            // Known here already (resolved by ID before the save): it becomes the inserted object.
            guard existing.isFault else { return applyWhole(changed, to: existing) }
            object = existing
        } else {
            object = changed.entity.managedObjectClass.init(entity: changed.entity, insertInto: nil)
            object.objectID = changed.id
            register(object)
        }
        object.fillAsInserted(values: changed.values)
        if object.state.giveUpRowCache() { coordinator.rowCache.release([object.objectID]) }
        object.state.insert()
        for relationship in changed.relationships {
            let value = object.toMany[relationship.index]
            for id in relationship.order ?? relationship.added { value?.add(id) }
        }
        changes.recordInsert(object)
        retained.insert(object)
        noteUnreportedChange(object)
        return object
    }

    /// An inserted object the parent already holds with values: every value is taken.
    private func applyWhole(_ changed: ChangedObject, to object: ManagedObject) -> ManagedObject {
        var whole = changed
        whole.changedIndices = changed.entity.properties.compactMap { property in
            if let attribute = property as? AttributeDescription { return attribute.isTransient ? nil : attribute.index }
            return (property as? RelationshipDescription)?.isToMany == false ? property.index : nil
        }
        whole.relationships = changed.relationships.map { relationship in
            let current = Set(object.toMany[relationship.index]?.ids ?? [])
            let wanted = Set(relationship.order ?? relationship.added)
            return ChangedRelationship(
                index: relationship.index, added: Array(wanted), removed: Array(current.subtracting(wanted)), order: relationship.order)
        }
        return applyUpdate(whole)
    }

    /// Applies a child's changes to one object; the object here records them as its own.
    private func applyUpdate(_ changed: ChangedObject) -> ManagedObject {
        let object = object(with: changed.id)
        object.fireFaultIfNeeded()
        for index in changed.changedIndices {
            if object.takeValue(changed.values[index], at: index) { object.markChanged(index) }
        }
        for change in changed.relationships {
            guard let relationship = changed.entity.properties[change.index] as? RelationshipDescription else { continue }
            if let order = change.order {
                loadToMany(relationship, of: [object])
                let value = object.relationshipValue(relationship)
                if value.ids != order {
                    value.replace(with: order)
                    object.markChanged(relationship.index)
                }
                continue
            }
            let value = object.relationshipValue(relationship)
            var didChange = false
            for id in change.removed where value.remove(id) { didChange = true }
            for id in change.added where value.add(id) { didChange = true }
            if didChange { object.markChanged(relationship.index) }
        }
        return object
    }

    /// Whether two snapshots of an object hold the same stored values (transients and to-many
    /// slots aside; object IDs compared as the chain knows them).
    private func storesSameValues(_ base: Snapshot, _ view: Snapshot) -> Bool {
        var unresolved: [(ManagedObjectID, ManagedObjectID)] = []
        for property in base.entity.properties where property.index < base.values.count && property.index < view.values.count {
            if let attribute = property as? AttributeDescription, attribute.isTransient { continue }
            if let relationship = property as? RelationshipDescription, relationship.isToMany { continue }
            let a = base.values[property.index], b = view.values[property.index]
            if a == b { continue }
            guard case .objectID(let x) = a, case .objectID(let y) = b else { return false }
            let cx = canonical(x), cy = canonical(y)
            if cx == cy { continue }
            // A temporary ID against a permanent one: the root may have saved in between.
            guard cx.isTemporaryID != cy.isTemporaryID else { return false }
            unresolved.append((cx, cy))
        }
        return unresolved.allSatisfy { x, y in permanentIDKnownAbove(x) == permanentIDKnownAbove(y) }
    }
}
