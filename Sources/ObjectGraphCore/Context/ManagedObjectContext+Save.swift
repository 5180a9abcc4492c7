import Foundation

extension ManagedObjectContext {
    /// Saves the context's changes: into the store (one transaction) for a context on a
    /// coordinator, into its parent for a child context (the parent then has them as unsaved
    /// changes; see <doc:NestedContexts>).
    ///
    /// Before writing, delete rules are applied, `willSave()` is called on every changed object,
    /// and every object is validated; every failure is reported, not only the first.
    ///
    /// - Throws: ``ObjectGraphError/validation`` (with every failure in `underlyingErrors`),
    ///   ``ObjectGraphError/mergeConflict`` when another context saved the same objects since they
    ///   were read (for a child: when its parent changed or deleted them since the child read them), ``ObjectGraphError/constraintConflict``, ``ObjectGraphError/readOnly``, I/O
    ///   errors. When a save throws, nothing is written and the context keeps its changes, so a
    ///   retry can succeed.
    public func save() throws {
        assertOnQueue("save()")
        freezeConfiguration()
        if activityTracker?.isClosed == true {
            throw ObjectGraphError(.noPersistentStore, "Context '\(debugName)' belongs to a container that was shut down; its stores are closed")
        }
        activityTracker?.saveStarted()
        defer { activityTracker?.saveFinished() }
        deliverMailIfNeeded()
        processPendingChanges()
        guard !insertedObjects.isEmpty || !deletedObjects.isEmpty || updatedObjects.contains(where: \.hasChanges) else {
            // Nothing to write: the notifications still say a save happened, as Core Data's do.
            NotificationCenter.default.post(name: Self.willSaveObjectsNotification, object: self)
            postDidSave(inserted: [], updated: [], deleted: [], changes: SaveChanges())
            advanceQueryGeneration()
            return
        }
        NotificationCenter.default.post(name: Self.willSaveObjectsNotification, object: self)
        // willSave() may change objects (and delete some): process until stable.
        var notified: Set<ObjectIdentifier> = []
        while true {
            let changed = Array(insertedObjects) + Array(updatedObjects) + Array(deletedObjects)
            let fresh = changed.filter { notified.insert(ObjectIdentifier($0)).inserted }
            if fresh.isEmpty { break }
            for object in fresh { object.willSave() }
            processPendingChanges()
        }
        try validateChanges()
        // Into the stores for a root context, into the parent for a child. Conflicts go to the merge
        // policy, which adjusts the objects; the save is then tried again (a few times at most, for
        // conflicts that keep arriving while it resolves).
        // A pinned context saves (and resolves conflicts) against the latest version, then moves to it.
        try unpinnedForSave {
            var attempt = 0
            while true {
                attempt += 1
                let (request, saved) = try makeSaveRequest()
                do {
                    let result = try parentStore.save(request, requester: storeRequester)
                    didSave(saved, result: result)
                    return
                } catch let error as VersionConflictError {
                    if attempt > 8 { throw mergeConflictError(error.conflicts) }
                    try resolve(error.conflicts)
                } catch let error as ConstraintConflictError {
                    if attempt > 8 { throw error.error }
                    try resolve(error.conflicts, error: error.error)
                }
            }
        }
        advanceQueryGeneration()
    }

    /// Validates every inserted, updated and deleted object; throws all failures at once.
    func validateChanges() throws {
        var errors: [ObjectGraphError] = []
        func collect(_ body: () throws -> Void) {
            do { try body() } catch let error as ObjectGraphError {
                if error.underlyingErrors.isEmpty { errors.append(error) } else { errors += error.underlyingErrors }
            } catch {
                errors.append(ObjectGraphError(.validation, "\(error)"))
            }
        }
        for object in insertedObjects where !object.isDeleted { collect { try object.validateForInsert() } }
        for object in updatedObjects where !object.isDeleted && object.hasChanges { collect { try object.validateForUpdate() } }
        for object in deletedObjects where !object.state.isDeletedElsewhere { collect { try object.validateForDelete() } }
        guard !errors.isEmpty else { return }
        if errors.count == 1 { throw errors[0] }
        throw ObjectGraphError(
            .validation, "\(errors.count) validation errors: " + errors.map(\.message).joined(separator: "; "),
            entityName: errors[0].entityName, key: errors[0].key, objectID: errors[0].objectID, underlyingErrors: errors)
    }

