import Foundation

/// How a context resolves conflicts at save: optimistic-locking conflicts (another context saved
/// the same objects since they were read) and uniqueness-constraint conflicts (`NSMergePolicy`).
///
/// ```swift
/// context.mergePolicy = .mergeByPropertyObjectTrump
/// ```
public final class MergePolicy: Sendable, CustomStringConvertible, Equatable {
    /// The kinds of policy.
    public enum PolicyType: Sendable, Hashable {
        /// The save throws ``ObjectGraphError/mergeConflict`` (or `.constraintConflict`) listing every
        /// conflict, and writes nothing.
        case error
        /// Property by property, the store's changes win over the context's.
        case mergeByPropertyStoreTrump
        /// Property by property, the context's changes win over the store's. For a uniqueness
        /// conflict, the inserted object updates the existing row (an upsert).
        case mergeByPropertyObjectTrump
        /// The context's objects are written whole over the store's rows.
        case overwrite
        /// The context's conflicting changes are discarded; the store's state wins.
        case rollback
    }

    public let type: PolicyType

    public init(merge type: PolicyType) { self.type = type }

    public static let error = MergePolicy(merge: .error)
    public static let mergeByPropertyStoreTrump = MergePolicy(merge: .mergeByPropertyStoreTrump)
    public static let mergeByPropertyObjectTrump = MergePolicy(merge: .mergeByPropertyObjectTrump)
    public static let overwrite = MergePolicy(merge: .overwrite)
    public static let rollback = MergePolicy(merge: .rollback)

    public var description: String { "MergePolicy(\(type))" }
    public static func == (lhs: MergePolicy, rhs: MergePolicy) -> Bool { lhs.type == rhs.type }
}

/// One optimistic-locking conflict found at save (`NSMergeConflict`).
public struct MergeConflict: Sendable, CustomStringConvertible {
    /// The conflicting object.
    public let objectID: ManagedObjectID
    /// The object's values in the saving context.
    public let objectSnapshot: [String: any Sendable]
    /// The values the saving context last read (nil for an object it inserted).
    public let cachedSnapshot: [String: any Sendable]?
    /// The values in the store now; nil when the row was deleted.
    public let persistedSnapshot: [String: any Sendable]?
    /// The version the saving context read, and the store's version now (0 when deleted).
    public let oldVersionNumber: Int64
    public let newVersionNumber: Int64

    public var description: String {
        "MergeConflict(\(objectID), read version \(oldVersionNumber), store version \(persistedSnapshot == nil ? "deleted" : String(newVersionNumber)))"
    }
}

extension Snapshot {
    /// The snapshot as a dictionary of the values `value(forKey:)` returns, by key (to-one
    /// relationships as object IDs).
    var dictionary: [String: any Sendable] {
        var result: [String: any Sendable] = [:]
        for property in entity.properties where property.index < values.count {
            let value = values[property.index]
            if let attribute = property as? AttributeDescription {
                if let v = value.publicValue(for: attribute.attributeType) { result[attribute.name] = v }
            } else if case .objectID(let id) = value {
                result[property.name] = id
            }
        }
        return result
    }
}

extension MergePolicy.PolicyType {
    /// What a policy keeps of one property of an object whose parent store has a newer version of
    /// it: the one decision behind every conflict path (a save's conflicts with the store or with a
    /// parent context, and merges of other contexts' saves).
    enum PropertyOutcome: Equatable {
        /// The object's own value stays (changed or not, as it was).
        case keepMine
        /// The object's own value stays and is written whole, as a change (overwrite at save).
        case keepMineAsChanged
        /// The newer version's value.
        case takeTheirs
        /// The newer version's value, and the object's own change is dropped.
        case takeTheirsDroppingMine
    }

    /// - Parameters:
    ///   - changedHere: the object has an unsaved change to the property.
    ///   - changedThere: the newer version changed the property since the object read it.
    ///   - atSave: the newer version was found by a save (a conflict), not handed to a merge.
    func outcome(changedHere: Bool, changedThere: Bool, atSave: Bool) -> PropertyOutcome {
        switch self {
        case .rollback:
            return changedHere ? .takeTheirsDroppingMine : .takeTheirs
        case .mergeByPropertyStoreTrump:
            guard changedHere else { return .takeTheirs }
            return changedThere ? .takeTheirsDroppingMine : .keepMine
        case .overwrite where atSave:
            return changedHere ? .keepMine : .keepMineAsChanged
        case .error, .mergeByPropertyObjectTrump, .overwrite:
            return changedHere ? .keepMine : .takeTheirs
        }
    }
}

extension ManagedObjectContext {
    /// Gives an object with unsaved changes a newer version of itself from its parent store,
    /// property by property as the merge policy decides. Transient attributes are the object's own.
    func applyMergePolicy(to object: ManagedObject, newer: Snapshot, atSave: Bool, changedThere: (Int) -> Bool) {
        let policy = mergePolicy.type
        object.merge(newer) { index, changedHere in
            policy.outcome(changedHere: changedHere, changedThere: changedThere(index), atSave: atSave)
        }
        if object.changedIndices.isEmpty && object.state.settleIfNoChangesLeft() {
            changes.forgetUpdate(object)
        }
    }

