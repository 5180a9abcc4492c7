import Foundation

extension PersistentContainer {
    /// Makes the program wait, when it exits (returns from `main` or calls `exit()`), for the work
    /// in flight on the container's contexts, at most `timeout`, then close the stores.
    ///
    /// ```swift
    /// let container = PersistentContainer(name: "Importer", managedObjectModel: model)
    /// try container.loadPersistentStores()
    /// container.waitsForSavesAtExit(timeout: .seconds(5))
    /// for batch in batches {
    ///     container.performBackgroundTask { context in import(batch, into: context); try? context.save() }
    /// }
    /// // returning from main now waits for the imports above
    /// ```
    ///
    /// It runs a ``shutdown(timeout:)-1wk1w`` from an `atexit` handler. When the time limit
    /// passes with work still running, it writes what was abandoned to standard error and the program
    /// exits; an SQLite save cut short is rolled back whole. The guard keeps the container alive
    /// until the program exits or ``stopsWaitingForSavesAtExit()`` is called. Calling it again
    /// changes the time limit.
    ///
    /// `exit()` called from a block running on one of the container's background contexts cannot
    /// wait for the container's work (it would wait for that block): the guard then writes what it
    /// abandons to standard error and lets the program exit. `_exit()`, a signal or a crash ends the
    /// process without running the guard; what a save acknowledged is in the store all the same.
    public func waitsForSavesAtExit(timeout: Duration = .seconds(5)) {
        ExitGuard.register(self, timeout: timeout)
    }

    /// Removes the guard installed by ``waitsForSavesAtExit(timeout:)``.
    public func stopsWaitingForSavesAtExit() {
        ExitGuard.unregister(self)
    }

    /// The guard's work for this container, on the exiting thread.
    func drainAtExit(timeout: Duration) {
        if let context = backgroundContextHeldByCaller() {
            let (blocks, saves) = outstandingWork
            ExitGuard.report("""
                exit() was called from a block running on context '\(context.debugName)' of container '\(name)': \
                the exit guard cannot wait for the container's work from there (it would wait for that block); \
                \(blocks) block(s) and \(saves) save(s) in flight are abandoned. Exit from outside the container's contexts.
                """)
            return
        }
        do {
            try drainAndClose(timeout: timeout, caller: .current(viewContext: existingViewContext))
        } catch {
            ExitGuard.report("the exit guard of container '\(name)': \(error)")
        }
    }
}

/// The containers to drain at exit, and the one `atexit` handler that drains them.
enum ExitGuard {
    private static let containers = Protected<[(container: PersistentContainer, timeout: Duration)]>([])

    /// Registers the `atexit` handler, once.
    private static let installation: Void = {
        atexit { ExitGuard.drainAll() }
    }()

    static func register(_ container: PersistentContainer, timeout: Duration) {
        _ = installation
        containers.withLock { list in
            if let index = list.firstIndex(where: { $0.container === container }) {
                list[index].timeout = timeout
            } else {
                list.append((container, timeout))
            }
        }
    }

    static func unregister(_ container: PersistentContainer) {
        containers.withLock { $0.removeAll { $0.container === container } }
    }

    /// Drains every registered container, in the order they were registered.
    static func drainAll() {
        let list = containers.withLock { list in
            defer { list = [] }
            return list
        }
        for (container, timeout) in list { container.drainAtExit(timeout: timeout) }
    }

    static func report(_ message: String) {
        FileHandle.standardError.write(Data("ObjectGraph: \(message)\n".utf8))
    }
}