    struct SavedObjects {
        var inserted: [ManagedObject] = []
        var updated: [ManagedObject] = []
        var deleted: [ManagedObject] = []
    }

    /// An object's values as a save writes them (to the store or into the parent): object IDs that
    /// have permanent IDs by now take them, and transformable values are encoded — every boxed one,
    /// or, with `encodingChangedOnly`, only those changed since the last save (and all of a new object's).
    func writtenValues(of object: ManagedObject, encodingChangedOnly: Bool) throws -> [Value] {
        var values = object.values
        for (index, value) in values.enumerated() {
            if case .objectID(let id) = value, let permanent = aliases[id] { values[index] = .objectID(permanent) }
        }
        for attribute in object.entity.attributes where attribute.attributeType == .transformable {
            let encodes = !encodingChangedOnly || object.changedIndices.contains(attribute.index) || object.isInserted
            if let box = object.boxed[attribute.index], encodes {
                values[attribute.index] = .data(try TransformableCoding.encode(box, valueType: attribute.valueType))
            } else if case .data(let data) = values[attribute.index], data.isEmpty, object.snapshot == nil {
                values[attribute.index] = .null
            }
        }
        return values
    }

    /// The save request for the context's changes (the same for the stores and for a parent),
    /// with IDs made canonical and transformable values encoded.
    func makeSaveRequest() throws -> (ContextSaveRequest, SavedObjects) {
        var request = ContextSaveRequest()
        var saved = SavedObjects()
        func relationships(_ object: ManagedObject, whole: Bool) -> [ChangedRelationship] {
            var result: [ChangedRelationship] = []
            for (index, value) in object.toMany where whole || value.hasChanges {
                guard let relationship = object.entity.properties[index] as? RelationshipDescription else { continue }
                if whole {
                    let ids = value.ids.map(canonical)
                    result.append(ChangedRelationship(index: index, added: ids, removed: [], order: relationship.isOrdered ? ids : nil))
                } else {
                    // An ordered relationship that changed is written with its whole order.
                    let order = relationship.isOrdered ? (value.isLoaded ? value.ids : object.destinationIDs(relationship)).map(canonical) : nil
                    result.append(ChangedRelationship(
                        index: index, added: value.added.map(canonical), removed: value.removed.map(canonical), order: order))
                }
            }
            return result
        }
        for object in insertedObjects where !object.isDeleted {
            request.inserted.append(ChangedObject(
                id: object.objectID, entity: object.entity, values: try writtenValues(of: object, encodingChangedOnly: true),
                changedIndices: [], relationships: relationships(object, whole: true), base: nil,
                // A permanent ID (obtainPermanentIDs) already names the object's store.
                store: object.objectID.persistentStore ?? assignedStores[object.objectID]))
            saved.inserted.append(object)
        }
        for object in updatedObjects where !object.isDeleted && !object.isInserted && object.hasChanges {
            // Attributes (transient ones too: a parent context keeps them) and to-one relationships.
            // A store writes only what lives in the row; a to-many change is written as foreign keys
            // or join-table rows, so it neither bumps nor checks the source's version: two contexts
            // adding notes to one folder do not conflict.
            let indices = object.changedIndices.filter { (object.entity.properties[$0] as? RelationshipDescription)?.isToMany != true }
            request.updated.append(ChangedObject(
                id: object.objectID, entity: object.entity, values: try writtenValues(of: object, encodingChangedOnly: true),
                changedIndices: indices.sorted(), relationships: relationships(object, whole: false), base: object.snapshot, store: nil))
            saved.updated.append(object)
        }
        for object in deletedObjects where !object.isInserted {
            saved.deleted.append(object)
            // Deleted elsewhere and merged: its row is gone already.
            if object.state.isDeletedElsewhere { continue }
            request.deleted.append(ChangedObject(
                id: object.objectID, entity: object.entity, values: [], changedIndices: [], relationships: [], base: object.snapshot, store: nil))
        }
        return (request, saved)
    }