    /// Resolves optimistic-locking conflicts by the merge policy, adjusting the objects so that a
    /// new save request can be made. Throws when the policy is `.error`.
    func resolve(_ conflicts: [VersionConflict]) throws {
        if mergePolicy.type == .error { throw mergeConflictError(conflicts) }
        for conflict in conflicts {
            guard let object = registered[canonical(conflict.id)]?.object else { continue }
            guard let persisted = conflict.persisted else {
                // Deleted in the parent store. A parent context's delete stands; at the store, a
                // policy that keeps the context's version writes the object again, under its ID.
                if object.isDeleted || mergePolicy.type == .rollback || mergePolicy.type == .mergeByPropertyStoreTrump
                    || !parentStore.reinsertsDeletedObjects {
                    invalidate(object)
                } else {
                    // The context's object wins: written again, under its ID.
                    object.forgetSnapshotAndChanges()
                    object.state.reinsert()
                    changes.forgetUpdate(object)
                    changes.recordInsert(object)
                    retained.insert(object)
                }
                continue
            }
            if object.isDeleted {
                if mergePolicy.type == .rollback {
                    object.state.discardChanges()
                    changes.forgetDelete(object)
                    changes.forgetUpdate(object)
                    object.revert(to: persisted)
                }
                object.rebase(on: persisted)
                continue
            }
            let previous = object.snapshot
            applyMergePolicy(to: object, newer: persisted, atSave: true) { index in
                previous.map { $0.values[index] != persisted.values[index] } ?? true
            }
        }
        restoreUnloadedToManyRelationships()
    }

    /// The `.mergeConflict` error of a save refused for conflicts with the parent store.
    func mergeConflictError(_ conflicts: [VersionConflict]) -> ObjectGraphError {
        let store = parentStore
        return conflictError(conflicts, summary: store.conflictSummary) { store.describeConflict($0, requester: storeRequester) }
    }

    /// A `.mergeConflict` error for version conflicts, found against the store or a parent: one
    /// error per object (`message` says what happened to it), each object's in-memory, cached and
    /// persisted values in `conflicts`.
    func conflictError(_ conflicts: [VersionConflict], summary: String, message: (VersionConflict) -> String) -> ObjectGraphError {
        var details: [MergeConflict] = []
        let errors = conflicts.map { conflict -> ObjectGraphError in
            let object = registered[canonical(conflict.id)]?.object
            let current = object.map { Snapshot(entity: $0.entity, version: $0.snapshot?.version ?? 0, values: $0.values).dictionary } ?? [:]
            details.append(MergeConflict(
                objectID: conflict.id, objectSnapshot: current, cachedSnapshot: object?.snapshot?.dictionary,
                persistedSnapshot: conflict.persisted?.dictionary, oldVersionNumber: conflict.expectedVersion,
                newVersionNumber: conflict.persisted?.version ?? 0))
            return ObjectGraphError(.mergeConflict, message(conflict), entityName: conflict.id.entityName, objectID: conflict.id)
        }
        var error = errors.count == 1 ? errors[0] : ObjectGraphError(
            .mergeConflict, "\(errors.count) \(summary): " + errors.map(\.message).joined(separator: "; "),
            objectID: errors[0].objectID, underlyingErrors: errors)
        error.conflicts = details
        return error
    }

    /// Resolves uniqueness conflicts between inserted objects and existing rows by the merge
    /// policy: object trump and overwrite turn the insert into an update of the existing row (an
    /// upsert); store trump and rollback make the inserted object the existing row, unchanged.
    /// Conflicts within the save itself, or of updated objects, are not resolvable.
    func resolve(_ conflicts: [ConstraintConflict], error: ObjectGraphError) throws {
        guard mergePolicy.type != .error else { throw error }
        for conflict in conflicts {
            guard let existing = conflict.existing, !existing.isTemporaryID,
                  let object = registered[canonical(conflict.objectID)]?.object ?? insertedObjects.first(where: { $0.objectID == conflict.objectID }),
                  object.isInserted,
                  let persisted = try parentStore.snapshots(for: [existing], maximumAge: 0, leasing: false, requester: storeRequester).snapshots[existing]
            else { throw error }
            if let other = registered[existing]?.object, other !== object {
                // The existing row was registered here as another object: the inserted one replaces it.
                invalidate(other)
            }
            let temporary = object.objectID
            registered[temporary] = nil
            aliases.add(temporary, existing)
            object.objectID = existing
            registered[existing] = WeakObject(object)
            changes.forgetInsert(object)
            object.rebase(on: persisted)
            switch mergePolicy.type {
            case .mergeByPropertyObjectTrump, .overwrite:
                object.markEveryStoredPropertyChanged()
                object.state.becomeExistingRow(changed: true)
                changes.recordUpdate(object)
            default:
                object.takeStoredValues(of: persisted)
                let relationshipChanges = object.toMany.values.contains(where: \.hasChanges)
                object.state.becomeExistingRow(changed: relationshipChanges)
                if relationshipChanges { changes.recordUpdate(object) }
            }
            retained.insert(object)
        }
    }
}
