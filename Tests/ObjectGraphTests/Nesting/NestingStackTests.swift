import Foundation
import Testing
import ObjectGraph
@testable import ObjectGraphCore

/// An import operation as the guides write it: its context is created in `main()`, on the
/// operation's thread, as a child of the main context, and its save goes into the main context.
final class ChildImportOperation: Operation, @unchecked Sendable {  // `error` is written in main() and read after the queue finished
    let mainContext: ManagedObjectContext
    let batch: Int
    let count: Int
    private(set) var error: (any Error)?

    init(mainContext: ManagedObjectContext, batch: Int, count: Int) {
        self.mainContext = mainContext
        self.batch = batch
        self.count = count
    }

    override func main() {
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.name = "import \(batch)"
        context.parent = mainContext
        context.performAndWait {
            let folder = context.insert("Folder", ["name": "batch \(batch)"])
            for i in 0..<count { _ = context.insert("Note", ["title": "b\(batch)-\(i)", "rank": i, "folder": folder]) }
            do { try context.save() } catch { self.error = error }
        }
    }
}

@Suite("Nesting: the three-level stack, autosave and import operations")
struct NestingStackTests {
    /// The guides' stack: a private root on the coordinator, a main-queue child, private workers.
    struct Stack {
        let chain: ContextChain
        let main: ManagedObjectContext
        var root: ManagedObjectContext { chain.root }

        init(_ kind: StoreKind) throws {
            chain = try ContextChain(kind)
            main = chain.child(of: chain.root, "main", .mainQueue)
        }

        func worker(_ name: String = "worker") -> ManagedObjectContext { chain.child(of: main, name) }
    }

    /// Polls without blocking a thread until the condition holds or the time runs out.
    func eventually(within seconds: Double = 10, _ condition: () throws -> Bool) async rethrows -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if try condition() { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return try condition()
    }

    @Test(arguments: StoreKind.sqliteInMemoryAndPostgres)
    func theRootAutosavesAtItsIntervalAndOnDemand(_ kind: StoreKind) async throws {
        let stack = try Stack(kind)
        stack.root.startAutosaving(every: .milliseconds(50))
        #expect(stack.root.isAutosaving)
        let worker = stack.worker()
        func insertNote(_ title: String) async throws {
            try await worker.perform {
                _ = worker.insert("Note", ["title": title, "rank": 1])
                try worker.save()
            }
            try await stack.main.perform { try stack.main.save() }
        }
        try await insertNote("first")
        #expect(try await eventually { try stack.chain.storedCount("Note") == 1 })

        stack.root.stopAutosaving()
        #expect(!stack.root.isAutosaving)
        try await insertNote("second")
        try await Task.sleep(for: .milliseconds(200))
        #expect(try stack.chain.storedCount("Note") == 1, "no autosave once stopped")
        #expect(await stack.root.perform { stack.root.hasChanges })
        stack.root.autosaveNow()
        #expect(try await eventually { try stack.chain.storedCount("Note") == 2 })

        // A whole chain on demand, from a worker: async, and blocking from another thread.
        await worker.perform { _ = worker.insert("Note", ["title": "third", "rank": 3]) }
        try await worker.saveChain()
        #expect(try stack.chain.storedCount("Note") == 3)
        try await Task.detached {
            worker.performAndWait { _ = worker.insert("Note", ["title": "fourth", "rank": 4]) }
            try worker.saveChainNow()
        }.value
        #expect(try stack.chain.storedNotes().keys.sorted() == ["first", "fourth", "second", "third"])
    }

