import Foundation
import ServiceLifecycle
import Testing
import ObjectGraph
@testable import ObjectGraphCore

@Suite("Container shutdown")
struct ShutdownTests {
    let directory = TemporaryDirectory()

    /// Submits `count` background tasks that each work a little, then save a folder.
    func submitSaves(_ count: Int, to container: PersistentContainer, workMs: Int = 10, saved: Recorder<Int>) {
        for i in 0..<count {
            container.performBackgroundTask { context in
                Thread.sleep(forTimeInterval: Double(workMs) / 1000)
                _ = context.insert("Folder", ["name": "folder \(i)"])
                do {
                    try context.save()
                    saved.append(i)
                } catch {
                    Issue.record("save \(i): \(error)")
                }
            }
        }
    }

    /// `perform` without waiting, from async code (where `context.perform { }` is the `async` form).
    func enqueue(on context: ManagedObjectContext, _ block: @escaping @Sendable () -> Void) {
        context.perform(block)
    }

    func shutDownSynchronously(_ container: PersistentContainer) throws {
        try container.shutdown()
    }

    /// The folders in the SQLite store at `url`, read by a fresh coordinator.
    func foldersInStore(at url: URL) throws -> Int {
        let coordinator = PersistentStoreCoordinator(managedObjectModel: TestModels.notes())
        let store = try coordinator.addPersistentStore(type: .sqlite, at: url)
        defer { try? coordinator.removePersistentStore(store) }
        let context = ManagedObjectContext(concurrencyType: .confinement)
        context.persistentStoreCoordinator = coordinator
        return try context.number(of: "Folder")
    }

    @Test("shutdown() waits for the background saves in flight, then closes the stores", arguments: [StoreKind.sqlite, .inMemory])
    func shutdownWaitsForSaves(kind: StoreKind) throws {
        let container = try loadedContainer(kind, in: directory)
        let saved = Recorder<Int>()
        submitSaves(12, to: container, saved: saved)
        try container.shutdown(timeout: .seconds(30))
        #expect(saved.values.count == 12, "every submitted save finished before shutdown returned")
        #expect(container.persistentStoreCoordinator.persistentStores.isEmpty, "the stores are closed")
        if kind == .sqlite {
            #expect(try foldersInStore(at: directory.file("Notes.sqlite")) == 12)
        }
    }

    @Test("await shutdown() waits without blocking the caller, for background and view context work alike")
    func asyncShutdownWaitsForSaves() async throws {
        let container = try loadedContainer(.sqlite, in: directory)
        let saved = Recorder<Int>()
        submitSaves(6, to: container, saved: saved)
        let view = container.viewContext
        enqueue(on: view) {
            _ = view.insert("Folder", ["name": "from the view"])
            do { try view.save(); saved.append(100) } catch { Issue.record("view save: \(error)") }
        }
        try await container.shutdown(timeout: .seconds(30))
        #expect(saved.values.count == 7)
        #expect(try foldersInStore(at: directory.file("Notes.sqlite")) == 7)
    }

    @Test("Work submitted by work in flight is waited for too")
    func chainedWorkIsWaitedFor() throws {
        let container = try loadedContainer(.sqlite, in: directory)
        let saved = Recorder<Int>()
        container.performBackgroundTask { _ in
            Thread.sleep(forTimeInterval: 0.05)
            // Scheduled while shutdown() already waits.
            container.performBackgroundTask { context in
                Thread.sleep(forTimeInterval: 0.05)
                _ = context.insert("Folder", ["name": "second"])
                do { try context.save(); saved.append(2) } catch { Issue.record("\(error)") }
            }
        }
        try container.shutdown(timeout: .seconds(30))
        #expect(saved.values == [2])
        #expect(try foldersInStore(at: directory.file("Notes.sqlite")) == 1)
    }

    @Test("A shutdown whose time limit passes throws, names the work still running, and leaves the stores open")
    func shutdownTimesOut() throws {
        let container = try loadedContainer(.sqlite, in: directory)
        let release = DispatchSemaphore(value: 0)
        let context = container.newBackgroundContext()
        context.perform {
            release.wait()
            _ = context.insert("Folder", ["name": "late"])
            do { try context.save() } catch { Issue.record("\(error)") }
        }
        let start = Date()
        do {
            try container.shutdown(timeout: .milliseconds(200))
            Issue.record("shutdown returned while a block was still running")
        } catch let error as PersistentContainerError {
            #expect(error == .shutdownTimedOut)
            #expect(error.outstandingBlocks == 1 && error.outstandingSaves == 0)
            #expect(error.containerName == "Notes")
            #expect("\(error)".contains("1 block(s)"))
        }
        let elapsed = Date().timeIntervalSince(start)
        #expect(elapsed >= 0.2 && elapsed < 5, "waited \(elapsed) s")
        #expect(container.persistentStoreCoordinator.persistentStores.count == 1, "left open for the work to finish")
        release.signal()
        try container.shutdown(timeout: .seconds(30))
        #expect(try foldersInStore(at: directory.file("Notes.sqlite")) == 1, "the late save made it")
    }

