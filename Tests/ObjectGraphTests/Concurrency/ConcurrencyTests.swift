import Dispatch
import Foundation
import Testing
import ObjectGraph
@testable import ObjectGraphCore

@Suite("Concurrency: queues, perform and confinement")
struct ConcurrencyTests {
    @Test func coreDataSpellingsAreAliases() {
        #expect(ManagedObjectContext.ConcurrencyType.mainQueueConcurrencyType == .mainQueue)
        #expect(ManagedObjectContext.ConcurrencyType.privateQueueConcurrencyType == .privateQueue)
        #expect(ManagedObjectContext.ConcurrencyType.confinementConcurrencyType == .confinement)
    }

    @Test func performRunsBlocksInTheOrderSubmittedOnThePrivateQueue() throws {
        let stack = try TestStack(.inMemory)
        let context = stack.privateContext()
        let order = Recorder<Int>()
        let done = DispatchSemaphore(value: 0)
        for i in 0..<200 {
            context.perform {
                #expect(context.isOnQueue)
                order.append(i)
                if i == 199 { done.signal() }
            }
        }
        done.wait()
        #expect(order.values == Array(0..<200))
    }

    @Test func performAndWaitIsReentrantReturnsAndRethrows() throws {
        let stack = try TestStack(.inMemory)
        let context = stack.privateContext()
        let n = context.performAndWait {
            context.performAndWait {
                context.insertNewObject(forEntityName: "Folder").setValue("x", forKey: "name")
                return context.insertedObjects.count
            }
        }
        #expect(n == 1)
        struct Boom: Error {}
        #expect(throws: Boom.self) { try context.performAndWait { throw Boom() } }
        #expect(!context.isOnQueue)
    }

