import Foundation

extension ManagedObjectContext {
    /// Notification names and user-info keys, as in Core Data.
    public static let objectsDidChangeNotification = Notification.Name("ObjectGraphObjectsDidChangeNotification")
    public static let willSaveObjectsNotification = Notification.Name("ObjectGraphWillSaveObjectsNotification")
    public static let didSaveObjectsNotification = Notification.Name("ObjectGraphDidSaveObjectsNotification")
    public static let didSaveObjectIDsNotification = Notification.Name("ObjectGraphDidSaveObjectIDsNotification")
    public static let didMergeChangesObjectIDsNotification = Notification.Name("ObjectGraphDidMergeChangesObjectIDsNotification")

    /// Keys of the notifications' `userInfo`, Core Data's `NSManagedObjectContext.NotificationKey`:
    /// the `userInfo` dictionaries are keyed by their `rawValue`s.
    ///
    /// ```swift
    /// let inserted = notification.userInfo?[ManagedObjectContext.NotificationKey.insertedObjects.rawValue] as? Set<ManagedObject>
    /// ```
    public enum NotificationKey: String, Sendable, CaseIterable {
        case insertedObjects = "inserted"
        case updatedObjects = "updated"
        case deletedObjects = "deleted"
        case refreshedObjects = "refreshed"
        case invalidatedObjects = "invalidated"
        case invalidatedAllObjects = "invalidatedAll"
        case insertedObjectIDs = "inserted_objectIDs"
        case updatedObjectIDs = "updated_objectIDs"
        case deletedObjectIDs = "deleted_objectIDs"
        case refreshedObjectIDs = "refreshed_objectIDs"
        case invalidatedObjectIDs = "invalidated_objectIDs"
        case queryGeneration = "managedObjectContextQueryGenerationKey"
    }

    /// Applies delete rules to objects deleted since the last call, and posts
    /// `objectsDidChangeNotification`. Runs at the end of every `perform` block and before a save
    /// or a fetch.
    public func processPendingChanges() {
        assertOnQueue("processPendingChanges()")
        // The changes since the last call, delete rules included, are one undo group.
        defer { closeUndoGroup() }
        var deleted: Set<ManagedObject> = []
        while !changes.pendingDeletes.isEmpty {
            for object in changes.takePendingDeletes() where object.state.takeDeleteRules() {
                deleted.insert(object)
                applyDeleteRules(object)
            }
        }
        // Objects inserted and deleted before any save never reach the store.
        for object in deleted where object.isInserted {
            detachInserted(object)
        }
        // Each change is reported once: what changed since the previous notification.
        var inserted: Set<ManagedObject> = [], updated: Set<ManagedObject> = []
        for object in changes.takeUnreported() {
            let report = object.state.report()
            guard !deleted.contains(object), object.managedObjectContext === self else { continue }
            switch report {
            case .inserted: inserted.insert(object)
            case .updated: updated.insert(object)
            case nil: break
            }
        }
        guard !inserted.isEmpty || !updated.isEmpty || !deleted.isEmpty else { return }
        NotificationCenter.default.post(name: Self.objectsDidChangeNotification, object: self, userInfo: [
            NotificationKey.insertedObjects.rawValue: inserted,
            NotificationKey.updatedObjects.rawValue: updated,
            NotificationKey.deletedObjects.rawValue: deleted,
        ])
    }

    private func applyDeleteRules(_ object: ManagedObject) {
        object.prepareForDeletion()
        for relationship in object.entity.relationships {
            switch relationship.deleteRule {
            case .noAction, .deny:
                continue
            case .nullify:
                guard let inverse = relationship.inverseRelationship else { continue }
                for destination in destinations(of: object, relationship) {
                    if inverse.isToMany {
                        destination.removeDestination(object.objectID, from: inverse)
                    } else if destination.toOneID(inverse) == object.objectID {
                        destination.setToOne(inverse, to: nil, maintainInverse: false)
                    }
                }
            case .cascade:
                let targets = destinations(of: object, relationship)
                fulfillFaults(targets)
                for destination in targets where !destination.isDeleted {
                    // The destination leaves this object's inverse too, then is deleted in turn.
                    delete(destination)
                }
            }
        }
    }

