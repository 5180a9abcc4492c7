import Foundation

/// What a ``BatchUpdateResult`` holds (`NSBatchUpdateRequestResultType`, with its raw values).
public enum BatchUpdateRequestResultType: UInt, Sendable, Hashable {
    /// `true` when the request ran.
    case statusOnly = 0
    /// The IDs of the objects updated.
    case updatedObjectIDs = 1
    /// How many objects were updated.
    case updatedObjectsCount = 2
}

/// Sets attributes of every row a predicate matches, straight in the stores, without objects
/// (`NSBatchUpdateRequest`).
///
/// ```swift
/// let update = BatchUpdateRequest(entityName: "Note")
/// update.predicate = FetchPredicate(format: "rank < 0")
/// update.propertiesToUpdate = ["rank": Int64(0)]
/// update.resultType = .updatedObjectsCount
/// let n = (try context.execute(update) as! BatchUpdateResult).result as! Int
/// ```
///
/// On SQLite it is one `UPDATE` statement. Each updated row gets a new optimistic-locking version,
/// so a context holding one of those objects with unsaved changes gets a merge conflict when it
/// saves, rather than overwriting the update. Values are constants; a key that is not a stored
/// attribute, a value of the wrong type, or nil for a required attribute refuses the request with
/// ``ObjectGraphError/validation``; values that would give two rows the same uniqueness-constrained
/// values refuse it with ``ObjectGraphError/constraintConflict``. See <doc:BatchOperations>.
public final class BatchUpdateRequest: PersistentStoreRequest {
    /// The name of the entity whose rows are updated.
    public let entityName: String
    /// The entity whose rows are updated, when the request was made with one.
    public let entity: EntityDescription?
    /// Which rows to update; nil for all of the entity's.
    public var predicate: FetchPredicate?
    /// The new values, by attribute name (constants; `NSNull()` or a nil optional for nil).
    public var propertiesToUpdate: [String: any Sendable]?
    /// Whether rows of sub-entities are updated too (true by default).
    public var includesSubentities = true
    /// What the result holds; ``BatchUpdateRequestResultType/statusOnly`` by default.
    public var resultType: BatchUpdateRequestResultType = .statusOnly
    /// Whether every context on the coordinator with ``ManagedObjectContext/automaticallyMergesChangesFromParent``
    /// merges the updated objects once the request is written (false by default, as in Core Data).
    public var mergesChangesIntoContexts = false

    /// A request to update rows of the named entity.
    public init(entityName: String) {
        self.entityName = entityName
        self.entity = nil
    }

    /// A request to update rows of `entity`.
    public init(entity: EntityDescription) {
        self.entityName = entity.name
        self.entity = entity
    }

    /// ``PersistentStoreRequestType/batchUpdateRequestType``.
    public override var requestType: PersistentStoreRequestType { .batchUpdateRequestType }

    override func execute(in context: ManagedObjectContext) throws -> PersistentStoreResult {
        let coordinator = context.coordinator
        let entity = try coordinator.batchEntity(named: entityName, entity)
        let values = try BatchValues.updateValues(propertiesToUpdate ?? [:], entity: entity)
        try predicate?.validate()
        let fetch = StoreFetchRequest(entity: entity, includesSubentities: includesSubentities, predicate: predicate, includesPropertyValues: false)
        let stores = try coordinator.batchStores(for: entity, affectedStores: affectedStores)
        // The rows' IDs are read only when someone needs them: a merge, or a result of IDs.
        let listing = mergesChangesIntoContexts || resultType == .updatedObjectIDs
        let done = try coordinator.executeBatch(
            { _ in .update(fetch, values: values, listingRows: listing) }, on: stores, merging: mergesChangesIntoContexts, by: context)
        return BatchUpdateResult(resultType: resultType, ids: done.affected, count: done.affectedCount)
    }
}

/// What a ``BatchUpdateRequest`` did (`NSBatchUpdateResult`).
public final class BatchUpdateResult: PersistentStoreResult {
    /// What ``result`` holds.
    public let resultType: BatchUpdateRequestResultType
    /// `true` (``BatchUpdateRequestResultType/statusOnly``), the number of objects updated as an
    /// `Int` (``BatchUpdateRequestResultType/updatedObjectsCount``), or their IDs as
    /// `[ManagedObjectID]` (``BatchUpdateRequestResultType/updatedObjectIDs``).
    public let result: Any?

    init(resultType: BatchUpdateRequestResultType, ids: [ManagedObjectID], count: Int) {
        self.resultType = resultType
        switch resultType {
        case .statusOnly: self.result = true
        case .updatedObjectsCount: self.result = count
        case .updatedObjectIDs: self.result = ids
        }
    }
}
