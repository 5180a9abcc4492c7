import Foundation

// Batch requests in store terms: what a context's `execute(_:)` of a `BatchInsertRequest`,
// `BatchUpdateRequest` or `BatchDeleteRequest` asks each store to do, already validated, and the
// store-neutral parts of doing it (splitting an insert into new rows and upserts, the closure of a
// delete under its delete rules), which every store type shares.

/// One row of a batch insert, validated: every value of the entity's properties (defaults where
/// the row gave none) and the indices of the values the row gave.
struct BatchRow: Sendable {
    var values: [Value]
    /// The stored attributes the row named, in property order: an upsert writes only these.
    var given: PropertyMask
    /// A required attribute the row leaves without a value: refused if the row is inserted rather
    /// than upserted.
    var missingRequired: String? = nil
}

/// A batch request in store terms.
enum StoreBatchRequest: Sendable {
    /// Rows of one concrete entity.
    case insert(entity: EntityDescription, rows: [BatchRow])
    /// Constant values (by attribute name) for every row a fetch matches. Without `listingRows`,
    /// nobody needs the rows' IDs (no merge, no result of IDs): a store may leave them out and say
    /// how many rows changed (``StoreBatchResult/unlistedCount``) and of which entity.
    case update(StoreFetchRequest, values: [(name: String, value: Value)], listingRows: Bool = true)
    /// The rows a fetch matches, with what their delete rules reach; `listingRows` as for `update`.
    case delete(StoreFetchRequest, listingRows: Bool = true)
    /// These objects (of this store), with what their delete rules reach.
    case deleteObjects([ManagedObjectID])
}

/// What a batch request did to one store.
struct StoreBatchResult: Sendable {
    /// The objects the request was about, in order: each row inserted or upserted, each row
    /// updated, each row deleted because the request named or matched it.
    var affected: [ManagedObjectID] = []
    /// New rows.
    var inserted: [ManagedObjectID] = []
    /// Rows whose values changed: upserted, updated, or whose to-one relationship a delete cleared.
    var updated: [ManagedObjectID] = []
    /// Rows deleted, including those a cascade reached.
    var deleted: [ManagedObjectID] = []
    /// The persistent-history changes recorded with the request (0 without history tracking).
    var historyChanges = 0
    /// Rows the request changed (updated or deleted) without listing them: a request that did not
    /// ask for its rows' IDs, run as one statement with no scan for the IDs.
    var unlistedCount = 0
    /// The entities whose rows the unlisted changes touched: the row cache drops every row of their
    /// trees, since it cannot tell which ones changed.
    var unlistedEntities: [EntityDescription] = []

    /// How many objects the request was about, listed or not.
    var affectedCount: Int { affected.count + unlistedCount }

    mutating func append(_ other: StoreBatchResult) {
        // An empty list takes the other's (shared, not copied: a batch's lists hold thousands of IDs).
        func join(_ list: inout [ManagedObjectID], _ more: [ManagedObjectID]) {
            if list.isEmpty { list = more } else { list += more }
        }
        join(&affected, other.affected)
        join(&inserted, other.inserted)
        join(&updated, other.updated)
        join(&deleted, other.deleted)
        historyChanges += other.historyChanges
        unlistedCount += other.unlistedCount
        unlistedEntities += other.unlistedEntities
    }
}

// MARK: - Insert: new rows and upserts

/// A batch insert as a save: rows whose uniqueness-constraint values match an existing row (or an
/// earlier row of the batch) update it with the values they gave; the others are inserted.
struct BatchInsertPlan {
    /// The save that carries it out: inserted objects have temporary IDs, updates have no expected
    /// version (the store bumps it) and change only the columns given.
    var save = StoreSaveRequest()
    /// For each row of the batch, where it went.
    var targets: [Target] = []

    enum Target {
        case inserted(ManagedObjectID)  // a temporary ID, made permanent by the save
        case updated(ManagedObjectID)
    }

