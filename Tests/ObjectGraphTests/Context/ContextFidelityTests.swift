import Foundation
import Testing
import ObjectGraph
@testable import ObjectGraphCore

/// What Apple's Core Data does with notifications, faults, configuration and history tokens, as
/// tests written against Core Data showed it, each re-expressed here against ObjectGraph.
@Suite("Core Data fidelity: one report per change, faults after refresh and reset, configuration, history tokens")
struct ContextFidelityTests {
    typealias Observed = MergeTests.Observed

    static func objects(_ notification: Notification, _ key: ManagedObjectContext.NotificationKey) -> Set<ManagedObject> {
        notification.userInfo?[key.rawValue] as? Set<ManagedObject> ?? []
    }

    /// "inserted 1, updated 2" for a notification, for readable expectations.
    static func summary(_ notification: Notification) -> String {
        let keys: [(ManagedObjectContext.NotificationKey, String)] = [
            (.insertedObjects, "inserted"), (.updatedObjects, "updated"), (.deletedObjects, "deleted"), (.refreshedObjects, "refreshed"),
        ]
        return keys.compactMap { key, word in
            let count = objects(notification, key).count
            return count == 0 ? nil : "\(word) \(count)"
        }.joined(separator: ", ")
    }

    /// Everything a context posts, in order, named.
    final class Timeline: @unchecked Sendable {
        private let lock = NSLock()
        private var entries: [String] = []
        private var tokens: [any NSObjectProtocol] = []

        init(_ context: ManagedObjectContext) {
            let names: [(Notification.Name, String)] = [
                (ManagedObjectContext.objectsDidChangeNotification, "objectsDidChange"),
                (ManagedObjectContext.willSaveObjectsNotification, "willSave"),
                (ManagedObjectContext.didSaveObjectsNotification, "didSave"),
            ]
            for (name, word) in names {
                tokens.append(NotificationCenter.default.addObserver(forName: name, object: context, queue: nil) { [weak self] note in
                    guard let self else { return }
                    let summary = word == "objectsDidChange" ? "\(word)(\(ContextFidelityTests.summary(note)))" : word
                    self.lock.lock(); self.entries.append(summary); self.lock.unlock()
                })
            }
        }
        deinit { for token in tokens { NotificationCenter.default.removeObserver(token) } }
        var all: [String] { lock.lock(); defer { lock.unlock() }; return entries }
    }

    // MARK: - One report per change

    @Test(arguments: StoreKind.everyStore)
    func aSaveInOnePerformBlockReportsEachChangeOnce(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        let seed = stack.context("seed")
        seed.insert("Note", ["title": "a", "rank": Int64(1)])
        seed.insert("Note", ["title": "b", "rank": Int64(2)])
        try seed.save()

        let worker = stack.privateContext("worker")
        let timeline = Timeline(worker)
        try worker.performAndWait {
            let notes = try worker.all("Note")
            for note in notes { note.setValue((note.value(forKey: "title") as! String) + "!", forKey: "title") }
            worker.insert("Note", ["title": "c"])
            try worker.save()
        }
        #expect(timeline.all == ["objectsDidChange(inserted 1, updated 2)", "willSave", "didSave"])
        #expect(!worker.performAndWait { worker.hasChanges })
    }

    @Test(arguments: StoreKind.everyStore)
    func aSaveMergedIntoAnotherContextInsidePerformIsReportedOnceBySaver(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        let seed = stack.context("seed")
        seed.insert("Note", ["title": "a"])
        seed.insert("Note", ["title": "b"])
        try seed.save()

        let worker = stack.privateContext("worker")
        let other = stack.privateContext("other")
        let notes = try other.performAndWait { try other.all("Note").map(\.objectID) }
        #expect(notes.count == 2)
        let saverTimeline = Timeline(worker)
        let mergerTimeline = Timeline(other)
        let token = NotificationCenter.default.addObserver(forName: ManagedObjectContext.didSaveObjectsNotification, object: worker, queue: nil) { note in
            nonisolated(unsafe) let note = note
            other.performAndWait { other.mergeChanges(fromContextDidSave: note) }
        }
        defer { NotificationCenter.default.removeObserver(token) }
        try worker.performAndWait {
            for note in try worker.all("Note") { note.setValue("changed", forKey: "title") }
            worker.insert("Note", ["title": "c"])
            try worker.save()
        }
        #expect(saverTimeline.all == ["objectsDidChange(inserted 1, updated 2)", "willSave", "didSave"])
        // The merging side reports once too: the notes it fetched are registered and not faults, so
        // its one notification refreshes them and reports the insert.
        #expect(mergerTimeline.all.count == 1)
    }

