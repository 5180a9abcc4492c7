import Dispatch
import Foundation

extension ManagedObjectContext {
    // MARK: - Inserting and deleting

    /// Chooses the store a newly inserted object is saved to, where its coordinator has several
    /// (Core Data's `assign(_:to:)`). Without it, an object goes to the first store whose
    /// configuration includes its entity.
    ///
    /// ```swift
    /// context.assign(note, to: archive)
    /// ```
    ///
    /// It is a programmer error to assign an object that is not newly inserted in this context, or
    /// to a store of another coordinator, or whose configuration does not include its entity.
    public func assign(_ object: ManagedObject, to store: PersistentStore) {
        assertOnQueue("assign(_:to:)")
        guard object.managedObjectContext === self, object.isInserted, object.objectID.isTemporaryID else {
            fatalError("ObjectGraph: assign(_:to:) in context '\(debugName)': \(object.objectID) is not a newly inserted object of this context (only those can be assigned to a store)")
        }
        let coordinator = coordinator
        guard coordinator.persistentStores.contains(where: { $0 === store }) else {
            fatalError("ObjectGraph: assign(_:to:) in context '\(debugName)': \(store) is not a store of this context's coordinator")
        }
        if !coordinator.holds(store, object.entity) {
            fatalError("ObjectGraph: assign(_:to:) in context '\(debugName)': configuration '\(store.configurationName ?? "")' of \(store) does not include entity '\(object.entity.name)' of \(object.objectID)")
        }
        assignedStores[object.objectID] = store
    }

    /// Inserts a new object of the named entity.
    ///
    /// It is a programmer error to name an entity the model does not have, or an abstract one.
    public func insertNewObject(forEntityName entityName: String) -> ManagedObject {
        assertOnQueue("insertNewObject(forEntityName:)")
        guard let entity = model?.entitiesByName[entityName] else {
            fatalError("ObjectGraph: the model of context '\(debugName)' has no entity named '\(entityName)'")
        }
        return entity.managedObjectClass.init(entity: entity, insertInto: self)
    }

    /// Inserts an object created with no context.
    public func insert(_ object: ManagedObject) {
        assertOnQueue("insert(_:)")
        freezeConfiguration()
        if object.managedObjectContext === self && (object.isInserted || registered[object.objectID]?.object != nil) { return }
        precondition(object.managedObjectContext == nil, "ObjectGraph: \(object.objectID) already belongs to context '\(object.managedObjectContext?.debugName ?? "")'")
        if object.entity.isAbstract {
            fatalError("ObjectGraph: cannot insert an object of abstract entity '\(object.entity.name)' into context '\(debugName)'")
        }
        object.fillForInsert()
        object.state.insert()
        register(object)
        changes.recordInsert(object)
        retained.insert(object)
        noteUnreportedChange(object)
        registerUndo(of: object) { context, object in context.detachInserted(object) }
        // Before awakeFromInsert, so that an override sees them even when it does not call super.
        object._managedApplyInitialValues()
        object.awakeFromInsert()
    }

    /// Marks an object deleted; delete rules apply at the next `processPendingChanges()` (at the
    /// latest at save), and the row is deleted when the context saves.
    public func delete(_ object: ManagedObject) {
        assertOnQueue("delete(_:)")
        guard object.managedObjectContext === self else {
            fatalError("ObjectGraph: cannot delete \(object.objectID) in context '\(debugName)': it belongs to \(object.managedObjectContext.map { "context '\($0.debugName)'" } ?? "no context")")
        }
        if object.isDeleted { return }
        object.fireFaultIfNeeded()
        markDeleted(object) { $0.delete() }
    }

    /// Makes an object deleted by a transition of its state (when the transition allows it),
    /// undoably: recorded as deleted, kept alive until the save, and reported.
    func markDeleted(_ object: ManagedObject, by transition: (inout ObjectState) -> Bool) {
        let saved = object.state
        guard transition(&object.state) else { return }
        registerUndo(of: object) { context, object in context.undelete(object, restoring: saved) }
        changes.recordDelete(object)
        retained.insert(object)
        noteUnreportedChange(object)
    }

    /// Records that an object changed since the last `objectsDidChangeNotification`, which reports
    /// each change once.
    func noteUnreportedChange(_ object: ManagedObject) {
        guard object.state.noteUnreported() else { return }
        changes.recordUnreported(object)
        if scheduler.hasMainRunLoopTurns && !isMainQueueTurnScheduled {
            // Core Data processes a main-queue context's changes at the end of the run loop's turn.
            isMainQueueTurnScheduled = true
            scheduler.atEndOfMainRunLoopTurn { [weak self] in
                guard let self else { return }
                self.isMainQueueTurnScheduled = false
                if !self.changes.pendingDeletes.isEmpty || !self.changes.unreported.isEmpty { self.processPendingChanges() }
            }
        }
    }
}
