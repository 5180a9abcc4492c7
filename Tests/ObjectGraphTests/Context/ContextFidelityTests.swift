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
        // The merging context never materialized the notes it fetched as faults? It did fetch them:
        // they are registered and not faults, so the merge refreshes them and reports the insert.
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
