import Dispatch
import Foundation

extension PersistentContainer {
    /// Waits for the work in flight on the container's contexts — blocks submitted with `perform`
    /// and not finished, saves under way — then closes the stores.
    ///
    /// ```swift
    /// container.performBackgroundTask { context in /* ... */ try? context.save() }
    /// try container.shutdown(timeout: .seconds(10))   // the save above is in the store
    /// ```
    ///
    /// Work submitted while it waits (a block that schedules another) is waited for too, within the
    /// same time limit. After it returns, the container takes no new work
    /// (``newBackgroundContext()`` and ``performBackgroundTask(_:)->()``
    /// stop the program; the `async` ``performBackgroundTask(_:)->_``
    /// throws ``PersistentContainerError/shutDown``), and the contexts it made find no store: their
    /// fetches and saves throw ``ObjectGraphError/noPersistentStore``. Calling it again does nothing.
    ///
    /// On the main thread outside any block (a command-line program's `main`, an `atexit` handler)
    /// it runs the main run loop while it waits, so blocks queued for ``viewContext`` run. Inside a
    /// block of the main queue it cannot wait for them: they need the main queue it holds. Use
    /// `await shutdown(timeout:)` from the main actor.
    ///
    /// - Throws: ``PersistentContainerError/shutdownTimedOut`` when the time limit passes with work
    ///   still running, or ``PersistentContainerError/mainQueueHeld`` when blocks for the view context
    ///   wait for the main queue this call holds. The stores are then left open, so that the work can
    ///   still finish; call `shutdown` again to wait more. An SQLite save cut short by the end of the
    ///   process is rolled back whole: a save is never half written.
    ///
    /// It is a programmer error to call it from a block running on one of the container's background
    /// contexts (it would wait for itself): the process stops with a message naming the context.
    public func shutdown(timeout: Duration = .seconds(10)) throws {
        if let context = backgroundContextHeldByCaller() {
            fatalError("""
                ObjectGraph: shutdown(timeout:) of container '\(name)' was called from a block running on its context \
                '\(context.debugName)'; it would wait for that block to finish, which cannot happen before it returns. \
                Call shutdown from outside the container's contexts, or use `await shutdown(timeout:)` from a task.
                """)
        }
        try drainAndClose(timeout: timeout, caller: .current(viewContext: existingViewContext))
    }

