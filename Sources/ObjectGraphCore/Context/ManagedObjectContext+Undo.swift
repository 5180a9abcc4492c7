import Foundation

extension ManagedObjectContext {
    // MARK: - Undo and redo

    /// Undoes the most recent group of changes recorded by ``undoManager`` (Core Data's `undo()`):
    /// inserted objects leave, deleted ones come back, changed properties — both sides of a
    /// relationship — take their previous values. Does nothing without an undo manager.
    ///
    /// ```swift
    /// context.undoManager = ObjectGraph.UndoManager()
    /// note.setValue("Draft", forKey: "title")
    /// context.processPendingChanges()     // ends the group
    /// context.undo()
    /// ```
    public func undo() {
        assertOnQueue("undo()")
        guard let undoManager else { return }
        processPendingChanges()
        undoManager.undo()
        processPendingChanges()
    }

    /// Redoes the group of changes most recently undone. Does nothing without an undo manager.
    public func redo() {
        assertOnQueue("redo()")
        guard let undoManager else { return }
        processPendingChanges()
        undoManager.redo()
        processPendingChanges()
    }

    // MARK: - Recording

    /// Records how to reverse a change of `object`. The first change after a
    /// `processPendingChanges()` opens a group, which the next one closes; while the undo manager
    /// undoes or redoes, the reversal goes into its own group.
    func registerUndo(of object: ManagedObject, _ reversal: @escaping (ManagedObjectContext, ManagedObject) -> Void) {
        guard let undoManager, undoManager.isUndoRegistrationEnabled else { return }
        if !undoManager.isUndoing && !undoManager.isRedoing && !isUndoGroupOpen {
            undoManager.beginUndoGrouping()
            isUndoGroupOpen = true
        }
        undoManager.registerUndo(withTarget: self) { context in reversal(context, object) }
    }

    /// Closes the undo group this context opened, if any (at the end of `processPendingChanges()`).
    func closeUndoGroup() {
        guard isUndoGroupOpen else { return }
        isUndoGroupOpen = false
        undoManager?.endUndoGrouping()
    }

    /// An inserted object leaves the context (its insert undone, or it was deleted before any save),
    /// keeping its values, so that undoing this puts it back as it was.
    func detachInserted(_ object: ManagedObject) {
        guard object.managedObjectContext === self else { return }
        // Saved since it was inserted: undoing its insert deletes it, as in Core Data.
        guard object.isInserted else { return delete(object) }
        let saved = object.state
        registerUndo(of: object) { context, object in context.attach(object, restoring: saved) }
        changes.forget(object)
        unregister(object)
    }

    /// Puts an inserted object that left the context back, in the phase it had.
    func attach(_ object: ManagedObject, restoring saved: ObjectState) {
        guard object.managedObjectContext == nil, object.state.isInserted else { return }
        registerUndo(of: object) { context, object in context.detachInserted(object) }
        object.state.restorePhase(of: saved)
        register(object)
        changes.recordInsert(object)
        if object.state.isInDeletedSet { changes.recordDelete(object) }
        retained.insert(object)
        noteUnreportedChange(object)
    }

    /// Undoes a delete: the object takes back the phase it had before.
    func undelete(_ object: ManagedObject, restoring saved: ObjectState) {
        guard object.managedObjectContext === self, object.isDeleted else { return }
        registerUndo(of: object) { context, object in context.redelete(object) }
        changes.forgetDelete(object)
        object.state.restorePhase(of: saved)
        noteUnreportedChange(object)
    }

    /// Redoes a delete. Its delete rules are not applied again: their effects were recorded one by
    /// one with it, and are redone with it.
    func redelete(_ object: ManagedObject) {
        guard object.managedObjectContext === self else { return }
        markDeleted(object) { $0.deleteForRedo() }
    }
}

extension ManagedObject {
    /// Records how to put a stored property (an attribute or a to-one relationship) back as it is
    /// now, when the context has an undo manager.
    @inline(__always)
    func registerUndoOfStored(_ index: Int) {
        guard let context = managedObjectContext, context.undoManager != nil else { return }
        let value = values[index]
        let box = boxed[index]
        context.registerUndo(of: self) { _, object in object.restoreStored(index, value, box) }
    }

    /// Undo of a stored property's change: the value is put back as it was, with no inverse
    /// maintenance (the other side's change was recorded and is undone on its own).
    func restoreStored(_ index: Int, _ value: Value, _ box: Any?) {
        fireFaultIfNeeded()
        registerUndoOfStored(index)
        putBack(value, box, at: index)
        markChanged(index)
    }

    /// Records how to put a to-many relationship back to `ids`.
    func registerUndoOfDestinations(_ relationship: RelationshipDescription, _ ids: [ManagedObjectID]) {
        guard let context = managedObjectContext, context.undoManager != nil else { return }
        context.registerUndo(of: self) { _, object in object.restoreDestinations(relationship, ids) }
    }

    /// Undo of a to-many relationship's replacement: its destinations are put back, in order,
    /// with no inverse maintenance.
    func restoreDestinations(_ relationship: RelationshipDescription, _ ids: [ManagedObjectID]) {
        registerUndoOfDestinations(relationship, destinationIDs(relationship))
        relationshipValue(relationship).replace(with: ids)
        markChanged(relationship.index)
    }
}
