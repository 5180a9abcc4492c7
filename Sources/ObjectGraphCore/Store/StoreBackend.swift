import Foundation

/// The stored state of one object: its concrete entity, its optimistic-lock version, and its
/// values laid out by property index (attributes in canonical form, transformables encoded, to-one
/// relationships as `.objectID` or `.null`; to-many slots are unused and `.null`).
///
/// Snapshots are values: the coordinator's row cache shares them between contexts.
struct Snapshot: Sendable {
    var entity: EntityDescription
    var version: Int64
    var values: [Value]
}

/// One row a store returns for a fetch: the object's ID and, when asked for, its snapshot.
struct StoreRow: Sendable {
    var id: ManagedObjectID
    var snapshot: Snapshot?

    /// The primary keys and entity codes of rows, in order (``StoreBackend/fetchKeys(_:store:)``'s answer).
    static func keys(of rows: [StoreRow]) -> (keys: [Int64], entityCodes: [Int32]) {
        (rows.map { $0.id.primaryKey ?? -1 }, rows.map { Int32($0.id.entity.entityCode) })
    }
}

/// A fetch in store terms.
struct StoreFetchRequest: Sendable {
    var entity: EntityDescription
    var includesSubentities: Bool = true
    var predicate: FetchPredicate?
    var sortDescriptors: [FetchSortDescriptor] = []
    var fetchLimit: Int = 0
    var fetchOffset: Int = 0
    /// Whether rows are wanted (true) or only IDs (false).
    var includesPropertyValues: Bool = true
    /// To-one relationships of `entity` whose destinations' rows a store may read with the rows
    /// (``StoreBackend/fetch(_:store:destinations:)``), for the fetch's prefetching; a store that
    /// does not is asked for them afterwards, as any prefetch.
    var prefetchedToOnes: [RelationshipDescription] = []
}

/// An object written by a save.
struct SavedObject: Sendable {
    var id: ManagedObjectID
    var entity: EntityDescription
    var values: [Value]
    /// For an update, the indices of the properties that changed.
    var changedIndices: [Int]
    /// For an update or a delete, the version the saving context last saw; nil skips the check.
    var expectedVersion: Int64?
}

/// A pair added to or removed from a to-many relationship stored in a join table.
struct JoinChange: Sendable {
    var relationship: RelationshipDescription
    var source: ManagedObjectID
    var destination: ManagedObjectID
}

/// The full order of an ordered to-many relationship after a save.
struct OrderingChange: Sendable {
    var relationship: RelationshipDescription
    var source: ManagedObjectID
    var destinations: [ManagedObjectID]
}

/// Everything one save writes to one store, applied in one transaction.
struct StoreSaveRequest: Sendable {
    var inserted: [SavedObject] = []
    var updated: [SavedObject] = []
    var deleted: [SavedObject] = []
    var joinInserts: [JoinChange] = []
    var joinDeletes: [JoinChange] = []
    var orderings: [OrderingChange] = []

    var isEmpty: Bool {
        inserted.isEmpty && updated.isEmpty && deleted.isEmpty && joinInserts.isEmpty && joinDeletes.isEmpty && orderings.isEmpty
    }
}

/// What a save did.
struct StoreSaveResult: Sendable {
    /// Temporary IDs of inserted objects, mapped to their permanent IDs.
    var permanentIDs: [ManagedObjectID: ManagedObjectID] = [:]
    /// The new snapshot of every inserted and updated object, by permanent ID.
    var snapshots: [ManagedObjectID: Snapshot] = [:]
    /// The persistent-history changes recorded with the save (0 without history tracking).
    var historyChanges = 0
    /// The number of the persistent-history transaction recorded with the save (nil without history tracking).
    var historyTransactionNumber: Int64?
}

/// What every kind of store does. A backend knows nothing of contexts: it reads and writes
/// snapshots, and runs fetches, in one transaction each.
protocol StoreBackend: AnyObject, Sendable {
    /// The store's UUID, kept in the store.
    var identifier: String { get }
    /// The store's metadata.
    var metadata: [String: any Sendable] { get }
    /// How many SQL statements the store has run (0 for stores that run none).
    var statementCount: Int { get }

