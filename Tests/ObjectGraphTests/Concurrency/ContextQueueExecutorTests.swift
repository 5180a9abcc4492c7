import Dispatch
import Foundation
import Testing
import ObjectGraph
@testable import ObjectGraphCore

/// A private context's queue is a `SerialExecutor`: `await perform` runs as one of its jobs, and
/// the Swift runtime's isolation checks and the context's own queue checks agree.
@Suite("Concurrency: a private context's queue as an executor")
struct ContextQueueExecutorTests {
    @Test func awaitPerformRunsAsAJobOfTheContextsExecutor() async throws {
        let stack = try TestStack(.inMemory)
        let context = stack.privateContext("executor")
        let actor = try #require(context.scheduler.queueActor)
        let seen = await context.perform {
            // The runtime knows it runs in the context's actor; the context knows it is on its queue.
            actor.preconditionIsolated("await perform runs in the context's actor")
            _ = context.insertNewObject(forEntityName: "Folder")
            return (context.isOnQueue, context.insertedObjects.count)
        }
        #expect(seen.0)
        #expect(seen.1 == 1)
        #expect(!context.scheduler.queueActor!.executor.isCurrent)
    }

    @Test func blocksThatDidNotComeThroughTheExecutorAreIsolatedToo() throws {
        let stack = try TestStack(.inMemory)
        let context = stack.privateContext("executor")
        let actor = try #require(context.scheduler.queueActor)
        // performAndWait and perform(_:) run plain queue blocks: the runtime asks the executor's
        // checkIsolated(), which recognises its queue.
        let inWait = context.performAndWait {
            actor.preconditionIsolated("performAndWait runs on the context's queue")
            return actor.assumeIsolated { _ in context.isOnQueue }
        }
        #expect(inWait)
        let done = DispatchSemaphore(value: 0)
        let recorded = Recorder<Bool>()
        context.perform {
            actor.assumeIsolated { _ in recorded.append(context.isOnQueue) }
            done.signal()
        }
        done.wait()
        #expect(recorded.values == [true])
    }

    @Test func awaitPerformsAndPerformsRunInTheOrderSubmitted() async throws {
        let stack = try TestStack(.inMemory)
        let context = stack.privateContext("order")
        let order = Recorder<Int>()
        let gate = DispatchSemaphore(value: 0)
        submit(context) { gate.wait(); order.append(0) }
        submit(context) { order.append(1) }
        gate.signal()
        await context.perform(schedule: .enqueued) { order.append(2) }
        #expect(order.values == [0, 1, 2])
    }

    @Test func manyTasksAwaitOneContextAndEachBlockRunsAlone() async throws {
        let stack = try TestStack(.sqlite)
        let context = stack.privateContext("tasks")
        let counter = UncheckedBox(0)  // touched only on the context's queue
        try await withThrowingTaskGroup(of: Int.self) { group in
            for i in 0..<200 {
                group.addTask {
                    try await context.perform {
                        counter.value += 1
                        let note = context.insertNewObject(forEntityName: "Note")
                        note.setValue("task \(i)", forKey: "title")
                        note.setValue(Int64(i), forKey: "rank")
                        if i % 50 == 49 { try context.save() }
                        return counter.value
                    }
                }
            }
            var seen = Set<Int>()
            for try await value in group { seen.insert(value) }
            #expect(seen == Set(1...200), "each block saw its own count: blocks never overlapped")
        }
        let count = try await context.perform {
            try context.save()
            return try context.count(for: FetchRequest<ManagedObject>(entityName: "Note"))
        }
        #expect(count == 200)
    }

    @Test func aMainQueueContextsAwaitPerformRunsOnTheMainActor() async throws {
        let stack = try TestStack(.inMemory)
        let context = ManagedObjectContext(concurrencyType: .mainQueue)
        context.persistentStoreCoordinator = stack.coordinator
        let onMain = await context.perform {
            MainActor.preconditionIsolated("a main-queue context's await perform runs on the main actor")
            return context.isOnQueue
        }
        #expect(onMain)
    }
}

/// `perform(_:)`, the one that does not wait (in an async function, `perform { }` is the awaited one).
private func submit(_ context: ManagedObjectContext, _ block: @escaping @Sendable () -> Void) {
    context.perform(block)
}

/// A mutable box for a value that only one queue touches at a time.
final class UncheckedBox<Value>: @unchecked Sendable {  // used only on one context's queue
    var value: Value
    init(_ value: Value) { self.value = value }
}
