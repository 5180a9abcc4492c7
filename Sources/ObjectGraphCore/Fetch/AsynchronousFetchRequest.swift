import Foundation

/// A fetch that runs after ``ManagedObjectContext/execute(_:)`` returns, on the context's queue, and
/// hands its result to a completion block (`NSAsynchronousFetchRequest`).
///
/// ```swift
/// let request = FetchRequest<ManagedObject>(entityName: "Note")
/// let fetch = AsynchronousFetchRequest(fetchRequest: request) { result in
///     // on the context's queue
///     show(result.finalResult ?? [])
/// }
/// context.perform {
///     let running = try! context.execute(fetch) as! AsynchronousFetchResult<ManagedObject>
///     running.progress?.cancel()     // or running.cancel(): the completion then gets no result
/// }
/// ```
///
/// The context must be a queue-based one (`.privateQueue` or `.mainQueue`), as in Core Data: the
/// fetch is a block enqueued on its queue. On a PostgreSQL store, a fetch the server answers in one
/// statement (most do; a context whose parent is its coordinator, objects with their values, not
/// in batches, no unsaved changes it must see) leaves the queue while the server reads: the queue
/// runs other blocks meanwhile, and no thread waits for the reply. The objects are registered back
/// on the queue, then the completion runs. Any other fetch runs on the queue, as on SQLite. From `async` code, fetch object IDs (which are `Sendable`)
/// with `try await context.perform { try context.fetch(idRequest) }` instead: the objects themselves
/// never leave the context's queue, so ObjectGraph has no `async` form that returns them.
public final class AsynchronousFetchRequest<ResultType>: PersistentStoreRequest {
    /// The fetch to run.
    public let fetchRequest: FetchRequest<ResultType>
    /// Called on the context's queue, after `execute` returned, with the result object `execute`
    /// returned: its ``AsynchronousFetchResult/finalResult`` or ``PersistentStoreAsynchronousResult/operationError``
    /// set, or neither when the fetch was cancelled.
    public let completionBlock: ((AsynchronousFetchResult<ResultType>) -> Void)?
    /// How many results are expected, for the progress's total; 0 (the default) when unknown, in
    /// which case the total is the number of results once the fetch ends.
    public var estimatedResultCount: Int = 0

    /// A request that runs `fetchRequest` and calls `completionBlock` with the result.
    public init(fetchRequest: FetchRequest<ResultType>, completionBlock: ((AsynchronousFetchResult<ResultType>) -> Void)? = nil) {
        self.fetchRequest = fetchRequest
        self.completionBlock = completionBlock
    }

    /// ``PersistentStoreRequestType/fetchRequestType``.
    public override var requestType: PersistentStoreRequestType { .fetchRequestType }

    override func execute(in context: ManagedObjectContext) throws -> PersistentStoreResult {
        guard context.scheduler.isQueueBased else {
            throw ObjectGraphError(
                .unsupported,
                "An asynchronous fetch needs a queue-based context; context '\(context.debugName)' is a confinement context")
        }
        let result = AsynchronousFetchResult(request: self, context: context)
        let job = AsynchronousFetchJob(request: self, result: result)
        guard context.enqueue({ job.run() }) else {
            throw ObjectGraphError(.unsupported, "Context '\(context.debugName)' takes no new work: its container was shut down")
        }
        return result
    }
}

/// The fetch of an ``AsynchronousFetchRequest``, handed to the context's queue.
private final class AsynchronousFetchJob<ResultType>: @unchecked Sendable {
    // Made on the context's queue and run there: the request and result are used only on it.
    let request: AsynchronousFetchRequest<ResultType>
    let result: AsynchronousFetchResult<ResultType>

    init(request: AsynchronousFetchRequest<ResultType>, result: AsynchronousFetchResult<ResultType>) {
        self.request = request
        self.result = result
    }

    func run() {
        guard !result.isCancelled else { return complete() }
        // A store that reads without blocking (PostgreSQL) leaves the queue free meanwhile.
        if result.managedObjectContext.fetchWithoutBlocking(request.fetchRequest, completion: { self.finish($0) }) { return }
        finish(Result { try result.managedObjectContext.fetch(request.fetchRequest) })
    }

    private func finish(_ outcome: Result<[ResultType], any Error>) {
        if !result.isCancelled {
            switch outcome {
            case .success(let objects):
                if let progress = result.progress {
                    if progress.totalUnitCount < Int64(objects.count) { progress.totalUnitCount = Int64(objects.count) }
                    progress.completedUnitCount = Int64(objects.count)
                }
                if !result.isCancelled { result.finalResult = objects }
            case .failure(let error):
                result.operationError = error
            }
        }
        complete()
    }

    private func complete() {
        request.completionBlock?(result)
    }
}

/// What an asynchronous request returns at once (`NSPersistentStoreAsynchronousResult`): its
/// progress, a way to cancel it and, once it ended, its error.
public class PersistentStoreAsynchronousResult: PersistentStoreResult {
    /// The context that executed the request.
    public let managedObjectContext: ManagedObjectContext
    /// The error the request ended with, if any.
    public internal(set) var operationError: (any Error)?
    /// The request's progress: its completed count is the number of rows fetched. Cancelling it
    /// cancels the request.
    public let progress: Progress?

    init(context: ManagedObjectContext, progress: Progress) {
        self.managedObjectContext = context
        self.progress = progress
    }

    /// Cancels the request: unless it has already ended, its completion is called with no result
    /// and no error.
    public func cancel() { progress?.cancel() }

    var isCancelled: Bool { progress?.isCancelled ?? false }
}

/// The result of an ``AsynchronousFetchRequest`` (`NSAsynchronousFetchResult`).
public final class AsynchronousFetchResult<ResultType>: PersistentStoreAsynchronousResult {
    /// The request this is the result of.
    public let fetchRequest: AsynchronousFetchRequest<ResultType>
    /// The fetched results, once the fetch ended; nil before, on error, or when cancelled.
    public internal(set) var finalResult: [ResultType]?

    init(request: AsynchronousFetchRequest<ResultType>, context: ManagedObjectContext) {
        self.fetchRequest = request
        let progress = Progress(totalUnitCount: Int64(max(request.estimatedResultCount, 0)))
        super.init(context: context, progress: progress)
    }
}
