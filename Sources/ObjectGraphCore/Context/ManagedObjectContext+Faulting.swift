import Foundation

extension ManagedObjectContext {
    /// Fills a fault's values: from the row cache when it has the row, else from the store. The
    /// other faults of its batch (batched fetches) are filled with it.
    func fulfillFault(_ object: ManagedObject) {
        if let batch = object.batch {
            let faults = batch.ids.compactMap { registered[$0]?.object }.filter(\.isFault)
            for fault in faults { fault.leaveBatch() }
            fulfillFaults(faults.contains(object) ? faults : faults + [object])
            return
        }
        do {
            if try !loadSnapshot(for: object) { inaccessibleFault(object) }
        } catch {
            fatalError("ObjectGraph: could not fulfil the fault \(object.objectID) in context '\(debugName)': \(error)")
        }
    }

    /// Fills several faults with one read of the parent store (the row cache, then the stores, at
    /// the root; the parent's view for a child). A fault fired by an accessor cannot throw: a store
    /// that fails to read stops the program.
    func fulfillFaults(_ objects: [ManagedObject]) {
        do { try fillFaults(objects) } catch {
            let count = objects.filter { $0.isFault && $0.managedObjectContext === self }.count
            fatalError("ObjectGraph: could not fulfil \(count) fault\(count == 1 ? "" : "s") in context '\(debugName)': \(error)")
        }
    }

    /// Fills several faults as ``fulfillFaults(_:)`` does, throwing what the parent store throws
    /// (for a fetch, which throws it to its caller).
    func fillFaults(_ objects: [ManagedObject]) throws {
        let faults = objects.filter { $0.isFault && $0.managedObjectContext === self }
        if faults.isEmpty { return }
        let viewed = try readSnapshots(faults)
        for object in faults {
            if let snapshot = viewed.snapshots[object.objectID] {
                materialize(object, snapshot, holdsRowCache: viewed.leases?.claim(object.objectID) ?? false)
            } else {
                inaccessibleFault(object)
            }
        }
    }

    /// Reads a fault's snapshot; false when its object does not exist in the parent store.
    func loadSnapshot(for object: ManagedObject) throws -> Bool {
        let viewed = try readSnapshots([object])
        guard let snapshot = viewed.snapshots[object.objectID] else { return false }
        materialize(object, snapshot, holdsRowCache: viewed.leases?.claim(object.objectID) ?? false)
        return true
    }

    /// Snapshots for faults, no older than `stalenessInterval`: in a root context, a fault that
    /// holds its row in the row cache (fetched as a fault) reads the snapshot it holds, even one the
    /// cache has since marked stale (another coordinator or a batch request changed the row), as
    /// Core Data fills a fault from the snapshot its fetch read; the others ask the parent store.
    /// So a fault its fetch read the row of never goes back to the store.
    private func readSnapshots(_ faults: [ManagedObject]) throws -> ViewedSnapshots {
        let maximumAge = stalenessInterval >= 0 ? stalenessInterval : nil
        guard parent == nil, queryGeneration.pinned == nil, let coordinator = persistentStoreCoordinator,
              faults.contains(where: { $0.state.holdsRowCache })
        else {
            return try parentStore.snapshots(for: faults.map(\.objectID), maximumAge: maximumAge, leasing: true, requester: storeRequester)
        }
        let held = coordinator.heldSnapshots(for: faults.filter(\.state.holdsRowCache).map(\.objectID), maximumAge: maximumAge)
        if held.count == faults.count { return ViewedSnapshots(snapshots: held) }
        var viewed = try parentStore.snapshots(
            for: faults.map(\.objectID).filter { held[$0] == nil }, maximumAge: maximumAge, leasing: true, requester: storeRequester)
        viewed.snapshots.merge(held) { read, _ in read }
        return viewed
    }