    /// Runs a fetch; the rows come back in order, with snapshots when asked for.
    func fetch(_ request: StoreFetchRequest, store: PersistentStore) throws -> [StoreRow]
    /// Runs a fetch as ``fetch(_:store:)`` does and adds to `destinations` the rows (with their
    /// snapshots) of the destinations of `request.prefetchedToOnes` that the rows name, each once,
    /// when the store reads them in the same statement; stores that do not leave it empty.
    func fetch(_ request: StoreFetchRequest, store: PersistentStore, destinations: inout [StoreRow]) throws -> [StoreRow]
    /// Runs a fetch as ``fetch(_:store:destinations:)`` does, suspending the caller while the
    /// store reads, with no thread waiting; nil when the store cannot read this fetch that way
    /// (the caller then fetches synchronously).
    func fetchAsync(_ request: StoreFetchRequest, store: PersistentStore) async throws -> (rows: [StoreRow], destinations: [StoreRow])?
    /// The primary keys and entity codes of the rows a fetch returns, in order (no values).
    func fetchKeys(_ request: StoreFetchRequest, store: PersistentStore) throws -> (keys: [Int64], entityCodes: [Int32])
    /// Counts the rows a fetch would return.
    func count(_ request: StoreFetchRequest, store: PersistentStore) throws -> Int
    /// Reads the snapshots of objects by ID (all of one store); missing rows are absent.
    func snapshots(for ids: [ManagedObjectID], store: PersistentStore) throws -> [ManagedObjectID: Snapshot]
    /// Reads the destinations of a to-many relationship for several sources at once.
    func destinations(of relationship: RelationshipDescription, for sources: [ManagedObjectID], store: PersistentStore) throws
        -> [ManagedObjectID: [ManagedObjectID]]
    /// Reserves `count` primary keys for the entity's table; returns the first.
    func allocatePrimaryKeys(for entity: EntityDescription, count: Int) throws -> Int64
    /// Applies a save in one transaction: all of it or, when anything fails, none of it.
    ///
    /// - Throws: `.mergeConflict` (with the conflicts) when a version check fails, `.constraintConflict`
    ///   when a uniqueness constraint is violated, I/O errors.
    func save(_ request: StoreSaveRequest, store: PersistentStore) throws -> StoreSaveResult
    /// Runs a batch insert, update or delete (validated by the coordinator) in one transaction:
    /// all of it or, when anything fails, none of it. Updated rows get a new version; a delete
    /// follows the delete rules (``BatchDeleteClosure``) and clears the to-one relationships of
    /// surviving rows that pointed at deleted ones.
    ///
    /// - Throws: ``ObjectGraphError/validation`` when a deny rule refuses a delete,
    ///   `.constraintConflict` when a uniqueness constraint would be violated, I/O errors.
    func executeBatch(_ request: StoreBatchRequest, store: PersistentStore) throws -> StoreBatchResult
    /// Pins the store's current version for a query generation: while the generation is reading
    /// (``QueryGeneration/current``), the store's reads see that version.
    func pinVersion(store: PersistentStore) throws -> any PinnedStoreVersion
    /// Closes the store.
    func close() throws
    /// The coordinator that added the store went away without removing it: nothing reads through
    /// the store any more. A store whose rows hold object IDs (which hold the store) drops them
    /// here, or the store, its rows and its model would keep each other alive.
    func coordinatorWentAway()
}

extension StoreBackend {
    func coordinatorWentAway() {}

    func fetch(_ request: StoreFetchRequest, store: PersistentStore, destinations: inout [StoreRow]) throws -> [StoreRow] {
        try fetch(request, store: store)
    }

    func fetchAsync(_ request: StoreFetchRequest, store: PersistentStore) async throws -> (rows: [StoreRow], destinations: [StoreRow])? {
        nil
    }

    func fetchKeys(_ request: StoreFetchRequest, store: PersistentStore) throws -> (keys: [Int64], entityCodes: [Int32]) {
        var request = request
        request.includesPropertyValues = false
        return StoreRow.keys(of: try fetch(request, store: store))
    }
}