    private func destinations(of object: ManagedObject, _ relationship: RelationshipDescription) -> [ManagedObject] {
        if relationship.isToMany { return object.destinationObjects(relationship) }
        guard let id = object.toOneID(relationship) else { return [] }
        return existingRegisteredOrFault(id).map { [$0] } ?? []
    }

    /// Discards every unsaved change: inserted objects leave, deleted ones come back, updated ones
    /// take their saved values again.
    public func rollback() {
        assertOnQueue("rollback()")
        for object in insertedObjects { unregister(object) }
        // Deleted elsewhere: their rows are gone, they cannot come back.
        for object in deletedObjects where object.state.isDeletedElsewhere { invalidate(object) }
        for object in updatedObjects.union(deletedObjects) where object.managedObjectContext === self {
            object.state.discardChanges()
            object.revertToSnapshot()
        }
        discardChangeSet()
        assignedStores = [:]
        // As in Core Data, a rollback forgets what could be undone.
        discardUndoActions()
        if !retainsRegisteredObjects { retained = [] }
        restoreUnloadedToManyRelationships()
    }

    /// Forgets every registered object and unsaved change. As in Core Data, an object the program
    /// still holds is a fault with no context afterwards (`isFault` true, `managedObjectContext`
    /// nil): reading it stops the program, so fetch again, or resolve its ID.
    public func reset() {
        assertOnQueue("reset()")
        advanceQueryGeneration()
        let objects = forgetAllObjects()
        NotificationCenter.default.post(name: Self.objectsDidChangeNotification, object: self, userInfo: [
            NotificationKey.invalidatedAllObjects.rawValue: Set(objects),
        ])
    }

    /// Ends a context that `PersistentContainer.performBackgroundTask` made for one
    /// block, once the block has run: forgets its objects and changes as ``reset()`` does, without
    /// telling observers (the context is discarded). An object keeps its context alive, so a context
    /// that still held objects (retained ones, or unsaved changes) would keep itself and them alive
    /// for as long as the program runs, through the references between them.
    func discardAfterTask() {
        assertOnQueue("discarding a background task's context")
        queryGeneration.pinned = nil  // released, where reset() would pin the current generation
        _ = forgetAllObjects()
    }

    /// What ``reset()`` does but tell and move its query generation: every object forgotten (the ones the program still holds
    /// become faults without a context), every change discarded; returns the objects that were
    /// registered.
    private func forgetAllObjects() -> [ManagedObject] {
        let objects = liveObjects
        var held: [ManagedObjectID] = pinnedRows
        for object in objects {
            // As in Core Data, an object the program still holds is a fault with no context.
            if object.state.forgetAtReset() { held.append(object.objectID) }
            object.managedObjectContext = nil
            object.dropData()
        }
        persistentStoreCoordinator?.rowCache.release(held)
        registered = [:]
        retained = []
        aliases.removeAll()
        assignedStores = [:]
        pinnedRows = []
        discardChangeSet()
        discardUndoActions()
        return objects
    }

    /// Forgets every undo and redo action (reset, rollback): they name objects that are gone.
    private func discardUndoActions() {
        isUndoGroupOpen = false
        undoManager?.removeAllActions()
    }

    /// Forgets every unsaved change and the changes not reported yet (they were discarded).
    func discardChangeSet() {
        for object in changes.removeAll() { object.state.clearUnreported() }
    }

    /// Gives inserted objects permanent IDs now, before they are saved.
    ///
    /// - Throws: when the store cannot allocate IDs.
    public func obtainPermanentIDs(for objects: [ManagedObject]) throws {
        assertOnQueue("obtainPermanentIDs(for:)")
        let temporary = objects.filter { $0.objectID.isTemporaryID && $0.managedObjectContext === self }
        guard !temporary.isEmpty else { return }
        let ids = temporary.map(\.objectID)
        // The coordinator gives them, through the chain; every context of the chain then uses them.
        let assignments = assignedStores.filter { ids.contains($0.key) }
        adoptPermanentIDs(try chainPermanentIDs(for: ids, assignments: assignments))
    }

    /// Re-registers objects under permanent IDs, keeping the temporary ones as aliases.
    func adopt(_ mapping: [ManagedObjectID: ManagedObjectID]) {
        aliases.add(mapping)
        for (temporary, permanent) in mapping {
            guard let object = registered[temporary]?.object else { continue }
            registered[temporary] = nil
            object.objectID = permanent
            registered[permanent] = WeakObject(object)
        }
    }
}