    /// Gives a fault its values. With `holdsRowCache`, the object keeps a reference on its row in
    /// the row cache (its values are the cached snapshot's).
    func materialize(_ object: ManagedObject, _ snapshot: Snapshot, holdsRowCache: Bool) {
        switch object.state.materialize(leased: holdsRowCache) {
        case .keepValues(let releaseLease):
            if releaseLease { coordinator.rowCache.release([object.objectID]) }
            return
        case .fill(let releaseDuplicate):
            // The object already held a reference (taken when fetched as a fault).
            if releaseDuplicate { coordinator.rowCache.release([object.objectID]) }
        }
        object.fill(from: snapshot)
        if object.objectID.isTemporaryID { restoreUnloadedToManyRelationships(of: object) }
        object.awakeFromFetch()
    }

    /// A fault whose row no longer exists: Core Data's rule.
    func inaccessibleFault(_ object: ManagedObject) {
        guard shouldDeleteInaccessibleFaults else {
            fatalError("""
                ObjectGraph: could not fulfil a fault: object \(object.objectID) in context '\(debugName)' has no row in the store \
                (it was deleted, perhaps by another context, or was never saved). Merge the other context's save before using \
                the object, or set shouldDeleteInaccessibleFaults = true to get a deleted object with default values instead.
                """)
        }
        object.fillWithDefaults()
        object.forgetSnapshotAndChanges()
        object.state.markInaccessible()
    }

    /// Loads a to-many relationship of several objects with one read of the parent store.
    func loadToMany(_ relationship: RelationshipDescription, of objects: [ManagedObject]) {
        do { try readToMany(relationship, of: objects) } catch {
            fatalError("ObjectGraph: could not read \(relationship.entity?.name ?? "").\(relationship.name) in context '\(debugName)': \(error)")
        }
    }

    /// Loads a to-many relationship as ``loadToMany(_:of:)`` does, throwing what the parent store
    /// throws (for a fetch's prefetching, which throws it to its caller).
    func readToMany(_ relationship: RelationshipDescription, of objects: [ManagedObject]) throws {
        // Only objects inserted here have no destinations outside (a child's objects with
        // temporary IDs may be its ancestors' inserted objects).
        let pending = objects.filter { object in
            !object.isInserted && !(object.toMany[relationship.index]?.isLoaded ?? false)
        }
        for object in objects where object.isInserted {
            let value = object.relationshipValue(relationship)
            if !value.isLoaded { value.load([]) }
        }
        guard !pending.isEmpty else { return }
        let sources = pending.map(\.objectID)
        let read = try parentStore.destinations(of: relationship, for: sources.map(canonical), requester: storeRequester)
        // An object listed twice (a damaged store's table can hold one primary key twice) is read once.
        let destinations = Dictionary(sources.map { ($0, read[canonical($0)] ?? []) }, uniquingKeysWith: { first, _ in first })
        let seen = destinationsSeenHere(of: relationship, stored: destinations, for: sources)
        for object in pending {
            object.relationshipValue(relationship).load(seen[object.objectID] ?? [])
        }
    }

    /// Destinations read from the store (or a parent) as this context sees them with its unsaved
    /// changes: objects deleted here are hidden, and for a relationship stored through foreign keys
    /// the registered objects' own to-one values decide where they are listed.
    func destinationsSeenHere(
        of relationship: RelationshipDescription, stored destinations: [ManagedObjectID: [ManagedObjectID]], for sources: [ManagedObjectID]
    ) -> [ManagedObjectID: [ManagedObjectID]] {
        let inverse = relationship.isForeignKeyDerived ? relationship.inverseRelationship : nil
        var changedByOwner: [ManagedObjectID: [ManagedObjectID]] = [:]
        if let inverse {
            for changed in insertedObjects.union(updatedObjects) where !changed.isDeleted && !changed.isFault {
                guard changed.entity.relationshipsByName[inverse.name] === inverse, let owner = changed.toOneID(inverse) else { continue }
                changedByOwner[canonical(owner), default: []].append(changed.objectID)
            }
        }
        var result: [ManagedObjectID: [ManagedObjectID]] = [:]
        for source in sources {
            let owner = canonical(source)
            var stored = (destinations[source] ?? []).filter { id in
                guard let local = registered[canonical(id)]?.object else { return true }
                if local.isDeleted { return false }
                if let inverse, !local.isFault {
                    // Only an object of the inverse's entity has it (a damaged store can list another kind).
                    guard let kind = inverse.entity, local.entity.isKindOf(entity: kind) else { return false }
                    return local.toOneID(inverse).map(canonical) == owner
                }
                return true
            }
            if let extra = changedByOwner[owner] {
                let present = Set(stored)
                stored += extra.filter { !present.contains($0) }
            }
            result[source] = stored
        }
        return result
    }

