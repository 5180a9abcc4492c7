import Foundation
import Testing
import ObjectGraph
@testable import ObjectGraphCore

/// A target for the undo manager's own tests.
private final class Counter {
    var value = 0
    func set(_ newValue: Int, on undoManager: ObjectGraph.UndoManager) {
        let old = value
        undoManager.registerUndo(withTarget: self) { counter in counter.set(old, on: undoManager) }
        value = newValue
    }
}

@Suite("The undo manager: groups, undo, redo, names and limits")
struct UndoManagerTests {
    @Test func aGroupIsUndoneWholeAndRedoneWhole() {
        let undoManager = ObjectGraph.UndoManager()
        let counter = Counter()
        undoManager.beginUndoGrouping()
        counter.set(1, on: undoManager)
        counter.set(2, on: undoManager)
        undoManager.setActionName("Count")
        undoManager.endUndoGrouping()
        #expect(undoManager.canUndo && !undoManager.canRedo)
        #expect(undoManager.undoActionName == "Count")
        undoManager.undo()
        #expect(counter.value == 0)
        #expect(undoManager.canRedo && !undoManager.canUndo)
        #expect(undoManager.redoActionName == "Count")
        undoManager.redo()
        #expect(counter.value == 2)
        undoManager.undo()
        #expect(counter.value == 0)
    }

    @Test func registeringOutsideAGroupOpensOneThatUndoCloses() {
        let undoManager = ObjectGraph.UndoManager()
        let counter = Counter()
        counter.set(5, on: undoManager)
        counter.set(6, on: undoManager)
        #expect(undoManager.groupingLevel == 1)
        undoManager.undo()
        #expect(counter.value == 0, "both changes were one event")
        #expect(undoManager.groupingLevel == 0)
    }

    @Test func aNewChangeDropsWhatWasUndone() {
        let undoManager = ObjectGraph.UndoManager()
        undoManager.groupsByEvent = false
        let counter = Counter()
        for value in 1...2 {
            undoManager.beginUndoGrouping()
            counter.set(value, on: undoManager)
            undoManager.endUndoGrouping()
        }
        undoManager.undo()
        #expect(counter.value == 1 && undoManager.canRedo)
        undoManager.beginUndoGrouping()
        counter.set(7, on: undoManager)
        undoManager.endUndoGrouping()
        #expect(!undoManager.canRedo)
        undoManager.undo()
        undoManager.undo()
        #expect(counter.value == 0)
    }

    @Test func levelsOfUndoKeepsTheMostRecentGroups() {
        let undoManager = ObjectGraph.UndoManager()
        undoManager.levelsOfUndo = 2
        let counter = Counter()
        for value in 1...4 {
            undoManager.beginUndoGrouping()
            counter.set(value, on: undoManager)
            undoManager.endUndoGrouping()
        }
        undoManager.undo()
        undoManager.undo()
        #expect(counter.value == 2)
        #expect(!undoManager.canUndo, "older groups were dropped")
    }

    @Test func disabledRegistrationRecordsNothingAndNests() {
        let undoManager = ObjectGraph.UndoManager()
        let counter = Counter()
        undoManager.disableUndoRegistration()
        undoManager.disableUndoRegistration()
        counter.set(1, on: undoManager)
        undoManager.enableUndoRegistration()
        counter.set(2, on: undoManager)
        #expect(!undoManager.isUndoRegistrationEnabled)
        undoManager.enableUndoRegistration()
        #expect(undoManager.isUndoRegistrationEnabled && !undoManager.canUndo)
    }

    @Test func actionsOfARemovedTargetOrAGoneTargetAreForgotten() {
        let undoManager = ObjectGraph.UndoManager()
        undoManager.groupsByEvent = false
        let kept = Counter()
        var dropped: Counter? = Counter()
        undoManager.beginUndoGrouping()
        kept.set(1, on: undoManager)
        dropped!.set(1, on: undoManager)
        undoManager.endUndoGrouping()
        undoManager.removeAllActions(withTarget: kept)
        dropped = nil
        #expect(!undoManager.canUndo, "no action is left")
        undoManager.undo()
        #expect(kept.value == 1)
    }