    @Test(arguments: StoreKind.everyStore)
    func anAutomaticMergeDoesNotReportTheDeleteOfAnObjectTheContextNeverUsed(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        let viewer = stack.context("viewer")
        viewer.automaticallyMergesChangesFromParent = true
        let changes = Observed(ManagedObjectContext.objectsDidChangeNotification, from: viewer)

        let writer = stack.context("writer")
        let car = writer.insert("Note", ["title": "car"])
        try writer.save()
        #expect(changes.all.count == 1)
        #expect(changes.all.first.map { Self.objects($0, .insertedObjects).count } == 1)

        writer.delete(car)
        try writer.save()
        #expect(changes.all.count == 1, "a merged delete of an object the context never used is not reported")
    }

    @Test(arguments: StoreKind.everyStore)
    func anAutomaticMergeReportsTheDeleteOfAnObjectTheContextUses(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        let viewer = stack.context("viewer")
        viewer.automaticallyMergesChangesFromParent = true
        let writer = stack.context("writer")
        let car = writer.insert("Note", ["title": "car"])
        try writer.save()

        let seen = try #require(try viewer.all("Note").first)
        #expect(seen.value(forKey: "title") as? String == "car")
        let changes = Observed(ManagedObjectContext.objectsDidChangeNotification, from: viewer)
        writer.delete(car)
        try writer.save()
        #expect(changes.all.count == 1)
        #expect(changes.all.first.map { Self.objects($0, .deletedObjects) } == [seen])
        #expect(seen.isDeleted || seen.managedObjectContext == nil)
    }
}

extension ContextFidelityTests {
    // MARK: - Faults after refresh and reset

    @Test(arguments: StoreKind.everyStore)
    func refreshingAnInsertedObjectWithoutMergingTurnsItIntoAFaultThatKeepsItsValues(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        let context = stack.context()
        let note = context.insert("Note", ["title": "draft", "rank": Int64(4)])
        #expect(!note.isFault)
        context.refresh(note, mergeChanges: false)
        #expect(note.isFault)
        #expect(note.isInserted)
        #expect(context.insertedObjects == [note])
        note.willAccessValue(forKey: nil)
        #expect(!note.isFault)
        #expect(note.value(forKey: "title") as? String == "draft")
        #expect(note.value(forKey: "rank") as? Int64 == 4)
        // It is still the same new object: the save writes it.
        context.refresh(note, mergeChanges: false)
        try context.save()
        #expect(!note.isInserted)
        #expect(try stack.context("reader").all("Note").map { $0.value(forKey: "title") as? String } == ["draft"])
    }

    @Test(arguments: StoreKind.everyStore)
    func refreshingAnInsertedObjectWithMergingLeavesItAsItIs(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        let context = stack.context()
        let note = context.insert("Note", ["title": "draft"])
        context.refresh(note, mergeChanges: true)
        #expect(!note.isFault)
        #expect(note.value(forKey: "title") as? String == "draft")
    }

    @Test(arguments: StoreKind.everyStore)
    func afterResetAnObjectTheProgramHoldsIsAFaultWithNoContext(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        let context = stack.context()
        let saved = context.insert("Note", ["title": "saved"])
        try context.save()
        let fetched = try #require(try context.all("Note").first)
        #expect(fetched === saved)
        #expect(fetched.value(forKey: "title") as? String == "saved")
        let unsaved = context.insert("Note", ["title": "unsaved"])
        let id = fetched.objectID

        context.reset()
        #expect(fetched.isFault)
        #expect(fetched.managedObjectContext == nil)
        #expect(unsaved.isFault)
        #expect(unsaved.managedObjectContext == nil)
        #expect(context.registeredObjects.isEmpty)
        // The ID still resolves, to a new object.
        let again = try context.existingObject(with: id)
        #expect(again !== fetched)
        #expect(again.value(forKey: "title") as? String == "saved")
    }
}

extension ContextFidelityTests {
    // MARK: - Configuration

    @Test(arguments: StoreKind.everyStore)
    func aQueueContextCanBeGivenItsCoordinatorInsideItsFirstPerformAndWait(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        // MagicalRecord makes every private context this way.
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.performAndWait { context.persistentStoreCoordinator = stack.coordinator }
        try context.performAndWait {
            context.insert("Note", ["title": "configured on the queue"])
            try context.save()
        }
        #expect(try stack.context("reader").all("Note").map { $0.value(forKey: "title") as? String } == ["configured on the queue"])
    }