    @Test("A synchronous shutdown on the main queue does not wait for ever for view context blocks queued behind it")
    func synchronousShutdownOnTheMainQueue() async throws {
        let container = try loadedContainer(.sqlite, in: directory)
        let view = container.viewContext
        let outcome: String = await withCheckedContinuation { continuation in
            DispatchQueue.main.async {
                enqueue(on: view) {
                    _ = view.insert("Folder", ["name": "queued behind the shutdown"])
                    do { try view.save() } catch { Issue.record("\(error)") }
                }
                do {
                    try container.shutdown(timeout: .seconds(2))
                    continuation.resume(returning: "returned")
                } catch let error as PersistentContainerError {
                    continuation.resume(returning: "\(error.code)")
                } catch {
                    continuation.resume(returning: "\(error)")
                }
            }
        }
        // Off the main thread (swift test) the block is known to be stuck: it says so at once;
        // on the main thread it can only find out at the time limit.
        #expect(outcome == "mainQueueHeld" || outcome == "shutdownTimedOut")
        #expect(container.persistentStoreCoordinator.persistentStores.count == 1, "left open")
        try await container.shutdown(timeout: .seconds(30))
        #expect(try foldersInStore(at: directory.file("Notes.sqlite")) == 1, "the view block ran once the main queue was free")
    }

    @MainActor
    @Test("await shutdown() on the main actor lets the view context's blocks run")
    func asyncShutdownOnTheMainActor() async throws {
        let container = try loadedContainer(.sqlite, in: directory)
        let view = container.viewContext
        enqueue(on: view) {
            _ = view.insert("Folder", ["name": "view"])
            do { try view.save() } catch { Issue.record("\(error)") }
        }
        try await container.shutdown(timeout: .seconds(30))
        #expect(try foldersInStore(at: directory.file("Notes.sqlite")) == 1)
    }

    @Test("After shutdown the container takes no new work, and its contexts find no store")
    func afterShutdown() async throws {
        let container = try loadedContainer(.sqlite, in: directory)
        let context = container.newBackgroundContext()
        try await container.shutdown()
        try await container.shutdown()   // a second call does nothing
        try shutDownSynchronously(container)
        await #expect(throws: PersistentContainerError.shutDown) {
            try await container.performBackgroundTask { _ in 1 }
        }
        #expect(throws: PersistentContainerError.shutDown) { try container.loadPersistentStores() }
        #expect(throws: ObjectGraphError.noPersistentStore) {
            try context.performAndWait {
                _ = context.insert("Folder", ["name": "too late"])
                try context.save()
            }
        }
        #expect("\(container)".contains("closed"))
    }

    @Test("As a Service, the container drains its saves when the service group shuts down gracefully")
    func serviceDrainsOnGracefulShutdown() async throws {
        let container = try loadedContainer(.sqlite, in: directory)
        container.shutdownTimeout = .seconds(30)
        let group = ServiceGroup(services: [container])
        let running = Task { try await group.run() }
        let saved = Recorder<Int>()
        submitSaves(8, to: container, saved: saved)
        await group.triggerGracefulShutdown()
        try await running.value
        #expect(saved.values.count == 8)
        #expect(container.persistentStoreCoordinator.persistentStores.isEmpty)
        #expect(try foldersInStore(at: directory.file("Notes.sqlite")) == 8)
    }

    @Test("As a Service, a cancelled container still drains its saves")
    func serviceDrainsOnCancellation() async throws {
        let container = try loadedContainer(.sqlite, in: directory)
        let running = Task { try await container.run() }
        let saved = Recorder<Int>()
        submitSaves(5, to: container, saved: saved)
        running.cancel()
        try await running.value
        #expect(saved.values.count == 5)
        #expect(container.persistentStoreCoordinator.persistentStores.isEmpty)
    }
}
