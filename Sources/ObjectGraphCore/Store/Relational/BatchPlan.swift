import Foundation

/// The rows a fetch matches, as the condition an `UPDATE` or `DELETE` of the fetch's root table
/// (aliased `t0`) ends with: ` WHERE …`, or nothing; its arguments are bound as a fetch binds them.
struct BatchCondition {
    var sql: String
    var arguments: [Value]
}

/// How a relational store finds the rows a batch request is about, inside the request's
/// transaction: the part of a ``BatchPlan`` each store answers its own way (the SQLite store
/// compiles the predicate with `SQLQueryBuilder`).
protocol BatchMatching {
    /// The fetch as a condition on its root table, or nil when it needs what only a `SELECT` has
    /// (joins, a sort, a limit, an offset).
    func condition(of fetch: StoreFetchRequest) throws -> BatchCondition?

    /// The IDs of the rows a fetch matches, with their concrete entities, in the fetch's order.
    func matchingIDs(_ fetch: StoreFetchRequest) throws -> [ManagedObjectID]

    /// Those of `ids` whose rows exist, with their concrete entities, each once, in the order given.
    func existingIDs(_ ids: [ManagedObjectID]) throws -> [ManagedObjectID]

    /// The destinations of a relationship (to-one or to-many) for sources of the store.
    func destinations(of relationship: RelationshipDescription, for sources: [ManagedObjectID]) throws -> [ManagedObjectID: [ManagedObjectID]]

    /// Runs `UPDATE <root table> SET <assignments>` on the rows the fetch matches (by `condition`,
    /// or, when nil, by the keys a `SELECT` of the fetch gives), `values` bound first as a save
    /// binds them; the number of rows changed. When a unique index refuses the update,
    /// `reportRefusal` runs with the database's message, and otherwise the refusal is thrown.
    func update(
        _ fetch: StoreFetchRequest, assignments: String, values: [Value], where condition: BatchCondition?, reportRefusal: (String) throws -> Void
    ) throws -> Int

    /// Runs `DELETE FROM <root table> AS t0 <condition>`; the number of rows deleted.
    func delete(_ fetch: StoreFetchRequest, where condition: BatchCondition) throws -> Int
}

/// A batch update or batch delete as the relational stores run it: a value built from the request,
/// the store's layout and what its ``BatchMatching`` answers, whose steps are data, run in order by
/// ``run(on:matcher:store:)``.
///
/// An update: the matching rows listed (unless nobody needs their IDs), one `UPDATE` of them all
/// that sets the values and bumps each row's version, then the uniqueness constraints it touches,
/// checked on the table as written.
///
/// A delete: with no delete rule to follow and a condition the store can state, one `DELETE` of
/// the matching rows (listed first unless nobody needs their IDs and no relationship can refer to
/// them); otherwise the rows listed, closed under their delete rules (``BatchDeleteClosure``), and
/// deleted by chunks of keys. Then the references to them cleared: join-table rows, hidden foreign
/// keys of to-many relationships without an inverse, and surviving rows' to-one relationships.
///
/// The request's transaction, and what a store records of it (SQLite's persistent history), are
/// the store's.
struct BatchPlan {
    enum Step {
        /// The rows the fetch matches, listed.
        case listMatches(StoreFetchRequest)
        /// Those of the named objects whose rows exist, listed.
        case listExisting([ManagedObjectID])
        /// One `UPDATE` of the matching rows: `assignments` sets the columns, then the version.
        case updateMatching(StoreFetchRequest, assignments: [(AttributeDescription, Value)], condition: BatchCondition?)
        /// The uniqueness constraints the update touches.
        case checkUniqueness([UniquenessConstraint])
        /// One `DELETE` of the matching rows.
        case deleteMatching(StoreFetchRequest, BatchCondition)
        /// The listed rows, and what their delete rules reach.
        case closeUnderDeleteRules
        /// The rows to delete, deleted by chunks of keys of each table.
        case deleteRows
        /// What refers to the deleted rows, cleared.
        case clearReferences([Reference])
    }

    /// A uniqueness constraint of an entity (or a sub-entity) of the request.
    struct UniquenessConstraint {
        var owner: EntityDescription
        var attributes: [AttributeDescription]
    }

    /// Something that may name a deleted row, and how it is cleared.
    enum Reference {
        /// The hidden foreign key a to-many without an inverse keeps in its destinations' rows
        /// (`table`, `column`), naming deleted sources of the root entity `sourceRoot`.
        case hiddenForeignKey(table: String, column: String, sourceRoot: Int)
        /// Join-table rows whose `column` names a deleted row of the root entity `root`.
        case joinRows(table: String, column: String, root: Int)
        /// Surviving rows of `entity`'s table whose to-one relationship points at a deleted row of
        /// the root entity `destinationRoot`: cleared, with a new version.
        case toOne(entity: EntityDescription, column: String, entityColumn: String?, destinationRoot: Int)
    }

    /// Whether the result lists the rows (their IDs), or only says how many changed.
    let listsRows: Bool
    let entity: EntityDescription?
    let steps: [Step]
    let schema: CoreDataLayout
    /// The layout of each root entity's table, by root entity code.
    let tables: [Int: TableLayout]

