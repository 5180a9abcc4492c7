import Foundation
import GRDB
import Testing
import ObjectGraph
import ObjectGraphCrashModels
@testable import ObjectGraphCore

/// Collects what a coordinator posts as `.persistentStoreRemoteChange`.
final class RemoteChangeRecorder: @unchecked Sendable {  // `changes` is guarded by `lock`
    private let lock = NSLock()
    private var changes: [[AnyHashable: Any]] = []
    private var observer: NSObjectProtocol?

    init(_ coordinator: PersistentStoreCoordinator) {
        observer = NotificationCenter.default.addObserver(forName: .persistentStoreRemoteChange, object: coordinator, queue: nil) { [weak self] note in
            guard let self else { return }
            self.lock.withLock { self.changes.append(note.userInfo ?? [:]) }
        }
    }

    deinit { if let observer { NotificationCenter.default.removeObserver(observer) } }

    var received: [[AnyHashable: Any]] { lock.withLock { changes } }
    var tokens: [PersistentHistoryToken] { received.compactMap { $0["historyToken"] as? PersistentHistoryToken } }
}

@Suite("Remote changes")
struct RemoteChangeTests {
    @Test(arguments: HistoryStack.kinds)
    func aCommitByAnotherCoordinatorIsPostedWithItsTokenStoreAndURL(_ kind: StoreKind) throws {
        let stack = try HistoryStack(kind, remoteChanges: true)
        let recorder = RemoteChangeRecorder(stack.coordinator)
        let other = try stack.secondCoordinator()
        let writer = ManagedObjectContext(concurrencyType: .confinement)
        writer.persistentStoreCoordinator = other
        writer.insert("Tag", ["name": "elsewhere"])
        try writer.save()
        let expected = other.currentPersistentHistoryToken(fromStores: nil)

        #expect(eventually { recorder.tokens.contains { $0 == expected } })
        let info = try #require(recorder.received.first)
        #expect(info["storeUUID"] as? String == stack.store.identifier)
        #expect((info["storeURL"] as? URL)?.standardizedFileURL == stack.url.standardizedFileURL)
    }

    @Test(arguments: HistoryStack.kinds)
    func theCoordinatorsOwnSavesArePostedToo(_ kind: StoreKind) throws {
        let stack = try HistoryStack(kind, remoteChanges: true)
        let recorder = RemoteChangeRecorder(stack.coordinator)
        let context = stack.context()
        for i in 0..<3 {
            context.insert("Tag", ["name": "t\(i)"])
            try context.save()
        }
        let last = stack.coordinator.currentPersistentHistoryToken(fromStores: nil)
        #expect(eventually { recorder.tokens.last == last })
        // One notification per transaction, in order.
        #expect(recorder.tokens.map { $0.transactionNumbers.values.first! } == [1, 2, 3])
    }

    @Test(arguments: HistoryStack.kinds)
    func remoteChangesYieldsEachCommitAsAValue(_ kind: StoreKind) async throws {
        let stack = try HistoryStack(kind, remoteChanges: true)
        let changes = stack.coordinator.remoteChanges
        let other = try stack.secondCoordinator()
        let writer = ManagedObjectContext(concurrencyType: .privateQueue)
        writer.persistentStoreCoordinator = other
        try await writer.perform {
            writer.insert("Tag", ["name": "a"])
            try writer.save()
        }
        var iterator = changes.makeAsyncIterator()
        let change = try #require(await iterator.next())
        #expect(change.storeUUID == stack.store.identifier)
        #expect(change.historyToken == other.currentPersistentHistoryToken(fromStores: nil))
        #expect(change.storeURL != nil)
    }

    @Test func withoutHistoryACommitIsStillPostedWithoutAToken() throws {
        let directory = TemporaryDirectory()
        let coordinator = PersistentStoreCoordinator(managedObjectModel: HistoryModels.notes())
        let url = directory.file("plain.sqlite")
        try coordinator.addPersistentStore(type: .sqlite, at: url, options: [PersistentStoreOption.remoteChangeNotificationPost: true])
        let recorder = RemoteChangeRecorder(coordinator)
        let other = PersistentStoreCoordinator(managedObjectModel: HistoryModels.notes())
        try other.addPersistentStore(type: .sqlite, at: url)
        let writer = ManagedObjectContext(concurrencyType: .confinement)
        writer.persistentStoreCoordinator = other
        writer.insert("Tag", ["name": "a"])
        try writer.save()
        #expect(eventually { !recorder.received.isEmpty })
        #expect(recorder.received.first?["historyToken"] == nil)
        #expect(recorder.received.first?["storeUUID"] as? String == other.persistentStores[0].identifier)
    }