    /// Brings the context up to date after a successful save and posts `didSaveObjectsNotification`.
    func didSave(_ saved: SavedObjects, result: ContextSaveResult) {
        let mapping = result.permanentIDs
        for object in saved.inserted { assignedStores[object.objectID] = nil }
        var changedKeys: [ManagedObjectID: Set<String>] = [:]
        for object in saved.updated {
            changedKeys[canonical(object.objectID)] = Set(object.changedIndices.map { object.entity.properties[$0].name })
        }
        adopt(mapping)
        // Descendants take the permanent IDs before anything that follows the save reaches them.
        propagatePermanentIDs(mapping)
        var inserted = Set<ManagedObject>(minimumCapacity: saved.inserted.count)
        var updated = Set<ManagedObject>(minimumCapacity: saved.updated.count)
        var deleted = Set<ManagedObject>(minimumCapacity: saved.deleted.count)
        func settle(_ object: ManagedObject) {
            // Keeps transient values and decoded transformables; takes stored values as written.
            object.settleAsSaved(row: result.snapshots[object.objectID]) { aliases[$0] ?? mapping[$0] }
            object.state.didSave()
        }
        for object in saved.inserted {
            settle(object)
            inserted.insert(object)
        }
        for object in saved.updated {
            settle(object)
            updated.insert(object)
        }
        for object in saved.deleted {
            deleted.insert(object)
            unregister(object)
            object.state.didSaveDelete()
        }
        changes.removeSaved()
        if !retainsRegisteredObjects { retained = [] }
        // Objects stay alive through the notification and didSave().
        for object in inserted { object.didSave() }
        for object in updated { object.didSave() }
        for object in deleted { object.didSave() }
        let changes = SaveChanges(
            inserted: Set(inserted.map(\.objectID)), updated: Set(updated.map(\.objectID)),
            deleted: Set(saved.deleted.map { canonical($0.objectID) }), changedKeys: changedKeys, snapshots: result.snapshots, source: parentStore)
        postDidSave(inserted: inserted, updated: updated, deleted: deleted, changes: changes, historyToken: result.historyToken)
        publish(changes)
        didSaveForNesting(changes)
    }

    /// Posts `didSaveObjectsNotification` and `didSaveObjectIDsNotification`. With persistent
    /// history on, both carry the save's transactions as a ``PersistentHistoryToken`` under
    /// `"newChangeToken"`, the key Core Data uses there.
    private func postDidSave(
        inserted: Set<ManagedObject>, updated: Set<ManagedObject>, deleted: Set<ManagedObject>, changes: SaveChanges,
        historyToken: PersistentHistoryToken? = nil
    ) {
        var objects: [AnyHashable: Any] = [
            NotificationKey.insertedObjects.rawValue: inserted,
            NotificationKey.updatedObjects.rawValue: updated,
            NotificationKey.deletedObjects.rawValue: deleted,
            SaveChanges.userInfoKey: changes,
        ]
        var ids: [AnyHashable: Any] = [
            NotificationKey.insertedObjectIDs.rawValue: changes.insertedObjectIDs,
            NotificationKey.updatedObjectIDs.rawValue: changes.updatedObjectIDs,
            NotificationKey.deletedObjectIDs.rawValue: changes.deletedObjectIDs,
            SaveChanges.userInfoKey: changes,
        ]
        if let historyToken {
            objects[Self.newChangeTokenKey] = historyToken
            ids[Self.newChangeTokenKey] = historyToken
        }
        NotificationCenter.default.post(name: Self.didSaveObjectsNotification, object: self, userInfo: objects)
        NotificationCenter.default.post(name: Self.didSaveObjectIDsNotification, object: self, userInfo: ids)
    }

    /// The user-info key of a save's history token in `didSave` notifications (Core Data's, undocumented there).
    static let newChangeTokenKey = "newChangeToken"
}
