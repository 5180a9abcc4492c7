import Foundation

/// The kind of a ``PersistentStoreRequest`` (`NSPersistentStoreRequestType`, with its raw values).
public enum PersistentStoreRequestType: UInt, Sendable, Hashable {
    /// A fetch (``AsynchronousFetchRequest``).
    case fetchRequestType = 1
    /// A save.
    case saveRequestType = 2
    /// A ``BatchInsertRequest``.
    case batchInsertRequestType = 5
    /// A ``BatchUpdateRequest``.
    case batchUpdateRequestType = 6
    /// A ``BatchDeleteRequest``.
    case batchDeleteRequestType = 7
    /// A ``PersistentHistoryChangeRequest``.
    case persistentHistoryChangeRequestType = 8
}

/// The base class of the requests a context passes to its stores with
/// ``ManagedObjectContext/execute(_:)`` (`NSPersistentStoreRequest`).
///
/// ```swift
/// let delete = BatchDeleteRequest(fetchRequest: FetchRequest<ManagedObject>(entityName: "Note"))
/// delete.affectedStores = [archive]          // nil: every store whose configuration has the entity
/// try context.execute(delete)
/// ```
///
/// Requests are not `Sendable`, like ``FetchRequest``: build, execute and read them on the
/// context's queue.
public class PersistentStoreRequest {
    /// The stores the request runs against; nil (the default) for every store of the coordinator
    /// whose configuration includes the request's entity.
    public var affectedStores: [PersistentStore]?

    /// The kind of request.
    public var requestType: PersistentStoreRequestType { .fetchRequestType }

    init() {}

    /// Runs the request for `context` (on its queue). Each kind of request overrides it.
    func execute(in context: ManagedObjectContext) throws -> PersistentStoreResult {
        throw ObjectGraphError(.unsupported, "\(type(of: self)) cannot be executed by a context")
    }
}

// Built, executed and read on one context's queue, like `FetchRequest`.
@available(*, unavailable)
extension PersistentStoreRequest: Sendable {}

/// The base class of what ``ManagedObjectContext/execute(_:)`` returns (`NSPersistentStoreResult`):
/// cast it to the request's result class (``BatchInsertResult``, ``BatchUpdateResult``,
/// ``BatchDeleteResult``, ``AsynchronousFetchResult``).
public class PersistentStoreResult {
    init() {}
}

// Read on the queue of the context that executed the request.
@available(*, unavailable)
extension PersistentStoreResult: Sendable {}
