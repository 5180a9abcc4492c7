import Dispatch
import Foundation

// Saving without being asked: at an interval, on demand, and up a whole chain of contexts. The
// three-level stack of <doc:NestedContexts> autosaves its private root, which alone writes the store.

extension ManagedObjectContext {
    /// Starts saving the context at a fixed interval, on its own queue, whenever it has changes.
    ///
    /// ```swift
    /// let root = ManagedObjectContext(concurrencyType: .privateQueue)
    /// root.persistentStoreCoordinator = coordinator
    /// root.startAutosaving(every: .seconds(5)) { error in
    ///     logger.error("autosave failed: \(error)")
    /// }
    /// ```
    ///
    /// Each autosave is an ordinary ``save()``: for a context on a coordinator it writes the store,
    /// for a child it pushes into the parent. A failed autosave leaves the changes in the context,
    /// as a failed save does, and reports the error to `onError`; the next one tries again. Calling
    /// this again replaces the interval and the handler. Autosaving stops with ``stopAutosaving()``
    /// or when the context goes away; a tick never queues a second save while one is waiting.
    ///
    /// It is a programmer error to autosave a `.confinement` context (nothing else may run on its
    /// thread), or to give an interval that is not positive.
    public func startAutosaving(every interval: Duration, onError: (@Sendable (any Error) -> Void)? = nil) {
        precondition(scheduler.isQueueBased, "ObjectGraph: context '\(debugName)' is a confinement context; only queue-based contexts can autosave")
        let seconds = interval / .seconds(1)
        precondition(seconds > 0, "ObjectGraph: the autosave interval of context '\(debugName)' must be positive, not \(interval)")
        let leeway = DispatchTimeInterval.microseconds(Int(min(seconds * 100_000, 1_000_000)))  // a tenth, at most a second
        nesting.autosave.withLock { state in
            state.timer?.cancel()
            let timer = DispatchSource.makeTimerSource(queue: .global(qos: .utility))
            timer.schedule(deadline: .now() + seconds, repeating: seconds, leeway: leeway)
            timer.setEventHandler { [weak self] in self?.autosaveNow() }
            timer.resume()
            state.timer = timer
            state.onError = onError
        }
    }

    /// Stops autosaving; a save already enqueued still runs.
    public func stopAutosaving() {
        nesting.autosave.withLock { state in
            state.timer?.cancel()
            state.timer = nil
        }
    }

    /// Whether the context autosaves at an interval.
    public var isAutosaving: Bool {
        nesting.autosave.withLock { $0.timer != nil }
    }

    /// Autosaves now, on demand: enqueues a save on the context's queue (if it has changes then),
    /// reporting a failure to the handler given to ``startAutosaving(every:onError:)``. Returns at
    /// once; use ``saveChainNow()`` or ``saveChain()`` to wait. Once the context's container was
    /// shut down, it does nothing (and autosaving stops).
    ///
    /// It is a programmer error to call this on a `.confinement` context from another thread.
    public func autosaveNow() {
        let shouldEnqueue = nesting.autosave.withLock { state -> Bool in
            if state.isPending { return false }
            state.isPending = true
            return true
        }
        guard shouldEnqueue else { return }
        let enqueued = self.enqueue { [self] in
            let onError = nesting.autosave.withLock { state in
                state.isPending = false
                return state.onError
            }
            guard hasChanges else { return }
            do { try save() } catch { onError?(error) }
        }
        if !enqueued {
            // The context's container was shut down: nothing more to save.
            stopAutosaving()
            nesting.autosave.withLock { $0.isPending = false }
        }
    }

    /// Saves the context, then its parent, and so on up to the context on the coordinator, each on
    /// its own queue, and waits: on return, the changes made in the chain before the call are in
    /// the store.
    ///
    /// ```swift
    /// try worker.performAndWait { try worker.save() }   // into the main context
    /// try main.saveChainNow()                           // main → root → store
    /// ```
    ///
    /// Call it from any thread (it uses ``performAndWait(_:)`` on each context). A main-queue
    /// context in the chain needs the main queue to be serviced when called from elsewhere.
    ///
    /// - Throws: the first save that fails; the contexts below it have pushed their changes, it
    ///   and the ones above keep theirs.
    public func saveChainNow() throws {
        var next: ManagedObjectContext? = self
        while let context = next {
            try context.performAndWait { try context.save() }
            next = context.parent
        }
    }

    /// Saves the context and each of its ancestors in turn, each on its own queue, without
    /// blocking the caller: ``saveChainNow()`` for `async` code.
    ///
    /// - Throws: as ``saveChainNow()``.
    public func saveChain() async throws {
        var next: ManagedObjectContext? = self
        while let context = next {
            try await context.perform(schedule: .enqueued) { try context.save() }
            next = context.parent
        }
    }
}
