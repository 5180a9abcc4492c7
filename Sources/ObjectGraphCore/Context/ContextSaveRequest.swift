import Foundation

// What a context hands its parent store to save, and what it gets back.

/// One object of a context's save, as values any parent store can take.
struct ChangedObject: Sendable {
    var id: ManagedObjectID
    var entity: EntityDescription
    /// Every value (transformables encoded, IDs permanent where known); empty for a delete.
    var values: [Value]
    /// For an update, the attributes and to-one relationships that changed.
    var changedIndices: [Int]
    /// The to-many relationships that changed (all of an inserted object's).
    var relationships: [ChangedRelationship]
    /// For an update or a delete, the object as the context last read it (its version).
    var base: Snapshot?
    /// The store an inserted object is assigned to (`assign(_:to:)`), if any.
    var store: PersistentStore?
}

/// One to-many relationship of a saved object: the destinations added and removed, and the
/// whole order of an ordered one that changed.
struct ChangedRelationship: Sendable {
    var index: Int
    var added: [ManagedObjectID]
    var removed: [ManagedObjectID]
    var order: [ManagedObjectID]?
}

/// A context's save, as sent to its parent store.
struct ContextSaveRequest: Sendable {
    var inserted: [ChangedObject] = []
    var updated: [ChangedObject] = []
    var deleted: [ChangedObject] = []

    var isEmpty: Bool { inserted.isEmpty && updated.isEmpty && deleted.isEmpty }
}

/// What a parent store did with a save.
struct ContextSaveResult: Sendable {
    /// Temporary IDs of inserted objects, mapped to their permanent IDs (from the stores).
    var permanentIDs: [ManagedObjectID: ManagedObjectID] = [:]
    /// The parent store's new view of each inserted and updated object.
    var snapshots: [ManagedObjectID: Snapshot] = [:]
    /// The persistent-history transactions the save recorded, as a token (nil when no store
    /// tracks history, and for a save into a parent context).
    var historyToken: PersistentHistoryToken?
}