    /// - Parameters:
    ///   - listsEveryRow: whether the store needs the rows' IDs whatever the request asks (to record them).
    /// - Returns: nil for a batch insert, which runs as a save.
    init?(_ request: StoreBatchRequest, schema: CoreDataLayout, tables: [Int: TableLayout], listsEveryRow: Bool, matcher: some BatchMatching) throws {
        self.schema = schema
        self.tables = tables
        switch request {
        case .insert:
            return nil
        case .update(let fetch, let values, let listing):
            entity = fetch.entity
            listsRows = listing || listsEveryRow || values.isEmpty
            var steps: [Step] = listsRows ? [.listMatches(fetch)] : []
            let assignments = values.compactMap { name, value in fetch.entity.attributesByName[name].map { ($0, value) } }
            if !values.isEmpty {
                steps.append(.updateMatching(fetch, assignments: assignments, condition: try matcher.condition(of: fetch)))
                steps.append(.checkUniqueness(Self.uniquenessConstraints(touchedBy: fetch.entity, names: Set(values.map(\.name)))))
            }
            self.steps = steps
        case .delete(let fetch, let listing):
            entity = fetch.entity
            let condition = try matcher.condition(of: fetch)
            listsRows = listing || listsEveryRow || condition == nil || Self.isReferenced(fetch.entity, in: schema)
            let rules = fetch.entity.selfAndDescendants.flatMap(\.relationships).map(\.deleteRule)
            if let condition, !rules.contains(.cascade), !rules.contains(.deny) {
                steps = listsRows ? [.listMatches(fetch), .deleteMatching(fetch, condition), .clearReferences(Self.references(in: schema))]
                    : [.deleteMatching(fetch, condition)]
            } else {
                steps = [.listMatches(fetch), .closeUnderDeleteRules, .deleteRows, .clearReferences(Self.references(in: schema))]
            }
        case .deleteObjects(let ids):
            entity = nil
            listsRows = true
            steps = [.listExisting(ids), .closeUnderDeleteRules, .deleteRows, .clearReferences(Self.references(in: schema))]
        }
    }

    /// Whether a relationship of the model leaves or reaches the entity's tree (join rows, foreign
    /// keys or inverses that a delete of its rows clears).
    static func isReferenced(_ entity: EntityDescription, in schema: CoreDataLayout) -> Bool {
        let root = entity.rootEntity
        for entity in schema.model.entitiesByCode {
            for relationship in entity.declaredProperties.compactMap({ $0 as? RelationshipDescription }) {
                if entity.rootEntity === root || relationship.destinationEntity?.rootEntity === root { return true }
            }
        }
        return false
    }

    /// Everything in the model's tables that can name a row, in the order of the entities and
    /// their relationships.
    static func references(in schema: CoreDataLayout) -> [Reference] {
        var references: [Reference] = []
        for entity in schema.model.entitiesByCode {
            for relationship in entity.declaredProperties.compactMap({ $0 as? RelationshipDescription }) {
                guard let destination = relationship.destinationEntity else { continue }
                if relationship.usesJoinTable {
                    switch schema.storage(forToMany: relationship) {
                    case .foreignKey(let table, let column, _):
                        references.append(.hiddenForeignKey(table: table, column: column, sourceRoot: entity.rootEntity.entityCode))
                    case .joinTable(let table, let sourceColumn, let destinationColumn, _, _):
                        references.append(.joinRows(table: table, column: sourceColumn, root: entity.rootEntity.entityCode))
                        references.append(.joinRows(table: table, column: destinationColumn, root: destination.rootEntity.entityCode))
                    }
                } else if !relationship.isToMany {
                    references.append(.toOne(
                        entity: entity, column: schema.columnName(for: relationship), entityColumn: schema.entityColumnName(forToOne: relationship),
                        destinationRoot: destination.rootEntity.entityCode))
                }
            }
        }
        return references
    }

    /// The uniqueness constraints of the entity and its sub-entities that name an attribute in `names`.
    static func uniquenessConstraints(touchedBy entity: EntityDescription, names: Set<String>) -> [UniquenessConstraint] {
        var constraints = RelationalLayout.uniquenessConstraints(of: entity).map { UniquenessConstraint(owner: $0.1, attributes: $0.2) }
        for sub in entity.descendants {
            for constraint in sub.uniquenessConstraints {
                constraints.append(UniquenessConstraint(owner: sub, attributes: constraint.compactMap { sub.attributesByName[$0] }))
            }
        }
        return constraints.filter { $0.attributes.contains(where: { names.contains($0.name) }) }
    }

    /// The refusal of an update of `entity` that gives several rows a constraint's values.
    static func uniquenessError(updating entity: EntityDescription, _ constraint: UniquenessConstraint) -> ObjectGraphError {
        let keys = constraint.attributes.map(\.name).joined(separator: ", ")
        return ObjectGraphError(
            .constraintConflict,
            "Batch update of \(entity.name) would give several \(constraint.owner.name) objects the same \(keys), which must be unique; nothing was written",
            entityName: constraint.owner.name, key: keys)
    }
}
