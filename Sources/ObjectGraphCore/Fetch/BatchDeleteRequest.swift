import Foundation

/// What a ``BatchDeleteResult`` holds (`NSBatchDeleteRequestResultType`, with its raw values).
public enum BatchDeleteRequestResultType: UInt, Sendable, Hashable {
    /// `true` when the request ran.
    case statusOnly = 0
    /// The IDs of the objects deleted.
    case objectIDs = 1
    /// How many objects were deleted.
    case count = 2
}

/// Deletes the rows a fetch request matches, or the objects named, straight in the stores, without
/// objects (`NSBatchDeleteRequest`).
///
/// ```swift
/// let request = FetchRequest<ManagedObject>(entityName: "Note")
/// request.predicate = FetchPredicate(format: "rank < 0")
/// let delete = BatchDeleteRequest(fetchRequest: request)
/// delete.resultType = .objectIDs
/// let ids = (try context.execute(delete) as! BatchDeleteResult).result as! [ManagedObjectID]
/// ManagedObjectContext.mergeChanges(
///     fromRemoteContextSave: [ManagedObjectContext.NotificationKey.deletedObjects.rawValue: ids], into: [main])
/// ```
///
/// Delete rules are honoured, as a save honours them: a cascading relationship deletes its
/// destinations (recursively), and surviving rows whose to-one relationship pointed at a deleted
/// row have it cleared (nullify; no action is treated the same, so no row points at a row that is
/// gone) and get a new version. A deny relationship that still has a destination refuses the
/// whole request with ``ObjectGraphError/validation`` naming the objects; nothing is deleted. The
/// fetch request's predicate, `includesSubentities`, sort descriptors, `fetchLimit` and
/// `fetchOffset` choose the rows. See <doc:BatchOperations>.
public final class BatchDeleteRequest: PersistentStoreRequest {
    /// The rows to delete (for a request made with object IDs: one whose entity is the first ID's).
    public let fetchRequest: FetchRequest<ManagedObject>
    /// The objects to delete, for a request made with ``init(objectIDs:)``.
    let objectIDs: [ManagedObjectID]?
    /// What the result holds; ``BatchDeleteRequestResultType/statusOnly`` by default.
    public var resultType: BatchDeleteRequestResultType = .statusOnly
    /// Whether every context on the coordinator with ``ManagedObjectContext/automaticallyMergesChangesFromParent``
    /// merges the deletions (and the relationships they cleared) once the request is written (false by
    /// default, as in Core Data).
    public var mergesChangesIntoContexts = false
    /// Whether the executing context merges the deletions itself, at once (`delete(model:where:)`),
    /// rather than hearing them with the other contexts.
    var mergesIntoExecutingContext = false

    /// A request to delete the objects a fetch request matches.
    public init(fetchRequest: FetchRequest<ManagedObject>) {
        self.fetchRequest = fetchRequest
        self.objectIDs = nil
    }

    /// A request to delete the objects a fetch request of any result type matches
    /// (`Note.fetchRequest()`, a `FetchRequest<ManagedObjectID>`).
    public init<R>(fetchRequest: FetchRequest<R>) {
        self.fetchRequest = fetchRequest.forObjects
        self.objectIDs = nil
    }

    /// A request to delete the objects with these (permanent) IDs; IDs whose rows are gone are
    /// skipped.
    public init(objectIDs: [ManagedObjectID]) {
        let request = FetchRequest<ManagedObject>()
        request.entity = objectIDs.first?.entity
        request.entityName = objectIDs.first?.entityName
        self.fetchRequest = request
        self.objectIDs = objectIDs
    }

    /// ``PersistentStoreRequestType/batchDeleteRequestType``.
    public override var requestType: PersistentStoreRequestType { .batchDeleteRequestType }

    override func execute(in context: ManagedObjectContext) throws -> PersistentStoreResult {
        let coordinator = context.coordinator
        let done: StoreBatchResult
        if let objectIDs {
            if let temporary = objectIDs.first(where: \.isTemporaryID) {
                throw ObjectGraphError(
                    .temporaryObjectID, "Batch delete of \(temporary): the ID is temporary (the object was never saved); nothing was deleted",
                    entityName: temporary.entityName, objectID: temporary)
            }
            var byStore: [ObjectIdentifier: [ManagedObjectID]] = [:]
            var stores: [PersistentStore] = []
            for id in objectIDs {
                guard let local = coordinator.localID(id), let store = local.persistentStore else { continue }
                if byStore[ObjectIdentifier(store)] == nil { stores.append(store) }
                byStore[ObjectIdentifier(store), default: []].append(local)
            }
            if let affectedStores { stores = stores.filter { store in affectedStores.contains { $0 === store } } }
            done = try coordinator.executeBatch(
                { store in byStore[ObjectIdentifier(store)].map(StoreBatchRequest.deleteObjects) }, on: stores, merging: mergesChangesIntoContexts,
                except: mergesIntoExecutingContext ? context : nil, by: context)
        } else {
            let entity = try coordinator.batchEntity(named: fetchRequest.entityName, fetchRequest.entity)
            try fetchRequest.predicate?.validate()
            let fetch = StoreFetchRequest(
                entity: entity, includesSubentities: fetchRequest.includesSubentities, predicate: fetchRequest.predicate,
                sortDescriptors: fetchRequest.sortDescriptors ?? [], fetchLimit: fetchRequest.fetchLimit, fetchOffset: fetchRequest.fetchOffset,
                includesPropertyValues: false)
            let stores = try coordinator.batchStores(for: entity, affectedStores: affectedStores)
            // The rows' IDs are read only when someone needs them: a merge, or a result of IDs.
            let listing = mergesChangesIntoContexts || mergesIntoExecutingContext || resultType == .objectIDs
            done = try coordinator.executeBatch(
                { _ in .delete(fetch, listingRows: listing) }, on: stores, merging: mergesChangesIntoContexts,
                except: mergesIntoExecutingContext ? context : nil, by: context)
        }
        if mergesIntoExecutingContext && !done.deleted.isEmpty {
            context.mergeChanges(ManagedObjectContext.SaveChanges(updatedObjectIDs: Set(done.updated), deletedObjectIDs: Set(done.deleted)))
        }
        return BatchDeleteResult(resultType: resultType, ids: done.deleted, count: done.deleted.count + done.unlistedCount)
    }
}

/// What a ``BatchDeleteRequest`` did (`NSBatchDeleteResult`).
public final class BatchDeleteResult: PersistentStoreResult {
    /// What ``result`` holds.
    public let resultType: BatchDeleteRequestResultType
    /// `true` (``BatchDeleteRequestResultType/statusOnly``), the number of objects deleted as an
    /// `Int` (``BatchDeleteRequestResultType/count``), or their IDs as `[ManagedObjectID]`
    /// (``BatchDeleteRequestResultType/objectIDs``): those the request matched or named, then those
    /// a cascade reached, so that merging them updates a context completely.
    public let result: Any?

    init(resultType: BatchDeleteRequestResultType, ids: [ManagedObjectID], count: Int) {
        self.resultType = resultType
        switch resultType {
        case .statusOnly: self.result = true
        case .count: self.result = count
        case .objectIDs: self.result = ids
        }
    }
}
