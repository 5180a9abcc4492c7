/// An object's lifecycle in its context, as one value: its phase, and the few marks that other
/// owners (the row cache's lease, the change set's pending work, change reporting) keep on it.
///
/// Only the transitions below change it, and each returns what its caller must do next (swift-nio's
/// state-machine shape): release a row-cache reference, record the object in a change set, apply
/// delete rules. The context performs those effects; the state never reaches outside itself.
///
/// ```
///  detached ──insert──▶ inserted ──didSave──▶ unchanged ◀──materialize── fault ◀── object(with:)
///                          │                   │  ▲  ▲                    ▲
///                        delete          change│  │  └──didSave/rollback──┤ turnIntoFault
///                          ▼                   ▼  │                       │
///                 deleted(.inserted)          updated ─────────────────────┘
///                                               │
///                    unchanged/updated ──delete─▶ deleted(.unchanged/.updated) ──didSave──▶ invalid
/// ```
struct ObjectState: Equatable {
    /// Where an object is in its lifecycle.
    enum Phase: Equatable {
        /// Created with no context and not inserted yet.
        case detached
        /// Registered; its values have not been read from the parent store.
        case fault
        /// Its values are read (or saved) and nothing has changed since.
        case unchanged
        /// A saved object with unsaved changes.
        case updated
        /// New, never saved.
        case inserted
        /// Deleted, and the delete not saved yet; the payload says what it was before.
        case deleted(Deletion)
        /// Gone: its delete was saved, its row deleted elsewhere, or it was replaced.
        case invalid
    }

    /// What a deleted object was before it was deleted, which decides what a save and a rollback do.
    enum Deletion: Equatable {
        /// A saved object without changes: the save deletes its row.
        case unchanged
        /// A saved object with changes: the save deletes its row; a rollback restores it.
        case updated
        /// An object never saved: it leaves the context when delete rules are applied.
        case inserted
        /// Its row was deleted by another context's save (merged): nothing to write.
        case elsewhere
        /// A fault whose row was missing (`shouldDeleteInaccessibleFaults`): deleted in name only,
        /// in no change set.
        case inaccessible
    }

    /// Marks kept on an object by owners other than its lifecycle.
    struct Marks: OptionSet {
        let rawValue: UInt8
        /// The object holds a reference on its row in the coordinator's row cache (a claimed lease),
        /// given back when it leaves that row or dies.
        static let holdsRowCache = Marks(rawValue: 1 << 0)
        /// Deleted; its delete rules wait for the next `processPendingChanges()` (listed in the
        /// change set's `pendingDeletes`).
        static let deleteRulesPending = Marks(rawValue: 1 << 1)
        /// Changed since the last `objectsDidChangeNotification` (listed in the change set's `unreported`).
        static let unreported = Marks(rawValue: 1 << 2)
        /// Its insert was reported by an `objectsDidChangeNotification`.
        static let insertReported = Marks(rawValue: 1 << 3)
        /// An inserted object that `refresh(_:mergeChanges: false)` turned into a fault, as Core
        /// Data does: it has no row to read, so it keeps its values, and reads as a fault until
        /// it is used again.
        static let faultedInsert = Marks(rawValue: 1 << 4)
        /// The object a batch insert's handler fills, in no context: setting a relationship on it
        /// is recorded for the row's check to refuse, and touches no other object.
        static let batchRow = Marks(rawValue: 1 << 5)
    }

    private(set) var phase: Phase = .detached
    private(set) var marks: Marks = []

    // MARK: - Questions

    /// Its values are not loaded.
    var isFault: Bool { phase == .fault }
    /// What `ManagedObject.isFault` answers: a fault, or an inserted object turned into a fault.
    var readsAsFault: Bool { phase == .fault || marks.contains(.faultedInsert) }
    /// An inserted object that `refresh(_:mergeChanges: false)` made a fault in name.
    var isFaultedInsert: Bool { marks.contains(.faultedInsert) }
    var isInserted: Bool { phase == .inserted || phase == .deleted(.inserted) }
    var isUpdated: Bool { phase == .updated || phase == .deleted(.updated) }
    var isDeleted: Bool { if case .deleted = phase { true } else { false } }
    var hasChanges: Bool {
        switch phase {
        case .inserted, .updated, .deleted: true
        case .detached, .fault, .unchanged, .invalid: false
        }
    }
    /// Deleted by another context's save and merged here.
    var isDeletedElsewhere: Bool { phase == .deleted(.elsewhere) }
    /// Whether the object belongs in its context's `deletedObjects`.
    var isInDeletedSet: Bool { isDeleted && phase != .deleted(.inaccessible) }
    var holdsRowCache: Bool { marks.contains(.holdsRowCache) }
    var isInsertReported: Bool { marks.contains(.insertReported) }

