import Foundation

// A context pinned to a query generation reads one version of the stores: its fetches, counts and
// faults go to the generation's pinned versions (an SQLite reader in its read transaction, a copy
// of an in-memory store's rows), never to the row cache, which holds the latest rows. Saves are
// not pinned: they write the latest version and resolve conflicts against it, then the context
// moves to the generation after its save.

extension ManagedObjectContext {
    /// The query generation the context reads (`NSManagedObjectContext.queryGenerationToken`): nil
    /// when it is not pinned and reads the stores' latest commits (the default).
    public var queryGenerationToken: QueryGenerationToken? {
        assertOnQueue("queryGenerationToken")
        return queryGeneration.pinned?.token
    }

    /// Pins the context to a query generation, or unpins it (`setQueryGenerationFrom(_:)`).
    ///
    /// ```swift
    /// try context.setQueryGenerationFrom(.current)   // reads see the stores as they are now
    /// …                                             // other contexts and processes commit
    /// try context.fetch(request)                    // still the pinned version
    /// try context.setQueryGenerationFrom(nil)       // back to the latest
    /// ```
    ///
    /// - ``QueryGenerationToken/current``: the stores as they are now. The context holds the
    ///   generation until it moves on: its `save()`, a merge (`mergeChanges`), `refresh(_:mergeChanges:)`,
    ///   `refreshAllObjects()` and `reset()` move it to the generation of that moment.
    /// - Another context's ``queryGenerationToken``: the same generation, while that one is still pinned.
    /// - nil: unpinned.
    ///
    /// Objects already registered keep the values they have; faults and fetches read the generation.
    /// A pinned SQLite store holds a reader connection in its read transaction, so the write-ahead
    /// log cannot be checkpointed past it: see <doc:HistoryAndMultipleProcesses>.
    ///
    /// It is a programmer error to pin a child context: a child reads its parent, which is pinned instead.
    ///
    /// - Throws: ``ObjectGraphError/unsupported`` when the token's generation is no longer pinned
    ///   by any context of this coordinator; what a store throws opening its reader.
    public func setQueryGenerationFrom(_ token: QueryGenerationToken?) throws {
        assertOnQueue("setQueryGenerationFrom(_:)")
        freezeConfiguration()
        guard let token else {
            queryGeneration.pinned = nil
            return
        }
        queryGeneration.pinned = try parentStore.pinnedGeneration(for: token, requester: storeRequester)
    }

    /// The generation store reads of this context see now: nil when it is not pinned, or while it saves.
    var readingGeneration: QueryGeneration? {
        queryGeneration.isSuspended ? nil : queryGeneration.pinned
    }

    /// Moves a pinned context to the generation of this moment (after a save, merge, refresh or reset).
    /// A generation that cannot be opened leaves the context on the one it has.
    func advanceQueryGeneration() {
        guard queryGeneration.pinned != nil, let coordinator = persistentStoreCoordinator else { return }
        if let next = try? coordinator.pinQueryGeneration() { queryGeneration.pinned = next }
    }

    /// Runs a save's store work unpinned: conflicts are found and resolved against the latest version.
    func unpinnedForSave<T>(_ body: () throws -> T) rethrows -> T {
        guard queryGeneration.pinned != nil, !queryGeneration.isSuspended else { return try body() }
        queryGeneration.isSuspended = true
        defer { queryGeneration.isSuspended = false }
        return try body()
    }
}

/// A context's query generation: the one it is pinned to, and whether a save suspends it.
/// Used on the context's queue only.
struct ContextQueryGeneration {
    var pinned: QueryGeneration?
    var isSuspended = false
}

extension PersistentStoreCoordinator {
    /// Pins the current version of every store as a new generation.
    func pinQueryGeneration() throws -> QueryGeneration {
        let generation = try QueryGeneration(coordinator: self)
        queryGenerations.withLock { $0.add(generation) }
        return generation
    }

    /// The live generation a token names, if a context still holds it.
    func queryGeneration(for token: QueryGenerationToken) -> QueryGeneration? {
        queryGenerations.withLock { $0.generation(for: token) }
    }
}
