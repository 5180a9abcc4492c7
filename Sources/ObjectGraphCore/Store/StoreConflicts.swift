import Foundation

// Conflicts a store finds while it saves, handed to the saving context's merge policy.

/// A conflict found by optimistic locking: the row changed (or vanished) since the saving
/// context read it.
struct VersionConflict: Sendable {
    var id: ManagedObjectID
    var expectedVersion: Int64
    /// The row as it is in the store now; nil when it was deleted.
    var persisted: Snapshot?
}

/// Thrown by a backend when version checks fail; the coordinator turns it into a merge-conflict error.
struct VersionConflictError: Error {
    var conflicts: [VersionConflict]
}

/// A uniqueness conflict found by a store: the saved object and the row that already has its values.
struct ConstraintConflict: Sendable {
    var objectID: ManagedObjectID
    var existing: ManagedObjectID?
}

/// Thrown by stores for uniqueness conflicts; carries the conflicts so a policy can resolve them.
struct ConstraintConflictError: Error {
    var error: ObjectGraphError
    var conflicts: [ConstraintConflict]
}

extension ConstraintConflictError {
    static func make(_ errors: [ObjectGraphError], _ conflicts: [ConstraintConflict]) -> ConstraintConflictError {
        let error = errors.count == 1 ? errors[0] : ObjectGraphError(
            .constraintConflict, "\(errors.count) uniqueness constraint conflicts: " + errors.map(\.message).joined(separator: "; "),
            entityName: errors[0].entityName, key: errors[0].key, objectID: errors[0].objectID, underlyingErrors: errors)
        return ConstraintConflictError(error: error, conflicts: conflicts)
    }
}