    // MARK: - Transitions

    /// A new object enters a context (or a parent's inserted object is pushed into a child's view).
    mutating func insert() {
        phase = .inserted
        marks = []
    }

    /// The object a batch insert's handler fills starts a row: new, so that every value set counts
    /// as given, even one equal to the default.
    mutating func startBatchRow() {
        phase = .inserted
        marks = [.batchRow]
    }

    var isBatchRow: Bool { marks.contains(.batchRow) }

    /// The object becomes (again) a fault. Returns whether it held a row-cache reference, which
    /// the caller gives back.
    mutating func turnIntoFault() -> Bool {
        let heldRowCache = holdsRowCache
        phase = .fault
        marks = []
        return heldRowCache
    }

    /// What ``materialize(leased:)`` asks of its caller.
    enum MaterializeAction: Equatable {
        /// Not a fault: its values stand. Give back the reference just leased, if any.
        case keepValues(releaseLease: Bool)
        /// Fill the values from the snapshot; with `releaseDuplicate`, the object already held a
        /// reference on the row, so the one just leased is given back.
        case fill(releaseDuplicate: Bool)
    }

    /// A fault's values arrive, with or without a reference on the row (`leased`).
    mutating func materialize(leased: Bool) -> MaterializeAction {
        guard phase == .fault else { return .keepValues(releaseLease: leased) }
        phase = .unchanged
        let duplicate = leased && marks.contains(.holdsRowCache)
        if leased { marks.insert(.holdsRowCache) }
        return .fill(releaseDuplicate: duplicate)
    }

    /// A fetch hands a fault a reference on its row without reading its values. False when it
    /// has one already (the caller then materializes, which gives the duplicate back).
    mutating func holdRowCacheAsFault() -> Bool {
        guard phase == .fault, !marks.contains(.holdsRowCache) else { return false }
        marks.insert(.holdsRowCache)
        return true
    }

    /// The object gives its row-cache reference back (it leaves its context, or the row). Returns
    /// whether it had one.
    mutating func giveUpRowCache() -> Bool {
        marks.remove(.holdsRowCache) != nil
    }

    /// A property changed. Returns true when the object just became updated (the caller lists it
    /// in the change set's `updated`).
    mutating func change() -> Bool {
        guard phase == .unchanged else {
            precondition(phase != .fault, "ObjectGraph: a fault changed without being fired")
            return false
        }
        phase = .updated
        return true
    }

    /// The program deletes the object. Returns false when it was deleted already; otherwise the
    /// caller lists it in `deletedObjects` and `pendingDeletes`.
    ///
    /// It is a programmer error to delete a fault that was not fired, or an invalid object.
    mutating func delete() -> Bool {
        let deletion: Deletion
        switch phase {
        case .deleted: return false
        case .inserted: deletion = .inserted
        case .updated: deletion = .updated
        case .unchanged: deletion = .unchanged
        case .fault, .detached, .invalid:
            preconditionFailure("ObjectGraph: cannot delete an object in phase \(phase)")
        }
        phase = .deleted(deletion)
        marks.insert(.deleteRulesPending)
        return true
    }

    /// `processPendingChanges()` takes the object's pending delete rules. True when they are to be
    /// applied now (the object was deleted and not undeleted since).
    mutating func takeDeleteRules() -> Bool {
        marks.remove(.deleteRulesPending) != nil
    }

    /// The object's row was missing when its fault fired, and the context deletes such faults
    /// (`shouldDeleteInaccessibleFaults`).
    mutating func markInaccessible() {
        phase = .deleted(.inaccessible)
    }

    /// What ``deleteElsewhere()`` asks of its caller.
    struct DeletedElsewhereAction: Equatable {
        /// It was a fault: give it default values.
        var fillDefaults: Bool
        /// Give back its row-cache reference.
        var releaseRowCache: Bool
        /// Take it out of `updatedObjects` and `pendingDeletes`; list it in `deletedObjects`.
        var recordDelete: Bool
    }