    @Test func asyncPerformReturnsValuesAndErrors() async throws {
        let stack = try TestStack(.sqlite)
        let context = stack.privateContext()
        let count = try await context.perform {
            for i in 0..<10 { _ = context.insert("Note", ["title": "n\(i)"]) }
            try context.save()
            return try context.count(for: FetchRequest<ManagedObject>(entityName: "Note"))
        }
        #expect(count == 10)
        let enqueued = await context.perform(schedule: .enqueued) { context.isOnQueue }
        #expect(enqueued)
        await #expect(throws: ObjectGraphError.invalidFetchRequest) {
            try await context.perform { try context.count(for: FetchRequest<ManagedObject>(entityName: "Nope")) }
        }
    }

    @Test func aMainQueueContextRunsOnTheMainQueue() async throws {
        let stack = try TestStack(.inMemory)
        let main = ManagedObjectContext(concurrencyType: .mainQueue)
        main.persistentStoreCoordinator = stack.coordinator
        let onMain = await main.perform { ConcurrencyChecks.isOnMainQueue && main.isOnQueue }
        #expect(onMain)
        let value = await Task.detached { main.performAndWait { main.isOnQueue } }.value
        #expect(value)
        let fromMainActor = await MainActor.run { main.isOnQueue }
        #expect(fromMainActor)
    }

    @Test func aConfinementContextBelongsToItsThread() throws {
        let stack = try TestStack(.inMemory)
        let context = stack.context()
        #expect(context.isOnQueue)
        let elsewhere = Recorder<Bool>()
        ThreadOfItsOwn.run { elsewhere.append(context.isOnQueue) }
        #expect(elsewhere.values == [false])
    }

    @Test func nestedPerformAndWaitAcrossContextsDoesNotDeadlock() throws {
        let stack = try TestStack(.sqlite)
        let a = stack.privateContext("a"), b = stack.privateContext("b")
        let total = try a.performAndWait {
            _ = a.insert("Note", ["title": "from a"])
            try a.save()
            return try b.performAndWait {
                _ = b.insert("Note", ["title": "from b"])
                try b.save()
                return try a.performAndWait { try a.count(for: FetchRequest<ManagedObject>(entityName: "Note")) }
            }
        }
        #expect(total == 2)
    }

    @Test func objectsCrossQueuesByID() throws {
        let stack = try TestStack(.sqlite)
        let worker = stack.privateContext("worker")
        let (temporary, id) = try worker.performAndWait {
            let note = worker.insert("Note", ["title": "made in the background"])
            let temporary = note.objectID
            try worker.save()
            return (temporary, note.objectID)
        }
        let reader = stack.privateContext("reader")
        #expect(throws: ObjectGraphError.temporaryObjectID) { try reader.performAndWait { _ = try reader.existingObject(with: temporary) } }
        let fault = reader.performAndWait { reader.object(with: id).isFault }
        #expect(fault)
        let title = try reader.performAndWait { try reader.existingObject(with: id).value(forKey: "title") as? String }
        #expect(title == "made in the background")
    }

    @Test func backgroundFetchFillsTheRowCacheForTheMainContextWithoutSQL() async throws {
        let stack = try TestStack(.sqlite)
        let importer = stack.privateContext("import")
        try importer.performAndWait {
            for i in 0..<500 { _ = importer.insert("Note", ["title": "n\(i)", "rank": i]) }
            try importer.save()
        }
        let background = stack.privateContext("background")
        let ids = try await background.perform {
            let request = FetchRequest<ManagedObjectID>(entityName: "Note")
            request.includesPropertyValues = true
            request.sortDescriptors = [FetchSortDescriptor(key: "rank")]
            return try background.fetch(request)
        }
        let main = ManagedObjectContext(concurrencyType: .mainQueue)
        main.name = "main"
        main.persistentStoreCoordinator = stack.coordinator
        let before = stack.coordinator.statistics
        let ranks = await main.perform { ids.map { main.object(with: $0).value(forKey: "rank") as! Int64 } }
        let after = stack.coordinator.statistics
        #expect(ranks == Array(0..<500).map(Int64.init))
        #expect(after.sqlStatements == before.sqlStatements)
        #expect(after.rowCacheHits - before.rowCacheHits == 500)
    }

    @Test func theCoordinatorLockMakesOtherContextsWait() throws {
        let stack = try TestStack(.sqlite)
        let context = stack.privateContext("waiting")
        let fetched = DispatchSemaphore(value: 0)
        let events = Recorder<String>()
        stack.coordinator.lock()
        context.perform {
            _ = try? context.count(for: FetchRequest<ManagedObject>(entityName: "Note"))
            events.append("fetched")
            fetched.signal()
        }
        #expect(fetched.wait(timeout: .now() + 0.3) == .timedOut, "the fetch waits while the lock is held")
        events.append("unlocked")
        stack.coordinator.unlock()
        fetched.wait()
        #expect(events.values == ["unlocked", "fetched"])
    }

    @Test func theContextLockIsRecursive() throws {
        let stack = try TestStack(.inMemory)
        let context = stack.privateContext()
        context.lock()
        context.lock()
        #expect(context.tryLock())
        context.unlock(); context.unlock(); context.unlock()
    }

    final class ImportOperation: Operation, @unchecked Sendable {
        let coordinator: PersistentStoreCoordinator
        let range: Range<Int>
        var error: (any Error)?
        init(coordinator: PersistentStoreCoordinator, range: Range<Int>) {
            self.coordinator = coordinator
            self.range = range
        }
        override func main() {
            // The context is created here, on the operation's thread, as the guides say.
            let context = ManagedObjectContext(concurrencyType: .privateQueue)
            context.name = "import \(range)"
            context.persistentStoreCoordinator = coordinator
            do {
                try context.performAndWait {
                    for i in range { _ = context.insert("Note", ["title": "op \(i)", "rank": i]) }
                    try context.save()
                }
            } catch {
                self.error = error
            }
        }
    }

    @Test func operationsCreatingTheirContextInMainSave() throws {
        let stack = try TestStack(.sqlite)
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 4
        let operations = (0..<8).map { ImportOperation(coordinator: stack.coordinator, range: ($0 * 50)..<($0 * 50 + 50)) }
        queue.addOperations(operations, waitUntilFinished: true)
        #expect(operations.allSatisfy { $0.error == nil })
        let context = stack.context()
        #expect(try context.count(for: FetchRequest<ManagedObject>(entityName: "Note")) == 400)
    }

    @Test(arguments: [StoreKind.sqlite, .inMemory])
    func eightContextsInsertingConcurrentlyLoseNothing(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        let seed = UInt64.random(in: 0..<1_000_000)
        DispatchQueue.concurrentPerform(iterations: 8) { worker in
            var random = SeededRandom(seed: seed &+ UInt64(worker))
            let context = stack.privateContext("worker \(worker)")
            for batch in 0..<5 {
                let n = Int(random.next() % 40) + 1
                context.performAndWait {
                    for i in 0..<n { _ = context.insert("Note", ["title": "w\(worker)-b\(batch)-\(i)", "rank": worker]) }
                    do { try context.save() } catch { Issue.record("seed \(seed): \(error)") }
                }
            }
        }
        var expected = 0
        for worker in 0..<8 {
            var random = SeededRandom(seed: seed &+ UInt64(worker))
            for _ in 0..<5 { expected += Int(random.next() % 40) + 1 }
        }
        let context = stack.context()
        let notes = try context.all("Note")
        #expect(notes.count == expected, "seed \(seed)")
        #expect(Set(notes.map(\.objectID)).count == expected, "unique IDs, seed \(seed)")
        let titles = Set(notes.compactMap { $0.value(forKey: "title") as? String })
        #expect(titles.count == expected, "seed \(seed)")
    }

    @Test func readersRunWhileASaveIsInProgress() throws {
        let stack = try TestStack(.sqlite)
        let writer = stack.privateContext("writer")
        try writer.performAndWait {
            for i in 0..<100 { _ = writer.insert("Note", ["title": "seed \(i)"]) }
            try writer.save()
        }
        let stop = Recorder<Bool>()
        let counts = Recorder<Int>()
        let group = DispatchGroup()
        for r in 0..<3 {
            let reader = stack.privateContext("reader \(r)")
            DispatchQueue.global().async(group: group) {
                while stop.values.isEmpty {
                    let n = reader.performAndWait { (try? reader.count(for: FetchRequest<ManagedObject>(entityName: "Note"))) ?? -1 }
                    counts.append(n)
                    reader.performAndWait { reader.reset() }
                }
            }
        }
        for batch in 0..<10 {
            try writer.performAndWait {
                for i in 0..<100 { _ = writer.insert("Note", ["title": "b\(batch)-\(i)"]) }
                try writer.save()
                writer.reset()
            }
        }
        stop.append(true)
        group.wait()
        // Every count a reader saw is a whole number of batches: no save is partly visible.
        #expect(counts.values.allSatisfy { $0 % 100 == 0 && $0 >= 100 && $0 <= 1100 })
        #expect(try stack.context().all("Note").count == 1100)
    }

    @Test(arguments: ["context-off-queue", "object-off-queue", "inaccessible-fault", "reconfigure-after-use", "replace-coordinator", "chain-too-deep", "pin-child"])
    func breakingARuleStopsTheProcessWithAMessage(_ kind: String) throws {
        let result = try runTool(["_misuse", kind])
        #expect(result.status != 0)
        switch kind {
        case "context-off-queue":
            #expect(result.output.contains("concurrency violation: insertNewObject(forEntityName:) on context 'misused'"))
            #expect(result.output.contains("private queue"))
            #expect(result.output.contains("called from the main thread"))
        case "object-off-queue":
            #expect(result.output.contains("on object Note/p1 of context 'misused'"))
            #expect(result.output.contains("'offender'"))
        case "reconfigure-after-use":
            #expect(result.output.contains("cannot set parent of context 'misused' after it was used"))
        case "replace-coordinator":
            #expect(result.output.contains("cannot set persistentStoreCoordinator of context 'misused': it has a persistent store coordinator already"))
        case "chain-too-deep":
            #expect(result.output.contains("the chain would be more than \(ManagedObjectContext.maximumNestingDepth) contexts deep"))
            #expect(result.output.contains("cannot be a child of 'context "))
        case "pin-child":
            #expect(result.output.contains("setQueryGenerationFrom(_:) on child context 'pinned child'"))
            #expect(result.output.contains("pin the parent instead"))
        default:
            #expect(result.output.contains("object Note/p1 in context 'stale reader' has no row"))
            #expect(result.output.contains("shouldDeleteInaccessibleFaults"))
        }
    }

    @Test func theChecksCanBeTurnedOffAndTheToolWorksWhenRulesAreKept() throws {
        #expect(try runTool(["_misuse", "none"]).output.contains("ok 1"))
        let unchecked = try runTool(["_misuse", "context-off-queue"], environment: ["OBJECTGRAPH_CONCURRENCY_DEBUG": "0"])
        #expect(unchecked.status == 0)
    }
}