    @Test func nestedGroupsAreUndoneWithTheirOuterGroup() {
        let undoManager = ObjectGraph.UndoManager()
        let counter = Counter()
        undoManager.beginUndoGrouping()
        counter.set(1, on: undoManager)
        undoManager.beginUndoGrouping()
        counter.set(2, on: undoManager)
        #expect(undoManager.groupingLevel == 2)
        undoManager.endUndoGrouping()
        undoManager.endUndoGrouping()
        undoManager.undo()
        #expect(counter.value == 0)
        undoManager.redo()
        #expect(counter.value == 2)
    }
}

@Suite("Undo in a context: inserts, deletes with their rules, attributes and relationships")
struct ContextUndoTests {
    private func context(_ stack: TestStack) -> ManagedObjectContext {
        let context = stack.context("undoable")
        context.undoManager = ObjectGraph.UndoManager()
        return context
    }

    @Test(arguments: StoreKind.everyStore)
    func anAttributeChangeIsUndoneAndRedoneAcrossASave(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        let context = context(stack)
        let note = context.insert("Note", ["title": "first", "rank": Int64(1)])
        try context.save()
        note.setValue("second", forKey: "title")
        note.setValue(Int64(2), forKey: "rank")
        context.processPendingChanges()
        context.undo()
        #expect(note.value(forKey: "title") as? String == "first")
        #expect(note.value(forKey: "rank") as? Int64 == 1)
        context.redo()
        #expect(note.value(forKey: "title") as? String == "second")
        try context.save()
        // Undoing past a save makes the context dirty again; saving writes the undone value.
        context.undo()
        #expect(context.hasChanges)
        try context.save()
        let reader = stack.context("reader")
        #expect(try reader.existingObject(with: note.objectID).value(forKey: "title") as? String == "first")
    }

    @Test(arguments: StoreKind.everyStore)
    func anUndoneInsertLeavesTheContextAndARedoBringsItBackWithItsValues(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        let context = context(stack)
        let folder = context.insert("Folder", ["name": "Inbox"])
        try context.save()
        let note = context.insert("Note", ["title": "new", "folder": folder])
        context.processPendingChanges()
        #expect((folder.value(forKey: "notes") as? Set<ManagedObject>) == [note])
        context.undo()
        #expect(note.managedObjectContext == nil)
        #expect(context.insertedObjects.isEmpty)
        #expect((folder.value(forKey: "notes") as? Set<ManagedObject>) == [], "the inverse is undone too")
        context.redo()
        #expect(note.managedObjectContext === context && note.isInserted)
        #expect(note.value(forKey: "title") as? String == "new")
        #expect((note.value(forKey: "folder") as? ManagedObject) === folder)
        #expect((folder.value(forKey: "notes") as? Set<ManagedObject>) == [note])
        try context.save()
        #expect(try stack.context("reader").count(for: FetchRequest<ManagedObject>(entityName: "Note")) == 1)
    }