    /// Another context's save deleted the object's row, and the save was merged here. Returns nil
    /// when nothing is to be done (already known, or inserted here: see ``isInserted``).
    mutating func deleteElsewhere() -> DeletedElsewhereAction? {
        switch phase {
        case .deleted(.elsewhere), .invalid, .detached, .inserted, .deleted(.inserted):
            return nil
        case .fault, .unchanged, .updated, .deleted:
            let action = DeletedElsewhereAction(fillDefaults: phase == .fault, releaseRowCache: holdsRowCache, recordDelete: true)
            phase = .deleted(.elsewhere)
            marks.remove([.holdsRowCache, .deleteRulesPending])
            return action
        }
    }

    /// The context's save wrote the object (inserted or updated): it is unchanged now.
    mutating func didSave() {
        if phase == .inserted || phase == .updated { phase = .unchanged }
        marks.remove(.faultedInsert)
    }

    /// `refresh(_:mergeChanges: false)` on an inserted object: a fault in name, its values kept.
    mutating func faultInserted() {
        guard phase == .inserted else { return }
        marks.insert(.faultedInsert)
    }

    /// An inserted object turned into a fault is used: it is no fault any more. Returns whether it was one.
    mutating func useFaultedInsert() -> Bool {
        marks.remove(.faultedInsert) != nil
    }

    /// `reset()` forgets the object: a fault with no context from now on, whatever it was. Returns
    /// whether it held a row-cache reference, which the caller gives back.
    mutating func forgetAtReset() -> Bool {
        let heldRowCache = holdsRowCache
        phase = .fault
        marks = []
        return heldRowCache
    }

    /// The context's save deleted the object's row (or merged its delete): it is invalid now.
    mutating func didSaveDelete() {
        phase = .invalid
        marks.remove(.deleteRulesPending)
    }

    /// The object leaves its context for good (deleted elsewhere before this context saved, replaced
    /// by another object, or refused by the store). The caller has given back its row-cache reference.
    mutating func invalidate() {
        phase = .invalid
        marks = []
    }

    /// `rollback()` or a conflict resolved by `.rollback` discards the object's changes: an updated
    /// or deleted saved object is unchanged again (its values are its snapshot's).
    mutating func discardChanges() {
        switch phase {
        case .updated, .deleted(.updated), .deleted(.unchanged): phase = .unchanged
        default: break
        }
        marks.remove(.deleteRulesPending)
    }

    /// A merge or a conflict resolution took the parent store's values for every property the
    /// object had changed. Returns true when it left `.updated` (the caller takes it out of
    /// `updatedObjects`).
    mutating func settleIfNoChangesLeft() -> Bool {
        guard phase == .updated else { return false }
        phase = .unchanged
        return true
    }

    /// A save conflict found the object's row deleted in the store, and the merge policy keeps the
    /// context's version: the object is written again, as an insert under its ID.
    mutating func reinsert() {
        phase = .inserted
    }

    /// A uniqueness conflict made an inserted object the existing row's object (an upsert).
    /// `changed` says whether the object keeps changes to write.
    mutating func becomeExistingRow(changed: Bool) {
        phase = changed ? .updated : .unchanged
    }

    /// Undo puts back the phase an object had before a delete, or before it left its context: the
    /// phase is `saved`'s; pending delete rules are dropped (undo replays their effects one by one).
    mutating func restorePhase(of saved: ObjectState) {
        phase = saved.phase
        marks.remove(.deleteRulesPending)
    }

    /// Redo deletes an object again: its delete rules are replayed one by one, not applied anew.
    mutating func deleteForRedo() -> Bool {
        guard delete() else { return false }
        marks.remove(.deleteRulesPending)
        return true
    }

    // MARK: - Reporting

    /// The object changed since the last report. True when it was not listed yet (the caller lists
    /// it in the change set's `unreported`).
    mutating func noteUnreported() -> Bool {
        marks.insert(.unreported).inserted
    }

    /// The object was taken off the `unreported` list without being reported.
    mutating func clearUnreported() {
        marks.remove(.unreported)
    }

    /// How `objectsDidChangeNotification` reports an object.
    enum Report: Equatable { case inserted, updated }

    /// `processPendingChanges()` reports the object: an insert once, then updates.
    mutating func report() -> Report? {
        marks.remove(.unreported)
        if isDeleted { return nil }
        if isInserted && !marks.contains(.insertReported) {
            marks.insert(.insertReported)
            return .inserted
        }
        return hasChanges ? .updated : nil
    }
}