    /// Turns an object back into a fault (or, with `mergeChanges`, refreshes its values from the
    /// store while keeping its unsaved changes on top).
    ///
    /// Without `mergeChanges`, the object's unsaved changes are discarded.
    public func refresh(_ object: ManagedObject, mergeChanges: Bool) {
        assertOnQueue("refresh(_:mergeChanges:)")
        // A pinned context moves to the current generation, which the refreshed object then reads.
        advanceQueryGeneration()
        refreshObject(object, mergeChanges: mergeChanges)
    }

    private func refreshObject(_ object: ManagedObject, mergeChanges: Bool) {
        guard object.managedObjectContext === self else { return }
        if object.isInserted {
            // An object never saved has no row to read: Core Data makes it a fault in name only,
            // which the next use turns back into the object with its values.
            if !mergeChanges && !object.isDeleted && !object.isFault {
                object.willTurnIntoFault()
                object.state.faultInserted()
                object.didTurnIntoFault()
            }
            return
        }
        // A deleted object keeps its delete, which is an unsaved change like any other.
        if mergeChanges && object.isDeleted { return }
        if mergeChanges && object.hasChanges && !object.isFault {
            let unsaved = object.unsavedChanges
            turnIntoFault(object)
            object.fireFaultIfNeeded()
            object.restore(unsaved)
            if !object.changedIndices.isEmpty && object.state.change() {
                // Still changed: it stays in the save.
                changes.recordUpdate(object)
                retained.insert(object)
            }
            return
        }
        if object.isDeleted { changes.forgetDelete(object) }
        if !object.isFault { undoInverses(ofDiscardedToOneChangesIn: object) }
        turnIntoFault(object)
    }

    /// Puts the inverses of an object's unsaved to-one changes back as they were, before the changes
    /// are discarded, so the related objects stay consistent with it.
    private func undoInverses(ofDiscardedToOneChangesIn object: ManagedObject) {
        for index in object.changedIndices {
            guard let relationship = object.entity.properties[index] as? RelationshipDescription, !relationship.isToMany,
                  let inverse = relationship.inverseRelationship else { continue }
            let committed: ManagedObjectID? = object.snapshot.flatMap { if case .objectID(let id) = $0.values[index] { id } else { nil } }
            let current = object.toOneID(relationship)
            guard committed.map(canonical) != current.map(canonical) else { continue }
            if let current, let owner = existingRegisteredOrFault(current) {
                if inverse.isToMany {
                    owner.removeDestination(object.objectID, from: inverse)
                } else if owner.toOneID(inverse) == object.objectID {
                    owner.setToOne(inverse, to: nil, maintainInverse: false)
                }
            }
            if let committed, let owner = existingRegisteredOrFault(committed) {
                if inverse.isToMany {
                    owner.addDestination(object.objectID, to: inverse)
                } else {
                    owner.setToOne(inverse, to: object, maintainInverse: false)
                }
            }
        }
    }

    /// Refreshes every registered object (unchanged objects become faults; changed ones keep their
    /// changes on top of the store's current values).
    public func refreshAllObjects() {
        assertOnQueue("refreshAllObjects()")
        advanceQueryGeneration()
        let objects = liveObjects
        for object in objects {
            refreshObject(object, mergeChanges: true)
        }
        guard !objects.isEmpty else { return }
        NotificationCenter.default.post(name: Self.objectsDidChangeNotification, object: self, userInfo: [
            NotificationKey.refreshedObjects.rawValue: Set(objects.filter { $0.managedObjectContext === self }),
        ])
    }

    func turnIntoFault(_ object: ManagedObject) {
        if object.isFault { return }
        object.willTurnIntoFault()
        if object.state.turnIntoFault() {
            coordinator.rowCache.release([object.objectID])
        }
        object.dropData()
        changes.forgetUpdate(object)
        if !retainsRegisteredObjects { retained.remove(object) }
        object.didTurnIntoFault()
    }
}