    @Test(arguments: HistoryStack.kinds)
    func anotherCoordinatorsChangesMergeIntoContextsThatMergeAutomatically(_ kind: StoreKind) throws {
        let stack = try HistoryStack(kind, remoteChanges: true, merging: true)
        let view = ManagedObjectContext(concurrencyType: .privateQueue)
        view.persistentStoreCoordinator = stack.coordinator
        view.automaticallyMergesChangesFromParent = true
        view.performAndWait { view.retainsRegisteredObjects = true }
        let seeded = stack.context()
        let note = seeded.insert("Note", ["title": "before"])
        try seeded.save()
        let id = note.objectID
        let held = try view.performAndWait { () -> String? in
            let object = try view.existingObject(with: id)
            return object.value(forKey: "title") as? String
        }
        #expect(held == "before")

        let other = try stack.secondCoordinator()
        let writer = ManagedObjectContext(concurrencyType: .confinement)
        writer.persistentStoreCoordinator = other
        let remote = try writer.existingObject(with: id)
        remote.setValue("after", forKey: "title")
        writer.insert("Note", ["title": "added elsewhere"])
        try writer.save()

        #expect(eventually {
            view.performAndWait { (view.registeredObject(for: id)?.value(forKey: "title") as? String) == "after" }
        })
        #expect(try view.performAndWait { try view.all("Note").count } == 2)
        // The row cache does not serve the old row to a new context either.
        let fresh = stack.context("fresh")
        #expect(try fresh.existingObject(with: id).value(forKey: "title") as? String == "after")
    }

    @Test func aChildProcesssCommitsReachThisProcessAndMergeAutomatically() throws {
        let stack = try HistoryStack(model: CrashModel.make(), remoteChanges: true, merging: true)
        let recorder = RemoteChangeRecorder(stack.coordinator)
        let view = ManagedObjectContext(concurrencyType: .privateQueue)
        view.persistentStoreCoordinator = stack.coordinator
        view.automaticallyMergesChangesFromParent = true
        view.performAndWait { view.retainsRegisteredObjects = true }
        func runChild(saves: Int) throws {
            let child = try ToolProcess(["_crash", "saver", "--store", stack.url.path, "--contexts", "1", "--saves", "\(saves)", "--history", "--author", "child", "--guard-ms", "20000"])
            let (status, reason) = child.wait()
            #expect(status == 0 && reason == .exit, "child: \(child.errors)")
        }

        try runChild(saves: 2)
        #expect(eventually { recorder.tokens.contains { $0.transactionNumbers.values.first == 2 } })
        let transactions = try stack.transactions()
        #expect(transactions.count == 2)
        #expect(transactions.allSatisfy { $0.author == "child" && $0.processID != String(ProcessInfo.processInfo.processIdentifier) })
        // The view holds the child's tally, then the child saves again: the registered object
        // takes the new values without being fetched again.
        let tally = try #require(try view.performAndWait { try view.all("Tally").first?.objectID })
        #expect(view.performAndWait { view.registeredObject(for: tally)?.value(forKey: "saves") as? Int64 } == 2)
        try runChild(saves: 2)
        #expect(eventually {
            view.performAndWait { view.registeredObject(for: tally)?.value(forKey: "saves") as? Int64 == 4 }
        })
        #expect(try stack.transactions().count == 4)
    }

    @Test func aStoreRemovedFromItsCoordinatorStopsBeingWatched() throws {
        let stack = try HistoryStack(remoteChanges: true)
        let recorder = RemoteChangeRecorder(stack.coordinator)
        try stack.coordinator.removePersistentStore(stack.store)
        let other = PersistentStoreCoordinator(managedObjectModel: stack.model)
        try other.addPersistentStore(type: .sqlite, at: stack.url, options: HistoryStack.options(remoteChanges: false))
        let writer = ManagedObjectContext(concurrencyType: .confinement)
        writer.persistentStoreCoordinator = other
        writer.insert("Tag", ["name": "unheard"])
        try writer.save()
        usleep(300_000)
        #expect(recorder.received.isEmpty)
    }

    @Test func mergingRemoteChangesNeedsHistoryAndNotifications() throws {
        let directory = TemporaryDirectory()
        let coordinator = PersistentStoreCoordinator(managedObjectModel: HistoryModels.notes())
        let error = try #require(throws: ObjectGraphError.self) {
            try coordinator.addPersistentStore(
                type: .sqlite, at: directory.file("s.sqlite"), options: [PersistentStoreOption.mergesRemoteChangesAutomatically: true])
        }
        #expect(error.code == .unsupported)
        #expect(error.message.contains(PersistentStoreOption.persistentHistoryTracking))
    }
}

