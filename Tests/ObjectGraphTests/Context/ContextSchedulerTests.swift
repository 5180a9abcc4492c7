import Dispatch
import Foundation
import Testing
import ObjectGraph
@testable import ObjectGraphCore

/// A context's scheduler on its own: where the caller is, and where the blocks it takes run, for
/// each of the three concurrency types.
@Suite("Concurrency: a context's scheduler for each concurrency type")
struct ContextSchedulerTests {
    struct Boom: Error {}

    // MARK: - On the queue or off it

    @Test func aPrivateQueueIsEnteredOnlyByItsBlocks() {
        let scheduler = ContextScheduler(.privateQueue, label: "scheduler.private")
        #expect(!scheduler.isOnQueue)
        #expect(scheduler.runAndWait(contextName: "private") { scheduler.isOnQueue })
        let elsewhere = Recorder<Bool>()
        ThreadOfItsOwn.run { elsewhere.append(scheduler.isOnQueue) }
        #expect(elsewhere.values == [false])
        let other = ContextScheduler(.privateQueue, label: "scheduler.other")
        #expect(!other.runAndWait(contextName: "other") { scheduler.isOnQueue }, "another private queue is not this one")
        #expect(scheduler.queueDescription == "its private queue 'scheduler.private'")
    }

    @Test func aBlockWaitingOnAnotherQueueStaysOnItsOwn() {
        let outer = ContextScheduler(.privateQueue, label: "scheduler.outer")
        let inner = ContextScheduler(.privateQueue, label: "scheduler.inner")
        let seen = outer.runAndWait(contextName: "outer") {
            inner.runAndWait(contextName: "inner") { (outer.isOnQueue, inner.isOnQueue) }
        }
        #expect(seen == (true, true))
    }

    @Test func theMainQueueIsEnteredFromTheMainActorAndItsBlocks() async {
        let scheduler = ContextScheduler(.mainQueue, label: "unused")
        #expect(!scheduler.isOnQueue, "a test runs off the main thread")
        let fromMainActor = await MainActor.run { scheduler.isOnQueue }
        #expect(fromMainActor)
        let offMain = await Task.detached {
            let waited = scheduler.runAndWait(contextName: "main") { scheduler.isOnQueue }
            let elsewhere = Recorder<Bool>()
            ThreadOfItsOwn.run { elsewhere.append(scheduler.isOnQueue) }
            return (waited, elsewhere.values)
        }.value
        #expect(offMain == (true, [false]))
        #expect(scheduler.queueDescription == "the main queue")
    }

    @Test func aPrivateQueueWaitedForFromTheMainQueueKeepsTheMainQueueHeld() async {
        let main = ContextScheduler(.mainQueue, label: "unused")
        let worker = ContextScheduler(.privateQueue, label: "scheduler.worker")
        let seen = await Task.detached {
            main.runAndWait(contextName: "main") {
                worker.runAndWait(contextName: "worker") { (ConcurrencyChecks.isOnMainQueue, main.isOnQueue, worker.isOnQueue) }
            }
        }.value
        #expect(seen == (true, true, true))
        let unheld = worker.runAndWait(contextName: "worker") { ConcurrencyChecks.isOnMainQueue }
        #expect(!unheld, "waited for from elsewhere, a private queue holds no main queue")
    }

    @Test func aConfinementSchedulerBelongsToTheThreadThatMadeIt() {
        let made = Recorder<ContextScheduler>()
        let there = Recorder<Bool>()
        ThreadOfItsOwn.run {
            let scheduler = ContextScheduler(.confinement, label: "unused")
            made.append(scheduler)
            there.append(scheduler.isOnQueue)
        }
        #expect(there.values == [true])
        #expect(made.values.map(\.isOnQueue) == [false])
        let here = ContextScheduler(.confinement, label: "unused")
        #expect(here.isOnQueue)
        #expect(here.queueDescription == "the thread that created it")
    }

    // MARK: - Enqueue

    @Test func enqueuedBlocksRunInOrderOnTheQueueAndAreCounted() {
        let scheduler = ContextScheduler(.privateQueue, label: "scheduler.order")
        let tracker = ActivityTracker()
        let order = Recorder<Int>()
        let onQueue = Recorder<Bool>()
        let gate = DispatchSemaphore(value: 0)
        let done = DispatchSemaphore(value: 0)
        #expect(scheduler.enqueue(countedBy: tracker, contextName: "order") { gate.wait() })
        for i in 0..<100 {
            let submitted = scheduler.enqueue(countedBy: tracker, contextName: "order") {
                order.append(i)
                onQueue.append(scheduler.isOnQueue)
                if i == 99 { done.signal() }
            }
            #expect(submitted)
        }
        #expect(tracker.outstanding.blocks == 101, "submitted blocks count until they finish")
        gate.signal()
        done.wait()
        #expect(order.values == Array(0..<100))
        #expect(onQueue.values.allSatisfy { $0 })
        #expect(tracker.waitUntilIdle(deadline: Date().addingTimeInterval(5)))
    }

