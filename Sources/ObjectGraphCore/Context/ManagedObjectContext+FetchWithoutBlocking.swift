import Foundation

// An asynchronous fetch (AsynchronousFetchRequest) whose store can read without a thread waiting
// for it (PostgreSQL, a fetch it answers in one statement): the context plans the fetch on its
// queue, leaves the queue while the store reads, and comes back to it to register the objects.
// Its queue runs other blocks meanwhile. Anything else fetches synchronously on the queue.

extension ManagedObjectContext {
    /// Starts a fetch of objects whose read does not block the context's queue; `completion`
    /// runs on the queue with the objects (or the error), as ``fetch(_:)-(FetchRequest<T>)``
    /// would return them. Called on the queue.
    ///
    /// - Returns: false when the fetch cannot be read that way (nothing was started): a result
    ///   type other than objects, a fetch in batches, a child context's, a context pinned to a
    ///   query generation, unsaved changes the fetch must see, a container shutting down.
    func fetchWithoutBlocking<T>(_ request: FetchRequest<T>, completion: @escaping (Result<[T], any Error>) -> Void) -> Bool {
        guard request.resultType == .managedObjectResultType, T.self is ManagedObject.Type,
              let coordinator = parentStore as? PersistentStoreCoordinator,
              let entity = try? resolveEntity(request),
              entity.managedObjectClass is T.Type || entity.selfAndDescendants.allSatisfy({ $0.managedObjectClass is T.Type })
        else { return false }
        do { try request.predicate?.validate() } catch { return false }
        freezeConfiguration()
        deliverMailIfNeeded()
        let plan = matchPlan(request, entity: entity, for: .objects)
        let requester = storeRequester
        guard !plan.batched, requester.generation == nil, !request.includesPendingChanges || overlay(for: plan.asked).isEmpty,
              let hold = holdForReturn()
        else { return false }
        // The request and the completion stay on this queue: they go out and come back untouched,
        // and are let go of here (the objects the completion got with them die on the queue).
        let waiting = QueueHandoff((request, completion))
        // On Dispatch's threads: the caller waiting for the completion may be blocking a thread of
        // Swift's cooperative pool.
        Task.detached(executorPreference: DispatchTaskExecutor.shared) {
            let outcome: Result<FetchedRows?, any Error>
            do { outcome = .success(try await coordinator.rowsAsync(plan.asked, leasing: plan.leasing, requester: requester)) } catch {
                outcome = .failure(error)
            }
            let read = QueueHandoff(outcome)
            hold.finish { [self] in
                guard let (request, completion) = waiting.take(), let outcome = read.take() else { return }
                completion(Result { try finishFetchWithoutBlocking(request, plan: plan, outcome: outcome) })
            }
        }
        return true
    }

    /// The objects of a fetch whose rows were read off the queue: as a synchronous fetch registers
    /// them. When the store could not read it that way, or this context now has unsaved changes
    /// the fetch must see, it is fetched again here, synchronously.
    private func finishFetchWithoutBlocking<T>(_ request: FetchRequest<T>, plan: MatchPlan, outcome: Result<FetchedRows?, any Error>) throws -> [T] {
        guard case .success(var fetched?) = outcome, !request.includesPendingChanges || overlay(for: plan.asked).isEmpty else {
            if case .failure(let error) = outcome { throw error }
            return try fetch(request)
        }
        if !aliases.isEmpty { canonicalizeIDs(of: &fetched) }
        return try prefetched(request, try matches(request, plan: plan, fetched: fetched)).map { $0 as! T }
    }
}

/// A value handed from a context's queue to its queue again through other threads: taken, once,
/// back on the queue, which orders the accesses. What it held is released where it is taken.
private final class QueueHandoff<Value>: @unchecked Sendable {
    private var value: Value?
    init(_ value: Value) { self.value = value }

    func take() -> Value? {
        defer { value = nil }
        return value
    }
}