    @Test(arguments: StoreKind.everyStore)
    func aChildCanBeGivenItsParentInsideItsFirstPerformAndWait(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        let parent = stack.privateContext("parent")
        let child = ManagedObjectContext(concurrencyType: .privateQueue)
        child.perform {}
        child.performAndWait { child.parent = parent }
        try child.performAndWait {
            child.insert("Note", ["title": "pushed"])
            try child.save()
        }
        try parent.performAndWait { try parent.save() }
        #expect(try stack.context("reader").all("Note").count == 1)
    }

    @Test(arguments: StoreKind.everyStore)
    func aContextThatMergesAutomaticallyBeforeItHasACoordinatorFollowsItOnceSet(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        let viewer = ManagedObjectContext(concurrencyType: .privateQueue)
        viewer.automaticallyMergesChangesFromParent = true
        viewer.performAndWait { viewer.persistentStoreCoordinator = stack.coordinator }
        let seen = try viewer.performAndWait { try viewer.all("Note") }
        #expect(seen.isEmpty)
        let changes = Observed(ManagedObjectContext.objectsDidChangeNotification, from: viewer)
        let writer = stack.context("writer")
        writer.insert("Note", ["title": "merged"])
        try writer.save()
        viewer.performAndWait {}
        #expect(changes.all.contains { !Self.objects($0, .insertedObjects).isEmpty })
    }

    @Test(arguments: StoreKind.everyStore)
    func aContextsNameCanBeSetAtAnyTime(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        let context = stack.privateContext("first")
        try context.performAndWait {
            context.insert("Note", ["title": "a"])
            try context.save()
        }
        context.name = "renamed after use"
        #expect(context.name == "renamed after use")
        context.performAndWait { context.name = "renamed on its queue" }
        #expect(context.name == "renamed on its queue")
        #expect(context.description.contains("renamed on its queue"))
    }
}

extension ContextFidelityTests {
    // MARK: - History tokens and history merges

    @Test func withPersistentHistoryDidSaveCarriesTheSavesTokenAsNewChangeToken() throws {
        let stack = try HistoryStack()
        let context = stack.context("writer")
        let saves = Observed(ManagedObjectContext.didSaveObjectsNotification, from: context)
        let idSaves = Observed(ManagedObjectContext.didSaveObjectIDsNotification, from: context)
        context.insert("Note", ["title": "first"])
        try context.save()
        let first = try #require(saves.all.last?.userInfo?["newChangeToken"] as? PersistentHistoryToken)
        #expect(idSaves.all.last?.userInfo?["newChangeToken"] as? PersistentHistoryToken == first)
        #expect(first == stack.coordinator.currentPersistentHistoryToken(fromStores: nil))

        context.insert("Note", ["title": "second"])
        try context.save()
        let second = try #require(saves.all.last?.userInfo?["newChangeToken"] as? PersistentHistoryToken)
        #expect(second != first)
        // The token names where this save ended: history after it is empty, after the first one has this save.
        #expect(try stack.transactions(after: second).isEmpty)
        let after = try stack.transactions(after: first)
        #expect(after.count == 1)
        #expect(after.first?.token == second)
    }

    @Test(arguments: StoreKind.everyStore)
    func withoutPersistentHistoryDidSaveCarriesNoChangeToken(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        let context = stack.context()
        let saves = Observed(ManagedObjectContext.didSaveObjectsNotification, from: context)
        context.insert("Note", ["title": "a"])
        try context.save()
        #expect(saves.all.count == 1)
        #expect(saves.all.last?.userInfo?["newChangeToken"] == nil)
    }

    @Test func mergingAHistoryTransactionRegistersNoObjectTheContextDidNotHold() throws {
        let stack = try HistoryStack()
        let token = stack.coordinator.currentPersistentHistoryToken(fromStores: nil)
        let writer = stack.context("writer")
        for index in 0..<145 { writer.insert("Note", ["title": "note \(index)"]) }
        try writer.save()

        let reader = stack.context("reader")
        // Counted, not kept: an observer that keeps the notification keeps its objects alive.
        let reported = Protected<[Int]>([])
        let token2 = NotificationCenter.default.addObserver(forName: ManagedObjectContext.objectsDidChangeNotification, object: reader, queue: nil) { note in
            let count = Self.objects(note, .insertedObjects).count
            reported.withLock { $0.append(count) }
        }
        defer { NotificationCenter.default.removeObserver(token2) }
        let transactions = try stack.transactions(after: token)
        #expect(transactions.count == 1)
        for transaction in transactions {
            reader.mergeChanges(fromContextDidSave: transaction.objectIDNotification())
        }
        #expect(reader.registeredObjects.isEmpty)
        // The inserts are reported all the same, and the objects are there to fetch.
        #expect(reported.withLock { $0 } == [145])
        #expect(try reader.all("Note").count == 145)
    }
}
