#if os(Linux)
@preconcurrency import Dispatch
#else
import Dispatch
#endif

/// A private-queue context's serial queue, as a Swift concurrency executor (GRDB's
/// `DispatchQueueActor` shape).
///
/// `await context.perform { }` runs its block as a job of this executor, on the queue, rather than
/// hopping through a continuation; and the runtime's isolation checks agree with the context's:
/// code that runs on the queue, whether it came through `perform`, `performAndWait` or an `await`,
/// is isolated to the context's actor (``ContextQueueActor``), and code anywhere else is not.
final class ContextQueueExecutor: SerialExecutor {
    let queue: DispatchQueue
    let tag: QueueTag

    init(label: String) {
        let tag = QueueTag(label: label)
        let queue = DispatchQueue(label: label)
        queue.setSpecific(key: ConcurrencyChecks.queueKey, value: tag)
        self.queue = queue
        self.tag = tag
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        queue.async { job.runSynchronously(on: self.asUnownedSerialExecutor()) }
    }

    func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }

    /// Whether the caller runs on the queue.
    var isCurrent: Bool { DispatchQueue.getSpecific(key: ConcurrencyChecks.queueKey) === tag }

    func checkIsolated() {
        guard isCurrent else {
            fatalError("ObjectGraph: code isolated to the queue '\(tag.label)' runs on \(ConcurrencyChecks.currentThreadDescription())")
        }
    }
}

// Sendable: its properties are constants, and a DispatchQueue is used from any thread.
extension ContextQueueExecutor: @unchecked Sendable {}

/// The actor whose executor is a private-queue context's queue: what runs in it runs on the queue.
actor ContextQueueActor {
    nonisolated let executor: ContextQueueExecutor

    init(executor: ContextQueueExecutor) {
        self.executor = executor
    }

    nonisolated var unownedExecutor: UnownedSerialExecutor {
        executor.asUnownedSerialExecutor()
    }

    /// Runs `work` on the queue.
    func run<T, E: Error>(_ work: () throws(E) -> T) throws(E) -> T {
        try work()
    }
}