    /// Waits for the work in flight on the container's contexts, then closes the stores, without
    /// blocking the caller's thread (the waiting happens on a thread of its own).
    ///
    /// ```swift
    /// try await container.shutdown(timeout: .seconds(10))
    /// ```
    ///
    /// It behaves as the synchronous ``shutdown(timeout:)-1wk1w``; from the main actor it waits
    /// for the view context's blocks too, since it leaves the main queue free while it waits.
    /// Cancelling the calling task does not cut the wait short: saves in flight are worth the wait.
    ///
    /// - Throws: ``PersistentContainerError/shutdownTimedOut`` when the time limit passes with work
    ///   still running; the stores are left open.
    public func shutdown(timeout: Duration = .seconds(10)) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            // A thread of its own, not Foundation's `Thread`, which would keep the container until
            // the thread's exit, and might release it there, where closing its stores corrupts
            // libdispatch's thread data (see `ThreadOfItsOwn`).
            ThreadOfItsOwn.start { [self] in
                do {
                    try drainAndClose(timeout: timeout, caller: .other)
                    continuation.resume()
                } catch {
                    continuation.resume(throwing: error)
                }
            }
        }
    }

    /// Where a shutdown waits from, which decides how it can wait for the view context's blocks.
    enum Caller {
        /// The main thread (a program's `main`, an `atexit` handler): it runs the main run loop,
        /// which drains the main queue, while it waits. (Inside a block of the main queue, the run
        /// loop cannot drain it again: the view context's blocks then wait for the caller, and the
        /// time limit reports them.)
        case mainThread
        /// A block of the main queue on another thread, or a block of the view context: the view
        /// context's queued blocks cannot run until the caller returns.
        case mainQueue
        /// Any other thread: the main queue is serviced by someone else.
        case other

        static func current(viewContext: ManagedObjectContext?) -> Caller {
            if let viewContext, EnteredContexts.contains(viewContext.scheduler) { return .mainQueue }
            if Thread.isMainThread { return .mainThread }
            _ = ConcurrencyChecks.mainTag
            if DispatchQueue.getSpecific(key: ConcurrencyChecks.queueKey) === ConcurrencyChecks.mainTag { return .mainQueue }
            return .other
        }
    }

    var existingViewContext: ManagedObjectContext? { state.withLock { $0.viewContext } }

    /// The container's background context whose block the calling thread is running, if any.
    func backgroundContextHeldByCaller() -> ManagedObjectContext? {
        let contexts = state.withLock { $0.backgroundContexts.compactMap(\.context) }
        return contexts.first { $0.isOnQueue }
    }

    /// Work in flight on every context of the container.
    var outstandingWork: (blocks: Int, saves: Int) {
        let (b, s) = backgroundActivity.outstanding
        let (vb, vs) = viewActivity.outstanding
        return (b + vb, s + vs)
    }

    /// The shutdown itself: wait (as the caller can) until no work is in flight or the deadline
    /// passes, then close the stores or report what is still running.
    func drainAndClose(timeout: Duration, caller: Caller) throws {
        guard state.withLock({ $0.lifecycle.beginShutdown() }) == .wait else { return }
        let deadline = Date().addingTimeInterval(Self.seconds(timeout))
        var stores: [PersistentStore]
        while true {
            let idle = waitForWork(until: deadline, caller: caller)
            // Decide under the container's lock, checking again: work submitted since the wait
            // ended is waited for rather than cut off.
            let decided = state.withLock { state -> [PersistentStore]? in
                let stillIdle = idle && outstandingWork == (0, 0)
                if idle && !stillIdle && Date() < deadline { return nil }
                if stillIdle {
                    backgroundActivity.close()
                    viewActivity.close()
                }
                return state.lifecycle.finishShutdown(allWorkFinished: stillIdle)
            }
            guard let decided else { continue }
            stores = decided
            if state.withLock({ $0.lifecycle.phase }) == .closed { break }
            throw timeoutError(timeout: timeout, caller: caller)
        }
        var failures: [any Error] = []
        for store in stores {
            do { try persistentStoreCoordinator.removePersistentStore(store) } catch { failures.append(error) }
        }
        if let failure = failures.first { throw failure }
    }

    /// What a shutdown that could not finish throws.
    private func timeoutError(timeout: Duration, caller: Caller) -> PersistentContainerError {
        let (blocks, saves) = outstandingWork
        let viewBlocks = viewActivity.outstanding.blocks
        if caller == .mainQueue && viewBlocks > 0 && backgroundActivity.outstanding == (0, 0) {
            return PersistentContainerError(
                .mainQueueHeld,
                """
                shutdown(timeout:) of container '\(name)' was called on the main queue while \(viewBlocks) \
                block(s) of its view context were unfinished (a view context block that calls shutdown counts \
                itself); they cannot finish until the call returns. \
                The stores were left open. Shut down from the main actor with `await shutdown(timeout:)`, \
                or from another thread.
                """,
                containerName: name, outstandingBlocks: blocks, outstandingSaves: saves)
        }
        return PersistentContainerError(
            .shutdownTimedOut,
            """
            shutdown(timeout: \(timeout)) of container '\(name)' gave up with \(blocks) block(s) and \(saves) \
            save(s) still running on its contexts; the stores were left open so that they can finish
            """,
            containerName: name, outstandingBlocks: blocks, outstandingSaves: saves)
    }

    /// Waits until no work is in flight on any of the container's contexts, or the deadline
    /// passes; returns whether none is.
    private func waitForWork(until deadline: Date, caller: Caller) -> Bool {
        switch caller {
        case .mainThread:
            // Run the main queue all along: background work may be waiting for the view context.
            return serviceMainQueue(until: deadline) { outstandingWork == (0, 0) }
        case .other:
            while true {
                let backgroundIdle = backgroundActivity.waitUntilIdle(deadline: deadline)
                let viewIdle = viewActivity.waitUntilIdle(deadline: deadline)
                if backgroundIdle && viewIdle && outstandingWork == (0, 0) { return true }
                if Date() >= deadline { return false }
            }
        case .mainQueue:
            while true {
                let backgroundIdle = backgroundActivity.waitUntilIdle(deadline: deadline)
                if viewActivity.outstanding != (0, 0) { return false }   // it needs the main queue the caller holds
                if backgroundIdle && outstandingWork == (0, 0) { return true }
                if Date() >= deadline { return false }
            }
        }
    }

    /// A duration in seconds, as Foundation's `TimeInterval`.
    static func seconds(_ duration: Duration) -> TimeInterval {
        let (seconds, attoseconds) = duration.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }

    /// Runs the main run loop (which drains the main queue) on the main thread until `done` or the
    /// deadline; returns `done()`.
    private func serviceMainQueue(until deadline: Date, _ done: () -> Bool) -> Bool {
        while !done() {
            let now = Date()
            if now >= deadline { return false }
            if !RunLoop.main.run(mode: .default, before: min(deadline, now.addingTimeInterval(0.01))) {
                Thread.sleep(forTimeInterval: 0.001)   // nothing to run yet: do not spin
            }
        }
        return true
    }
}