    @Test func aFailedAutosaveReportsTheErrorAndKeepsTheChanges() async throws {
        let stack = try Stack(.sqlite)
        let failures = Recorder<String>()
        let folderID = await stack.root.perform { stack.root.insertNewObject(forEntityName: "Folder").objectID }
        stack.root.startAutosaving(every: .milliseconds(20)) { error in
            failures.append((error as? ObjectGraphError)?.code.rawValue ?? "\(error)")
        }
        #expect(await eventually { !failures.values.isEmpty })
        stack.root.stopAutosaving()
        #expect(failures.values.allSatisfy { $0 == ObjectGraphError.validation.code.rawValue })
        let kept = await stack.root.perform { stack.root.hasChanges && stack.root.registeredObject(for: folderID)?.isInserted == true }
        #expect(kept)
        await stack.root.perform { stack.root.registeredObject(for: folderID)?.setValue("Named", forKey: "name") }
        stack.root.autosaveNow()
        #expect(try await eventually { try stack.chain.storedCount("Folder") == 1 })
    }

    @Test func autosaveStopsQuietlyWhenTheContainerShutsDown() async throws {
        let directory = TemporaryDirectory()
        let container = try loadedContainer(.sqlite, in: directory)
        let root = container.newBackgroundContext()
        let worker = ManagedObjectContext(concurrencyType: .privateQueue)
        worker.parent = root
        root.startAutosaving(every: .milliseconds(10))
        try worker.performAndWait {
            _ = worker.insert("Note", ["title": "before shutdown"])
            try worker.save()
        }
        let reader = container.newBackgroundContext()
        #expect(await eventually { (try? reader.performAndWait { try reader.number(of: "Note") }) == 1 })
        try await container.shutdown()
        // Ticks after the shutdown, and a save on demand, neither stop the program nor save.
        root.autosaveNow()
        #expect(await eventually { !root.isAutosaving })
        try await Task.sleep(for: .milliseconds(50))
    }

    @Test(arguments: StoreKind.sqliteInMemoryAndPostgres)
    func importOperationsSaveIntoTheMainContextThenTheChainIsSaved(_ kind: StoreKind) async throws {
        let stack = try Stack(kind)
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 3
        let operations = (0..<6).map { ChildImportOperation(mainContext: stack.main, batch: $0, count: 50) }
        for operation in operations { queue.addOperation(operation) }
        await withCheckedContinuation { continuation in
            queue.addBarrierBlock { continuation.resume() }
        }
        #expect(operations.allSatisfy { $0.error == nil })
        #expect(try stack.chain.storedCount("Note") == 0, "the operations saved into the main context only")
        let pending = await stack.main.perform { stack.main.insertedObjects.count }
        #expect(pending == 6 + 300)

        try await stack.main.saveChain()
        #expect(try stack.chain.storedCount("Note") == 300)
        let reader = stack.chain.stack.context()
        for folder in try reader.all("Folder") {
            #expect((folder.value(forKey: "notes") as! Set<ManagedObject>).count == 50)
        }
        let temporary = await stack.main.perform { stack.main.registeredObjects.filter(\.objectID.isTemporaryID).count }
        #expect(temporary == 0)
    }

    @MainActor @Test func aWorkerUsedFromTheMainQueueFaultsThroughTheMainContext() throws {
        let stack = try Stack(.sqlite)
        let (_, notes) = try stack.chain.seed()
        let main = stack.main
        // On the main queue, the main context is used directly.
        main.object(with: notes[0]).setValue("edited on main", forKey: "title")
        let worker = stack.worker()
        // The worker's fault and fetch reach the main context while the main queue waits for the
        // worker: they run inline rather than deadlock.
        let (title, count) = try worker.performAndWait {
            (worker.title(of: notes[0]), try worker.count(for: FetchRequest<ManagedObject>(entityName: "Note")))
        }
        #expect(title == "edited on main")
        #expect(count == 3)
        try worker.performAndWait {
            worker.object(with: notes[1]).setValue("edited by the worker", forKey: "title")
            try worker.save()
        }
        #expect(main.title(of: notes[1]) == "edited by the worker")
        try main.saveChainNow()
        #expect(try stack.chain.storedNotes() == ["edited on main": 1, "edited by the worker": 2, "n3": 3])
    }
}