    @Test(arguments: StoreKind.everyStore)
    func anUndoneDeleteBringsBackWhatItsCascadeAndNullifyRulesChanged(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        let context = context(stack)
        let folder = context.insert("Folder", ["name": "Inbox"])
        let a = context.insert("Note", ["title": "a", "folder": folder])
        let b = context.insert("Note", ["title": "b", "folder": folder])
        let tag = context.insert("Tag", ["name": "t"])
        a.setValue(Set([tag]), forKey: "tags")
        try context.save()
        context.undoManager?.removeAllActions()

        context.delete(folder)
        context.processPendingChanges()
        #expect(a.isDeleted && b.isDeleted, "the cascade reached the notes")
        #expect((tag.value(forKey: "notes") as? Set<ManagedObject>) == [], "the many-to-many was nullified")
        context.undo()
        #expect(!folder.isDeleted && !a.isDeleted && !b.isDeleted)
        #expect(context.deletedObjects.isEmpty)
        #expect((folder.value(forKey: "notes") as? Set<ManagedObject>) == [a, b])
        #expect((tag.value(forKey: "notes") as? Set<ManagedObject>) == [a])
        #expect(context.changes.violations(among: context.liveObjects, in: context).isEmpty)
        context.redo()
        #expect(folder.isDeleted && a.isDeleted && b.isDeleted)
        #expect((tag.value(forKey: "notes") as? Set<ManagedObject>) == [])
        #expect(context.changes.violations(among: context.liveObjects, in: context).isEmpty)
        try context.save()
        let reader = stack.context("reader")
        #expect(try reader.count(for: FetchRequest<ManagedObject>(entityName: "Note")) == 0)
        #expect(try reader.count(for: FetchRequest<ManagedObject>(entityName: "Tag")) == 1)
    }

    @Test func movingANoteBetweenFoldersIsUndoneOnBothSides() throws {
        let stack = try TestStack(.inMemory)
        let context = context(stack)
        let inbox = context.insert("Folder", ["name": "Inbox"])
        let archive = context.insert("Folder", ["name": "Archive"])
        let note = context.insert("Note", ["title": "n", "folder": inbox])
        try context.save()
        context.undoManager?.removeAllActions()
        note.setValue(archive, forKey: "folder")
        context.processPendingChanges()
        context.undo()
        #expect((note.value(forKey: "folder") as? ManagedObject) === inbox)
        #expect((inbox.value(forKey: "notes") as? Set<ManagedObject>) == [note])
        #expect((archive.value(forKey: "notes") as? Set<ManagedObject>) == [])
        context.redo()
        #expect((note.value(forKey: "folder") as? ManagedObject) === archive)
        #expect((inbox.value(forKey: "notes") as? Set<ManagedObject>) == [])
    }

    @Test func anInsertedObjectDeletedBeforeASaveComesBackOnUndo() throws {
        let stack = try TestStack(.inMemory)
        let context = context(stack)
        let note = context.insert("Note", ["title": "short-lived"])
        context.processPendingChanges()
        context.delete(note)
        context.processPendingChanges()
        #expect(note.managedObjectContext == nil)
        context.undo()
        #expect(note.managedObjectContext === context && note.isInserted && !note.isDeleted)
        #expect(context.insertedObjects == [note])
        #expect(context.changes.violations(among: context.liveObjects, in: context).isEmpty)
    }

    @Test func theChangesOfOnePerformBlockAreOneGroup() throws {
        let stack = try TestStack(.inMemory)
        let context = stack.privateContext("worker")
        try context.performAndWait {
            context.undoManager = ObjectGraph.UndoManager()
            let note = context.insert("Note", ["title": "a"])
            try context.save()
            context.undoManager?.removeAllActions()
            context.performAndWait {
                note.setValue("b", forKey: "title")
                note.setValue(Int64(9), forKey: "rank")
            }
            context.processPendingChanges()
            context.undo()
            #expect(note.value(forKey: "title") as? String == "a")
            #expect(note.value(forKey: "rank") as? Int64 == 0)
            #expect(context.undoManager?.canUndo == false)
        }
    }

    @Test func rollbackAndResetForgetTheUndoActionsAndNoManagerRecordsNothing() throws {
        let stack = try TestStack(.inMemory)
        let context = context(stack)
        _ = context.insert("Note", ["title": "a"])
        context.processPendingChanges()
        #expect(context.undoManager?.canUndo == true)
        context.rollback()
        #expect(context.undoManager?.canUndo == false)
        _ = context.insert("Note", ["title": "b"])
        context.reset()
        #expect(context.undoManager?.canUndo == false)

        let plain = stack.context("plain")
        let note = plain.insert("Note", ["title": "c"])
        plain.processPendingChanges()
        plain.undo()
        #expect(note.managedObjectContext === plain, "without an undo manager, undo does nothing")
    }
}
