import Foundation
import Testing
import ObjectGraph
@testable import ObjectGraphCore

/// Behaviours Apple's Core Data has that programs rely on (each finding a test).
@Suite("Core Data fidelity: notifications, merges, transients, refresh")
struct CoreDataFidelityTests {
    typealias Observed = MergeTests.Observed

    static func objects(_ notification: Notification?, _ key: ManagedObjectContext.NotificationKey) -> Set<ManagedObject> {
        notification?.userInfo?[key.rawValue] as? Set<ManagedObject> ?? []
    }

    static func ids(_ notification: Notification?, _ key: ManagedObjectContext.NotificationKey) -> Set<ManagedObjectID> {
        notification?.userInfo?[key.rawValue] as? Set<ManagedObjectID> ?? []
    }

    static func transientModel() -> ManagedObjectModel {
        ManagedObjectModel(entities: [
            EntityDescription(name: "Note", properties: [
                .attribute("title", .string, isOptional: false, defaultValue: ""),
                .attribute("draft", .string, isOptional: false, defaultValue: "none", isTransient: true),
            ]),
        ])
    }

    // MARK: Transients

    @Test(arguments: StoreKind.allCases)
    func aRequiredTransientHasItsDefaultAfterAFetchAndTheObjectSaves(_ kind: StoreKind) throws {
        let stack = try TestStack(kind, model: Self.transientModel())
        let writer = stack.context("writer")
        let note = writer.insert("Note", ["title": "a", "draft": "typing"])
        try writer.save()
        let reader = stack.context("reader")
        let fetched = try #require(try reader.all("Note").first)
        #expect(fetched.value(forKey: "draft") as? String == "none")
        fetched.setValue("b", forKey: "title")
        try reader.save()
        // Refreshed (turned into a fault and fetched again): the default again.
        note.setValue("kept?", forKey: "draft")
        writer.refresh(note, mergeChanges: false)
        #expect(note.value(forKey: "draft") as? String == "none")
    }

    @Test(arguments: StoreKind.allCases)
    func aChildsTransientOnlyChangeReachesItsParentAndAChildReadsTheDefault(_ kind: StoreKind) throws {
        let stack = try TestStack(kind, model: Self.transientModel())
        let parent = stack.context("parent")
        let note = parent.insert("Note", ["title": "a"])
        try parent.save()
        let child = ManagedObjectContext(concurrencyType: .confinement)
        child.parent = parent
        let inChild = child.object(with: note.objectID)
        inChild.setValue("typing", forKey: "draft")
        #expect(child.hasChanges)
        try child.save()
        #expect(note.value(forKey: "draft") as? String == "typing")

        // Another child reading the object gets the transient's default, not the parent's value.
        let other = ManagedObjectContext(concurrencyType: .confinement)
        other.parent = parent
        #expect(try other.existingObject(with: note.objectID).value(forKey: "draft") as? String == "none")
    }

    // MARK: Notifications

    @Test(arguments: StoreKind.allCases)
    func resetAndRefreshAllObjectsAndAnEmptySavePostTheirNotifications(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        let context = stack.context()
        let a = context.insert("Note", ["title": "a"])
        try context.save()
        let didChange = Observed(ManagedObjectContext.objectsDidChangeNotification, from: context)
        let willSave = Observed(ManagedObjectContext.willSaveObjectsNotification, from: context)
        let didSave = Observed(ManagedObjectContext.didSaveObjectsNotification, from: context)

        context.refreshAllObjects()
        #expect(Self.objects(didChange.all.last, .refreshedObjects) == [a])

        #expect(!context.hasChanges)
        try context.save()
        #expect(willSave.all.count == 1)
        #expect(didSave.all.count == 1)
        #expect(Self.objects(didSave.all.last, .insertedObjects).isEmpty)
        #expect(ManagedObjectContext.SaveChanges(try #require(didSave.all.last))?.isEmpty == true)

        let before = didChange.all.count
        context.reset()
        #expect(didChange.all.count == before + 1)
        #expect(Self.objects(didChange.all.last, .invalidatedAllObjects) == [a])
    }

    @MainActor @Test func aMainQueueContextProcessesPendingChangesAtTheEndOfTheMainQueueTurn() async throws {
        let stack = try TestStack(.inMemory)
        let main = ManagedObjectContext(concurrencyType: .mainQueue)
        main.persistentStoreCoordinator = stack.coordinator
        let didChange = Observed(ManagedObjectContext.objectsDidChangeNotification, from: main)
        let note = main.insert("Note", ["title": "on main"])
        #expect(didChange.all.isEmpty)
        // The end of this turn of the main queue: the insert is reported without being asked for.
        await Task.yield()
        try await Task.sleep(nanoseconds: 50_000_000)
        #expect(Self.objects(didChange.all.last, .insertedObjects) == [note])
    }

    // MARK: Merges (items 12 and 13)