    /// Splits the rows. `existing` finds the row of the store holding a constraint's values (the
    /// constraint's key, its entity, its attributes, the values), or nil.
    ///
    /// - Throws: ``ObjectGraphError/constraintConflict`` when the matching row is of another
    ///   entity, whose columns the batch's entity cannot set.
    init(entity: EntityDescription, rows: [BatchRow],
         existing: (String, EntityDescription, [AttributeDescription], [Value]) throws -> ManagedObjectID?) throws {
        let constraints = RelationalLayout.uniquenessConstraints(of: entity)
        save.inserted.reserveCapacity(rows.count)
        targets.reserveCapacity(rows.count)
        guard !constraints.isEmpty else {
            for row in rows {
                let id = ManagedObjectID.temporary(for: entity)
                save.inserted.append(SavedObject(id: id, entity: entity, values: row.values, changedIndices: [], expectedVersion: nil))
                targets.append(.inserted(id))
            }
            return
        }
        // Constraint values claimed by earlier rows: constraint key → values → position in `save`.
        var newRows: [String: [[Value]: Int]] = [:]
        var updates: [String: [[Value]: Int]] = [:]
        for (number, row) in rows.enumerated() {
            var keyed: [(String, [Value])] = []
            // Where the row went: into `save.inserted` (true) or `save.updated`, at this position.
            var position: (inserted: Bool, index: Int)?
            for (key, owner, attributes) in constraints {
                let values = attributes.map { row.values[$0.index] }
                guard RelationalLayout.canCollide(values) else { continue }
                keyed.append((key, values))
                guard position == nil else { continue }
                if let i = newRows[key]?[values] {
                    for index in row.given { save.inserted[i].values[index] = row.values[index] }
                    position = (true, i)
                } else if let i = updates[key]?[values] {
                    for index in row.given { save.updated[i].values[index] = row.values[index] }
                    save.updated[i].changedIndices = Array(Set(save.updated[i].changedIndices).union(row.given)).sorted()
                    position = (false, i)
                } else if let id = try existing(key, owner, attributes, values) {
                    guard id.entity === entity else {
                        let described = zip(attributes.map(\.name), values).map { "\($0) = \($1.debugText)" }.joined(separator: ", ")
                        throw ObjectGraphError(
                            .constraintConflict,
                            "Batch insert row \(number) of \(entity.name) has \(described), which a \(id.entity.name) already has; a batch insert of \(entity.name) cannot update it; nothing was written",
                            entityName: entity.name, key: attributes.map(\.name).joined(separator: ","), objectID: id)
                    }
                    save.updated.append(SavedObject(id: id, entity: entity, values: row.values, changedIndices: Array(row.given), expectedVersion: nil))
                    position = (false, save.updated.count - 1)
                }
            }
            if position == nil {
                if let missing = row.missingRequired { throw BatchValues.missingRequired(missing, number: number, entity: entity) }
                save.inserted.append(SavedObject(
                    id: ManagedObjectID.temporary(for: entity), entity: entity, values: row.values, changedIndices: [], expectedVersion: nil))
                position = (true, save.inserted.count - 1)
            }
            let (isInsert, index) = position!
            for (key, values) in keyed {
                if isInsert {
                    if newRows[key]?[values] == nil { newRows[key, default: [:]][values] = index }
                } else if updates[key]?[values] == nil {
                    updates[key, default: [:]][values] = index
                }
            }
            targets.append(isInsert ? .inserted(save.inserted[index].id) : .updated(save.updated[index].id))
        }
    }

    /// The store's result, given the permanent IDs the save gave the inserted rows.
    func result(permanentIDs: [ManagedObjectID: ManagedObjectID]) -> StoreBatchResult {
        var result = StoreBatchResult()
        result.affected = targets.map { target in
            switch target {
            case .inserted(let id): permanentIDs[id] ?? id
            case .updated(let id): id
            }
        }
        result.inserted = save.inserted.map { permanentIDs[$0.id] ?? $0.id }
        result.updated = save.updated.map(\.id)
        return result
    }
}

// MARK: - Delete: the closure under delete rules

/// The objects a batch delete removes: those it names, and, recursively, the destinations of their
/// cascading relationships. A deny relationship with a destination that is not deleted too refuses
/// the whole request.
enum BatchDeleteClosure {
    /// - Parameters:
    ///   - destinations: the destinations of a relationship (to-one or to-many) for sources of the
    ///     store, read inside the delete's transaction.
    /// - Throws: ``ObjectGraphError/validation`` naming each object a deny rule keeps.
    static func closure(
        of initial: [ManagedObjectID],
        destinations: (RelationshipDescription, [ManagedObjectID]) throws -> [ManagedObjectID: [ManagedObjectID]]
    ) throws -> [ManagedObjectID] {
        var all = Set(initial)
        var order = initial
        var frontier = initial
        while !frontier.isEmpty {
            var next: [ManagedObjectID] = []
            for (entity, ids) in groupedByEntity(frontier) {
                for relationship in entity.relationships where relationship.deleteRule == .cascade {
                    for destination in try destinations(relationship, ids).values.joined() where all.insert(destination).inserted {
                        next.append(destination)
                        order.append(destination)
                    }
                }
            }
            frontier = next
        }
        var refusals: [ObjectGraphError] = []
        for (entity, ids) in groupedByEntity(order) {
            for relationship in entity.relationships where relationship.deleteRule == .deny {
                for (source, found) in try destinations(relationship, ids).sorted(by: { $0.key < $1.key }) {
                    let kept = found.filter { !all.contains($0) }
                    guard !kept.isEmpty else { continue }
                    refusals.append(ObjectGraphError(
                        .validation,
                        "\(source) cannot be deleted: its relationship '\(relationship.name)' (delete rule deny) still has \(kept.map(\.description).joined(separator: ", "))",
                        entityName: entity.name, key: relationship.name, objectID: source))
                }
            }
        }
        if let first = refusals.first {
            throw ObjectGraphError(
                .validation,
                "Batch delete refused, nothing was deleted: " + refusals.map(\.message).joined(separator: "; "),
                entityName: first.entityName, key: first.key, objectID: first.objectID, underlyingErrors: refusals)
        }
        return order
    }

    /// IDs grouped by concrete entity, in a stable order.
    static func groupedByEntity(_ ids: [ManagedObjectID]) -> [(EntityDescription, [ManagedObjectID])] {
        var groups: [ObjectIdentifier: (EntityDescription, [ManagedObjectID])] = [:]
        var order: [ObjectIdentifier] = []
        for id in ids {
            let key = ObjectIdentifier(id.entity)
            if groups[key] == nil { order.append(key); groups[key] = (id.entity, []) }
            groups[key]!.1.append(id)
        }
        return order.map { groups[$0]! }
    }
}
