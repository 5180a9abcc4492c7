/// A context's unsaved changes.
struct ChangeSet {
    var inserted: Set<ManagedObject> = []
    var updated: Set<ManagedObject> = []
    var deleted: Set<ManagedObject> = []
    /// Objects deleted since the last `processPendingChanges()`, whose delete rules are pending.
    var pendingDeletes: [ManagedObject] = []
    /// Objects changed since the last `objectsDidChangeNotification` (flagged `.unreported`).
    var unreported: [ManagedObject] = []
}

extension ManagedObjectContext {
    /// The objects inserted and not yet saved.
    public internal(set) var insertedObjects: Set<ManagedObject> {
        get { changes.inserted }
        _modify { yield &changes.inserted }
        set { changes.inserted = newValue }
    }
    /// The objects with unsaved changes to their values.
    public internal(set) var updatedObjects: Set<ManagedObject> {
        get { changes.updated }
        _modify { yield &changes.updated }
        set { changes.updated = newValue }
    }
    /// The objects deleted and not yet saved.
    public internal(set) var deletedObjects: Set<ManagedObject> {
        get { changes.deleted }
        _modify { yield &changes.deleted }
        set { changes.deleted = newValue }
    }
    var pendingDeletes: [ManagedObject] {
        get { changes.pendingDeletes }
        _modify { yield &changes.pendingDeletes }
        set { changes.pendingDeletes = newValue }
    }
    var unreported: [ManagedObject] {
        get { changes.unreported }
        _modify { yield &changes.unreported }
        set { changes.unreported = newValue }
    }
}