    @Test(arguments: StoreKind.allCases)
    func aMergeReportsInsertsRefreshesAndDeletesOnceEachAndNothingWhenNothingChanged(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        let writer = stack.context("writer")
        let a = writer.insert("Note", ["title": "a"])
        let b = writer.insert("Note", ["title": "b"])
        try writer.save()
        let reader = stack.context("reader")
        let readA = try reader.existingObject(with: a.objectID)
        let readB = try reader.existingObject(with: b.objectID)
        let didChange = Observed(ManagedObjectContext.objectsDidChangeNotification, from: reader)
        let didMerge = Observed(ManagedObjectContext.didMergeChangesObjectIDsNotification, from: reader)
        let didSave = Observed(ManagedObjectContext.didSaveObjectsNotification, from: writer)

        a.setValue("a2", forKey: "title")
        writer.delete(b)
        let c = writer.insert("Note", ["title": "c"])
        try writer.save()
        reader.mergeChanges(fromContextDidSave: try #require(didSave.all.last))

        let change = didChange.all.last
        #expect(Self.objects(change, .refreshedObjects) == [readA])
        #expect(Self.objects(change, .updatedObjects).isEmpty)
        #expect(Self.objects(change, .deletedObjects) == [readB])
        let inserted = Self.objects(change, .insertedObjects)
        #expect(inserted.map(\.objectID) == [c.objectID])
        #expect(reader.registeredObject(for: c.objectID) != nil)
        #expect(Self.ids(didMerge.all.last, .refreshedObjectIDs) == [a.objectID])
        #expect(Self.ids(didMerge.all.last, .insertedObjectIDs) == [c.objectID])
        #expect(Self.ids(didMerge.all.last, .deletedObjectIDs) == [b.objectID])

        // A registered object deleted elsewhere is a deleted object here until the next save.
        #expect(readB.isDeleted)
        #expect(reader.deletedObjects.contains(readB))
        try reader.save()
        #expect(!reader.deletedObjects.contains(readB))
        #expect(reader.registeredObject(for: b.objectID) == nil)

        // A save that touches nothing registered here: no objectsDidChange.
        let count = didChange.all.count
        let other = writer.insert("Tag", ["name": "unrelated"])
        try writer.save()
        _ = other
        let unrelated = ManagedObjectContext.SaveChanges(updatedObjectIDs: [])
        reader.mergeChanges(unrelated)
        #expect(didChange.all.count == count)
    }

    @Test(arguments: StoreKind.allCases)
    func afterAChildsSaveTheParentReportsOnlyWhatThePushChanged(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        let parent = stack.context("parent")
        let own = parent.insert("Note", ["title": "parent's"])
        parent.processPendingChanges()
        let didChange = Observed(ManagedObjectContext.objectsDidChangeNotification, from: parent)
        let child = ManagedObjectContext(concurrencyType: .confinement)
        child.parent = parent
        _ = child.insert("Note", ["title": "child's"])
        try child.save()
        let inserted = Self.objects(didChange.all.last, .insertedObjects)
        #expect(inserted.count == 1)
        #expect(!inserted.contains(own))
        #expect(inserted.first?.value(forKey: "title") as? String == "child's")
    }

    // MARK: Refresh and dictionaries

    @Test(arguments: StoreKind.allCases)
    func refreshingASavedNewObjectWithoutMergingMakesItAFault(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        let context = stack.context()
        let note = context.insert("Note", ["title": "new"])
        try context.save()
        context.refresh(note, mergeChanges: false)
        #expect(note.isFault)
        #expect(note.value(forKey: "title") as? String == "new")
    }

    @Test(arguments: StoreKind.allCases)
    func objectIDInPropertiesToFetchGivesEachRowsID(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        let context = stack.context()
        let note = context.insert("Note", ["title": "x"])
        try context.save()
        let request = FetchRequest<[String: Any]>(entityName: "Note")
        request.propertiesToFetch = ["objectID", "title"]
        let rows = try context.fetch(request)
        #expect(rows.count == 1)
        #expect(rows.first?["objectID"] as? ManagedObjectID == note.objectID)
        #expect(rows.first?["title"] as? String == "x")
    }
}

/// A deadlock Core Data does not have: a main-queue parent saves while its private child (which
/// merges automatically and holds a saved object) is waited for from the main queue.
@Suite("Nesting: no deadlock when the main queue waits on an automatically merging child")
struct NestingMainQueueMergeTests {
    @MainActor @Test(arguments: [StoreKind.sqlite, .inMemory])
    func aMainQueueParentsSaveAndAWaitOnItsMergingChildDoNotDeadlock(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        let main = ManagedObjectContext(concurrencyType: .mainQueue)
        main.persistentStoreCoordinator = stack.coordinator
        let note = main.insert("Note", ["title": "v1"])
        try main.save()
        let child = ManagedObjectContext(concurrencyType: .privateQueue)
        child.parent = main
        child.automaticallyMergesChangesFromParent = true
        let id = note.objectID
        #expect(child.performAndWait { child.object(with: id).value(forKey: "title") as? String } == "v1")
        for round in 2...20 {
            note.setValue("v\(round)", forKey: "title")
            try main.save()
            // The merge the save sent the child is queued ahead of this block: it must not wait
            // on the main queue, which this call holds.
            let seen = child.performAndWait { child.object(with: id).value(forKey: "title") as? String }
            #expect(seen == "v\(round)")
        }
    }
}