    @Test func aClosedTrackerRefusesEnqueuedBlocks() {
        let scheduler = ContextScheduler(.privateQueue, label: "scheduler.closed")
        let tracker = ActivityTracker()
        tracker.close()
        let ran = Recorder<Bool>()
        #expect(!scheduler.enqueue(countedBy: tracker, contextName: "closed") { ran.append(true) })
        scheduler.runAndWait(contextName: "closed") {}  // anything enqueued would have run by now
        #expect(ran.values.isEmpty)
    }

    @Test func theMainQueueRunsEnqueuedBlocksInOrder() async {
        let scheduler = ContextScheduler(.mainQueue, label: "unused")
        let order = Recorder<Int>()
        let onMain = Recorder<Bool>()
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            for i in 0..<20 {
                scheduler.enqueue(countedBy: nil, contextName: "main") {
                    order.append(i)
                    onMain.append(scheduler.isOnQueue && ConcurrencyChecks.isOnMainQueue)
                    if i == 19 { continuation.resume() }
                }
            }
        }
        #expect(order.values == Array(0..<20))
        #expect(onMain.values.allSatisfy { $0 })
    }

    @Test func aConfinementSchedulerRunsAnEnqueuedBlockAtOnceAndUncounted() {
        let scheduler = ContextScheduler(.confinement, label: "unused")
        let tracker = ActivityTracker()
        tracker.close()
        let order = Recorder<String>()
        let submitted = scheduler.enqueue(countedBy: tracker, contextName: "confined") { order.append("block") }
        order.append("returned")
        #expect(submitted)
        #expect(order.values == ["block", "returned"])
    }

    // MARK: - Run and wait

    @Test func runAndWaitReturnsValuesAndRethrows() async throws {
        let privateQueue = ContextScheduler(.privateQueue, label: "scheduler.wait")
        #expect(privateQueue.runAndWait(contextName: "wait") { 42 } == 42)
        #expect(throws: Boom.self) { try privateQueue.runAndWait(contextName: "wait") { throw Boom() } }
        #expect(!privateQueue.isOnQueue, "the queue is left after a throw")
        let main = ContextScheduler(.mainQueue, label: "unused")
        let (value, error) = await Task.detached { () -> (String, (any Error)?) in
            let value = main.runAndWait(contextName: "main") { "on main" }
            do {
                try main.runAndWait(contextName: "main") { throw Boom() }
                return (value, nil)
            } catch {
                return (value, error)
            }
        }.value
        #expect(value == "on main")
        #expect(error is Boom)
    }

    // MARK: - The awaited run

    @Test func theAwaitedRunOfAPrivateQueueIsAJobOfItsActor() async throws {
        let scheduler = ContextScheduler(.privateQueue, label: "scheduler.async")
        let actor = try #require(scheduler.queueActor)
        let seen = await scheduler.run {
            actor.preconditionIsolated("the awaited run runs in the queue's actor")
            return (actor.executor.isCurrent, scheduler.isOnQueue)
        }
        #expect(seen == (true, true))
        #expect(!scheduler.isOnQueue)
    }

    @Test func theAwaitedRunOfTheMainQueueIsOnTheMainActor() async {
        let scheduler = ContextScheduler(.mainQueue, label: "unused")
        #expect(scheduler.queueActor == nil)
        let seen = await scheduler.run {
            MainActor.preconditionIsolated("the awaited run of the main queue runs on the main actor")
            return scheduler.isOnQueue
        }
        #expect(seen)
    }

    @Test func theAwaitedRunOfAConfinementSchedulerIsInline() async {
        let scheduler = ContextScheduler(.confinement, label: "unused")
        #expect(scheduler.queueActor == nil)
        let seen = await scheduler.run {
            (EnteredContexts.contains(scheduler), DispatchQueue.getSpecific(key: ConcurrencyChecks.queueKey) == nil)
        }
        #expect(seen == (true, true), "recorded as entered, on no queue")
        #expect(!EnteredContexts.contains(scheduler))
    }

    // MARK: - Work from elsewhere

    @Test func workFromElsewhereRunsNowIsEnqueuedOrWaitsAsMail() {
        let privateQueue = ContextScheduler(.privateQueue, label: "scheduler.delivery")
        #expect(privateQueue.delivery == .enqueued)
        #expect(privateQueue.runAndWait(contextName: "delivery") { privateQueue.delivery } == .now)
        let confined = ContextScheduler(.confinement, label: "unused")
        #expect(confined.delivery == .now)
        let elsewhere = Recorder<ContextScheduler.Delivery>()
        ThreadOfItsOwn.run { elsewhere.append(confined.delivery) }
        #expect(elsewhere.values == [.mail])
        #expect(privateQueue.isQueueBased && !confined.isQueueBased)
        #expect(ContextScheduler(.mainQueue, label: "unused").isQueueBased)
    }

    @Test func onlyTheMainQueueHasRunLoopTurns() async {
        let main = ContextScheduler(.mainQueue, label: "unused")
        #expect(main.hasMainRunLoopTurns)
        #expect(!ContextScheduler(.privateQueue, label: "scheduler.turns").hasMainRunLoopTurns)
        #expect(!ContextScheduler(.confinement, label: "unused").hasMainRunLoopTurns)
        let onMain = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            main.atEndOfMainRunLoopTurn { continuation.resume(returning: ConcurrencyChecks.isOnMainQueue) }
        }
        #expect(onMain)
    }
}
