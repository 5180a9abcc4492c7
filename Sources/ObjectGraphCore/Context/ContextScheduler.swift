#if os(Linux)
@preconcurrency import Dispatch
#else
import Dispatch
#endif
import Foundation

/// Where a context's blocks run, made once from its ``ManagedObjectContext/ConcurrencyType``: it
/// tells whether the caller is on the context's queue, and takes blocks there — enqueued, waited
/// for or awaited.
///
/// A `.privateQueue` context's queue is a serial queue of its own, whose executor is a
/// ``ContextQueueActor``; a `.mainQueue` context's is the main queue, the main actor's executor; a
/// `.confinement` context has none: it runs on the thread that created it, and only there.
///
/// The blocks it takes to a queue run with the scheduler recorded in ``EnteredContexts``, which
/// tells a thread inside one, however deep, that it may use the context. What a block does
/// besides the caller's work (a context processes its pending changes at its end) is the context's.
final class ContextScheduler: @unchecked Sendable {
    // @unchecked Sendable: its one property is a constant; the owning thread's ID it may hold is
    // compared, never used to reach the thread.

    private enum Kind {
        case privateQueue(ContextQueueActor)
        case mainQueue
        case confinement(owningThread: pthread_t)
    }

    private let kind: Kind

    /// Makes the scheduler of a new context; a confinement context belongs to the calling thread,
    /// and a private queue is named `label`.
    init(_ concurrencyType: ManagedObjectContext.ConcurrencyType, label: String) {
        switch concurrencyType {
        case .privateQueue:
            kind = .privateQueue(ContextQueueActor(executor: ContextQueueExecutor(label: label)))
        case .mainQueue:
            _ = ConcurrencyChecks.mainTag  // installs the main queue's tag
            kind = .mainQueue
        case .confinement:
            kind = .confinement(owningThread: pthread_self())
        }
    }

    /// Whether the caller runs on the queue: in one of its blocks, however deep (also, for the main
    /// queue, on the main actor, or on the main thread outside any queue), or, for a confinement
    /// context, on its thread.
    var isOnQueue: Bool {
        switch kind {
        case .privateQueue(let actor): actor.executor.isCurrent || EnteredContexts.contains(self)
        case .mainQueue: ConcurrencyChecks.isOnMainQueue || EnteredContexts.contains(self)
        case .confinement(let thread): pthread_equal(thread, pthread_self()) != 0
        }
    }

    /// The queue as concurrency-violation messages name it ("which belongs to ...").
    var queueDescription: String {
        switch kind {
        case .privateQueue(let actor): "its private queue '\(actor.executor.tag.label)'"
        case .mainQueue: "the main queue"
        case .confinement: "the thread that created it"
        }
    }

    /// Whether blocks can be sent to the context from any thread (false for a confinement context).
    var isQueueBased: Bool {
        switch kind {
        case .privateQueue, .mainQueue: true
        case .confinement: false
        }
    }

    /// A private queue's actor, whose executor is the queue; nil for the other types.
    var queueActor: ContextQueueActor? {
        switch kind {
        case .privateQueue(let actor): actor
        case .mainQueue, .confinement: nil
        }
    }

    /// The dispatch queue blocks are sent to; nil for a confinement context.
    private var dispatchQueue: DispatchQueue? {
        switch kind {
        case .privateQueue(let actor): actor.executor.queue
        case .mainQueue: DispatchQueue.main
        case .confinement: nil
        }
    }

    // MARK: - Running blocks

    /// Runs `block` on the queue after the blocks already submitted, and returns at once; `tracker`
    /// counts the block until it finished. Returns false, and nothing runs, when the tracker takes
    /// no more work. A confinement context runs `block` now, on its thread, uncounted.
    ///
    /// It is a programmer error to call it for a confinement context from another thread: the
    /// process stops with a message naming the context (`contextName`).
    @discardableResult
    func enqueue(
        countedBy tracker: ActivityTracker?, contextName: @autoclosure () -> String,
        _ block: @escaping @Sendable () -> Void
    ) -> Bool {
        guard let queue = dispatchQueue else {
            guard isOnQueue else { confinementViolation("perform(_:)", contextName: contextName()) }
            block()
            return true
        }
        guard tracker?.blockSubmitted() != false else { return false }
        queue.async { [self] in
            EnteredContexts.with(self, block)
            tracker?.blockFinished()
        }
        return true
    }

    /// Runs `block` on the queue and waits for it, for a caller off the queue (a caller on it runs
    /// the block inline instead). A caller on the main queue keeps holding it while it waits for a
    /// private queue: main-queue contexts stay usable inline in the block (a child's fault or save
    /// reaching a main-queue parent).
    ///
    /// It is a programmer error to call it for a confinement context: the caller is on another
    /// thread, and the process stops with a message naming the context (`contextName`).
    func runAndWait<T>(contextName: @autoclosure () -> String, _ block: () throws -> T) rethrows -> T {
        let queue: DispatchQueue, holdsMainQueue: Bool
        switch kind {
        case .privateQueue(let actor): (queue, holdsMainQueue) = (actor.executor.queue, ConcurrencyChecks.isOnMainQueue)
        case .mainQueue: (queue, holdsMainQueue) = (DispatchQueue.main, false)
        case .confinement: confinementViolation("performAndWait(_:)", contextName: contextName())
        }
        return try queue.sync { try EnteredContexts.with(self, holdingMainQueue: holdsMainQueue, block) }
    }

    /// Runs `work` on the queue for an awaiting caller and returns its result. It runs as a job of
    /// the queue's executor (a private queue's actor, or the main actor): the task hops there and
    /// back, and the runtime knows where it runs. A confinement context runs it inline.
    func run<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
        let entered: @Sendable () -> T = { [self] in EnteredContexts.with(self, work) }
        switch kind {
        case .privateQueue(let actor): return await actor.run(entered)
        case .mainQueue: return await MainActor.run(body: entered)
        case .confinement: return entered()
        }
    }

    private func confinementViolation(_ operation: String, contextName: String) -> Never {
        fatalError("ObjectGraph: \(operation) on confinement context '\(contextName)' from \(ConcurrencyChecks.currentThreadDescription()); a confinement context runs only on the thread that created it")
    }

    // MARK: - Work from elsewhere

    /// How work sent to the context from anywhere reaches its queue.
    enum Delivery {
        /// The caller is on the queue: the work runs now.
        case now
        /// The work is enqueued after the blocks already submitted.
        case enqueued
        /// A confinement context on another thread: the work waits as mail, run on the context's
        /// thread at its next entry point.
        case mail
    }

    /// How work sent from the calling thread reaches the queue.
    var delivery: Delivery {
        if isOnQueue { return .now }
        return isQueueBased ? .enqueued : .mail
    }

    /// Whether the queue is the main queue, whose run loop turns end: work can wait for the end of
    /// the current one (``atEndOfMainRunLoopTurn(_:)``).
    var hasMainRunLoopTurns: Bool {
        switch kind {
        case .mainQueue: true
        case .privateQueue, .confinement: false
        }
    }

    /// Runs `work` on the main queue at the end of the main run loop's turn, after the blocks
    /// already submitted to it.
    func atEndOfMainRunLoopTurn(_ work: @escaping @Sendable () -> Void) {
        DispatchQueue.main.async(execute: work)
    }
}