@Suite("Remote changes under concurrent writers")
struct RemoteChangeStressTests {
    @Test func everyTransactionOfTwoConcurrentWritersIsHeardOnceAndInOrder() throws {
        let stack = try HistoryStack(remoteChanges: true)
        let recorder = RemoteChangeRecorder(stack.coordinator)
        let writers = try (0..<2).map { _ in try stack.secondCoordinator() }
        let saves = 40
        let group = DispatchGroup()
        let failures = Protected<[String]>([])
        for (w, coordinator) in writers.enumerated() {
            let context = ManagedObjectContext(concurrencyType: .privateQueue)
            context.persistentStoreCoordinator = coordinator
            context.transactionAuthor = "writer \(w)"
            group.enter()
            context.perform {
                defer { group.leave() }
                for i in 0..<saves {
                    context.insert("Tag", ["name": "w\(w) s\(i)"])
                    do { try context.save() } catch { failures.withLock { $0.append("writer \(w) save \(i): \(error)") } }
                }
            }
        }
        group.wait()
        #expect(failures.withLock { $0 }.isEmpty)
        let total = Int64(2 * saves)
        #expect(eventually { recorder.tokens.last?.transactionNumbers.values.first == total })
        let heard = recorder.tokens.compactMap { $0.transactionNumbers.values.first }
        #expect(heard == Array(1...total))
        // History has both writers' transactions, each with its author, and nothing else.
        let transactions = try stack.transactions()
        #expect(transactions.map(\.transactionNumber) == Array(1...total))
        #expect(transactions.filter { $0.author == "writer 0" }.count == saves)
        #expect(transactions.filter { $0.author == "writer 1" }.count == saves)
    }
}

@Suite("Remote changes and the row cache")
struct RemoteChangeRowCacheTests {
    /// Another process commits a change and purges the history holding it before the watcher reads
    /// it (one SQLite transaction, so the watcher cannot see one without the other): the change
    /// cannot be named, so no cached row may be trusted.
    @Test func aCommitWhoseHistoryWasPurgedEmptiesTheRowCache() throws {
        let stack = try HistoryStack(remoteChanges: true)
        let recorder = RemoteChangeRecorder(stack.coordinator)
        let writer = stack.context("writer")
        let tag = writer.insert("Tag", ["name": "before"])
        try writer.save()
        #expect(eventually { recorder.received.count == 1 })
        let holder = stack.context("holder")
        let held = holder.object(with: tag.objectID)
        #expect(held.value(forKey: "name") as? String == "before")
        #expect(stack.coordinator.statistics.rowCacheCount >= 1)

        let queue = try DatabaseQueue(path: stack.url.path)
        try queue.write { db in
            try db.execute(sql: "UPDATE ZTAG SET ZNAME = 'after', Z_OPT = Z_OPT + 1 WHERE Z_PK = ?", arguments: [tag.objectID.primaryKey])
            try db.execute(sql: "UPDATE Z_PRIMARYKEY SET Z_MAX = Z_MAX + 1 WHERE Z_ENT = \(SQLiteStore.transactionEntity)")
            try db.execute(sql: "DELETE FROM ACHANGE")
            try db.execute(sql: "DELETE FROM ATRANSACTION")
        }
        try queue.close()
        #expect(eventually { recorder.received.count == 2 })
        let reader = stack.context("reader")
        #expect(reader.object(with: tag.objectID).value(forKey: "name") as? String == "after")
        withExtendedLifetime(held) {}
    }
}
