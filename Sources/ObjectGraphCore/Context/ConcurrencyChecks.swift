import Dispatch
import Foundation

/// Whether every context and object API checks that it runs on its context's queue: always in
/// debug builds; in release builds when the environment has `OBJECTGRAPH_CONCURRENCY_DEBUG=1`
/// (Core Data's `-com.apple.CoreData.ConcurrencyDebug 1`).
enum ConcurrencyChecks {
    static let enabled: Bool = {
        if let value = ProcessInfo.processInfo.environment["OBJECTGRAPH_CONCURRENCY_DEBUG"] { return value == "1" }
        return _isDebugAssertConfiguration()
    }()

    /// Identifies a context's queue from inside it (`DispatchQueue.getSpecific`).
    static let queueKey = DispatchSpecificKey<QueueTag>()

    /// The tag of the main queue, installed once.
    static let mainTag: QueueTag = {
        let tag = QueueTag(label: "main queue")
        DispatchQueue.main.setSpecific(key: queueKey, value: tag)
        return tag
    }()

    /// Whether the caller runs on the main queue (or the main actor, whose executor it is), or on
    /// the main thread outside any queue.
    static var isOnMainQueue: Bool {
        _ = mainTag
        if DispatchQueue.getSpecific(key: queueKey) === mainTag { return true }
        if EnteredContexts.holdsMainQueue { return true }
        return Thread.isMainThread && DispatchQueue.getSpecific(key: queueKey) == nil
    }

    static func currentThreadDescription() -> String {
        let thread = Thread.current
        var text = thread.isMainThread ? "the main thread" : "thread \(String(format: "0x%lx", UInt(bitPattern: Int(pthread_self()))))"
        if let name = thread.name, !name.isEmpty { text += " '\(name)'" }
        if let tag = DispatchQueue.getSpecific(key: queueKey) { text += " running queue '\(tag.label)'" }
        return text
    }
}

/// A value set on a context's queue, to recognise it.
final class QueueTag: Sendable {
    let label: String
    init(label: String) { self.label = label }
}

/// The contexts whose blocks the current thread is running, innermost last, each recorded by its
/// ``ContextScheduler``. A thread inside `a.performAndWait { b.performAndWait { ... } }` holds both
/// queues: `getSpecific` sees only b's, so a nested `a.performAndWait` must be recognised from this
/// list and run inline (a `sync` onto a queue the thread already holds would deadlock).
enum EnteredContexts {
    private final class Stack {
        var contexts: [ObjectIdentifier] = []
        /// How many of the entered blocks were entered from the main queue, which the thread keeps
        /// holding while it waits for them.
        var mainQueueHolds = 0
    }

    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key) { pointer in
            guard let pointer else { return }
            Unmanaged<AnyObject>.fromOpaque(pointer).release()
        }
        return key
    }()

    private static var stack: Stack {
        if let pointer = pthread_getspecific(key) {
            return Unmanaged<Stack>.fromOpaque(pointer).takeUnretainedValue()
        }
        let stack = Stack()
        pthread_setspecific(key, Unmanaged.passRetained(stack).toOpaque())
        return stack
    }

    static func contains(_ scheduler: ContextScheduler) -> Bool {
        guard let pointer = pthread_getspecific(key) else { return false }
        return Unmanaged<Stack>.fromOpaque(pointer).takeUnretainedValue().contexts.contains(ObjectIdentifier(scheduler))
    }

    /// Whether the thread runs a block entered synchronously from the main queue (the main queue
    /// is then held by this thread until the block returns).
    static var holdsMainQueue: Bool {
        guard let pointer = pthread_getspecific(key) else { return false }
        return Unmanaged<Stack>.fromOpaque(pointer).takeUnretainedValue().mainQueueHolds > 0
    }

    /// Runs `body` with the context of `scheduler` recorded as entered on this thread (and the main
    /// queue as held, when the caller waits on it).
    static func with<T>(_ scheduler: ContextScheduler, holdingMainQueue: Bool = false, _ body: () throws -> T) rethrows -> T {
        let stack = self.stack
        stack.contexts.append(ObjectIdentifier(scheduler))
        if holdingMainQueue { stack.mainQueueHolds += 1 }
        defer {
            stack.contexts.removeLast()
            if holdingMainQueue { stack.mainQueueHolds -= 1 }
        }
        return try body()
    }
}
