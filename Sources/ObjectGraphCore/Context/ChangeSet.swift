/// A context's unsaved changes: its inserted, updated and deleted objects, the deletes whose
/// rules are still to be applied, and the changes not reported yet.
///
/// The change set and the objects' states (``ObjectState``) describe the same facts twice, so they
/// must agree. These are the invariants, stated here once and checked by ``violations(among:in:)``
/// (the tests run it after every step of seeded random work):
///
/// 1. `inserted` holds exactly the registered objects that are inserted (``ObjectState/isInserted``,
///    phase `.inserted`, or `.deleted(.inserted)` until delete rules are applied).
/// 2. `updated` holds every registered object in phase `.updated`, and no object in another phase
///    than `.updated` or `.deleted(.updated)`.
/// 3. `deleted` holds exactly the registered objects in ``ObjectState/isInDeletedSet``.
/// 4. Every object marked `deleteRulesPending` is in `pendingDeletes`; every object marked
///    `unreported` is in `unreported` (the lists may hold objects whose mark was cleared since:
///    the mark decides).
/// 5. The three sets hold objects of this context only.
///
/// Every change goes through the methods below; the context's `insertedObjects`,
/// `updatedObjects` and `deletedObjects` are read-only views.
struct ChangeSet {
    private(set) var inserted: Set<ManagedObject> = []
    private(set) var updated: Set<ManagedObject> = []
    private(set) var deleted: Set<ManagedObject> = []
    /// Objects deleted since the last `processPendingChanges()`, whose delete rules are pending.
    private(set) var pendingDeletes: [ManagedObject] = []
    /// Objects changed since the last `objectsDidChangeNotification` (marked `.unreported`).
    private(set) var unreported: [ManagedObject] = []

    var isEmpty: Bool { inserted.isEmpty && updated.isEmpty && deleted.isEmpty }
    /// Every object with a change.
    var all: Set<ManagedObject> { inserted.union(updated).union(deleted) }

    // MARK: - Recording (after the object's state made the transition)

    /// A new object (`ObjectState.insert()`, `reinsert()`).
    mutating func recordInsert(_ object: ManagedObject) {
        inserted.insert(object)
    }

    /// An object that became updated (`change()`, also after a refresh that keeps changes, `becomeExistingRow(changed: true)`).
    mutating func recordUpdate(_ object: ManagedObject) {
        updated.insert(object)
    }

    /// An object the program deleted (`delete()` returned true).
    mutating func recordDelete(_ object: ManagedObject) {
        deleted.insert(object)
        pendingDeletes.append(object)
    }

    /// An object whose row another context's save deleted (`deleteElsewhere()`).
    mutating func recordDeletedElsewhere(_ object: ManagedObject) {
        updated.remove(object)
        pendingDeletes.removeAll { $0 === object }
        deleted.insert(object)
    }

    /// An object changed since the last report (`noteUnreported()` returned true).
    mutating func recordUnreported(_ object: ManagedObject) {
        unreported.append(object)
    }

    // MARK: - Forgetting

    /// An object that is no longer updated (`settleIfNoChangesLeft()`, `turnIntoFault()`, `reinsert()`).
    mutating func forgetUpdate(_ object: ManagedObject) {
        updated.remove(object)
    }

    /// An inserted object that became an existing row's object (`becomeExistingRow(changed:)`).
    mutating func forgetInsert(_ object: ManagedObject) {
        inserted.remove(object)
    }

    /// A deleted object that is deleted no more (refreshed, or rolled back by a conflict).
    mutating func forgetDelete(_ object: ManagedObject) {
        deleted.remove(object)
        pendingDeletes.removeAll { $0 === object }
    }

    /// An object that leaves the context (invalidated, or inserted and deleted before a save).
    mutating func forget(_ object: ManagedObject) {
        inserted.remove(object)
        updated.remove(object)
        forgetDelete(object)
    }

    /// The objects whose delete rules are pending, taken off the list.
    mutating func takePendingDeletes() -> [ManagedObject] {
        defer { pendingDeletes = [] }
        return pendingDeletes
    }

    /// The objects changed since the last report, taken off the list (their marks are the caller's).
    mutating func takeUnreported() -> [ManagedObject] {
        defer { unreported = [] }
        return unreported
    }

    /// After a save: every insert, update and delete is written.
    mutating func removeSaved() {
        inserted = []
        updated = []
        deleted = []
    }

    /// Discards every change (rollback, reset). Returns the objects that were listed as unreported,
    /// whose marks the caller clears.
    mutating func removeAll() -> [ManagedObject] {
        let unreported = self.unreported
        self = ChangeSet()
        return unreported
    }

    // MARK: - Invariants

    /// The invariants above that do not hold, each described; empty when all hold. `registered`
    /// is every object registered in `context`.
    func violations(among registered: some Sequence<ManagedObject>, in context: ManagedObjectContext) -> [String] {
        var found: [String] = []
        for object in inserted where !object.state.isInserted || object.managedObjectContext !== context {
            found.append("\(object.objectID) is in insertedObjects in phase \(object.state.phase)")
        }
        for object in updated where !object.state.isUpdated || object.managedObjectContext !== context {
            found.append("\(object.objectID) is in updatedObjects in phase \(object.state.phase)")
        }
        for object in deleted where !object.state.isInDeletedSet || object.managedObjectContext !== context {
            found.append("\(object.objectID) is in deletedObjects in phase \(object.state.phase)")
        }
        let pending = Set(pendingDeletes.map(ObjectIdentifier.init))
        let listed = Set(unreported.map(ObjectIdentifier.init))
        for object in registered {
            let state = object.state
            if state.isInserted && !inserted.contains(object) { found.append("\(object.objectID) is inserted and not in insertedObjects") }
            if state.phase == .updated && !updated.contains(object) { found.append("\(object.objectID) is updated and not in updatedObjects") }
            if state.isInDeletedSet && !deleted.contains(object) { found.append("\(object.objectID) is deleted and not in deletedObjects") }
            if state.marks.contains(.deleteRulesPending) && !pending.contains(ObjectIdentifier(object)) {
                found.append("\(object.objectID) has pending delete rules and is not in pendingDeletes")
            }
            if state.marks.contains(.unreported) && !listed.contains(ObjectIdentifier(object)) {
                found.append("\(object.objectID) is marked unreported and not listed")
            }
        }
        return found
    }
}

extension ManagedObjectContext {
    /// The objects inserted and not yet saved.
    public var insertedObjects: Set<ManagedObject> { changes.inserted }
    /// The objects with unsaved changes to their values.
    public var updatedObjects: Set<ManagedObject> { changes.updated }
    /// The objects deleted and not yet saved.
    public var deletedObjects: Set<ManagedObject> { changes.deleted }
}
