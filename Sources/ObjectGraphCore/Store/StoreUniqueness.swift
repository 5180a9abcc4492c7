import Foundation

/// A save's uniqueness constraints, as the relational stores (SQLite, PostgreSQL) check them: the
/// rules here, the query (`find`) theirs.
///
/// A unique index checks each statement, so two objects that exchange values, or an insert that
/// takes a value an update gives up, would collide halfway through a save: the values updated
/// objects give up are cleared first (``valuesToRelease(in:)``), the rows written, and the result
/// checked once (``check(_:resolve:store:schema:find:)``).
enum StoreUniqueness {
    /// Whether an entity, or one it inherits from, declares a uniqueness constraint.
    static func isConstrained(_ entity: EntityDescription) -> Bool {
        var current: EntityDescription? = entity
        while let e = current {
            if !e.uniquenessConstraints.isEmpty { return true }
            current = e.superentity
        }
        return false
    }

    /// Whether an update of `object` writes an attribute of one of its entity's uniqueness
    /// constraints: an update that writes none cannot make a unique index refuse the row.
    static func changesConstrainedValues(_ object: SavedObject) -> Bool {
        isConstrained(object.entity) && !constrainedAttributes(changedBy: object).isEmpty
    }

    /// The attributes of `object`'s uniqueness constraints that an update of it changes (all of
    /// them when it names no changed properties).
    private static func constrainedAttributes(changedBy object: SavedObject) -> [AttributeDescription] {
        RelationalLayout.uniquenessConstraints(of: object.entity).flatMap(\.2).filter { attribute in
            !attribute.isTransient && (object.changedIndices.isEmpty || object.changedIndices.contains(attribute.index))
        }
    }

    /// The constrained attributes that updated objects change, when more than one object of the
    /// save has values for a uniqueness constraint (a lone object cannot collide with itself).
    static func valuesToRelease(in request: StoreSaveRequest) -> [(object: SavedObject, attributes: [AttributeDescription])] {
        // Most saves touch no constraint: decided without building anything.
        guard request.updated.contains(where: { isConstrained($0.entity) }), request.updated.count + request.inserted.count > 1 else { return [] }
        let updates = request.updated.filter { isConstrained($0.entity) }.map { ($0, constrainedAttributes(changedBy: $0)) }.filter { !$0.1.isEmpty }
        let inserts = request.inserted.count(where: { isConstrained($0.entity) })
        guard !updates.isEmpty, updates.count + inserts > 1 else { return [] }
        return updates.map { (object: $0.0, attributes: $0.1) }
    }

    /// A row: its root entity's table and its key.
    private struct RowKey: Hashable {
        var root: ObjectIdentifier
        var pk: Int64
    }

    /// Checks every constraint whose values an inserted or updated object sets.
    ///
    /// - Parameter find: the key and entity number of a row of `entity` (or a sub-entity) other
    ///   than `excluding` that holds `values` in `attributes`' columns, or nil.
    /// - Throws: ``ConstraintConflictError`` with every conflict found.
    static func check(
        _ request: StoreSaveRequest, resolve: (ManagedObjectID) -> ManagedObjectID, store: PersistentStore, schema: CoreDataLayout,
        find: (_ entity: EntityDescription, _ attributes: [AttributeDescription], _ values: [Value], _ excluding: Int64) throws -> (key: Int64, entityNumber: Int)?
    ) throws {
        var errors: [ObjectGraphError] = []
        var conflicts: [ConstraintConflict] = []
        // The rows this save writes, by table (a key is unique in its root entity's table only).
        var saved: Set<RowKey> = []
        for object in request.inserted + request.updated {
            if let pk = resolve(object.id).primaryKey { saved.insert(RowKey(root: ObjectIdentifier(object.entity.rootEntity), pk: pk)) }
        }
        for object in request.inserted + request.updated {
            let id = resolve(object.id)
            for (_, e, attributes) in RelationalLayout.uniquenessConstraints(of: object.entity)
            where object.changedIndices.isEmpty || attributes.contains(where: { object.changedIndices.contains($0.index) }) {
                let values = attributes.map { object.values[$0.index] }
                if !RelationalLayout.canCollide(values) { continue }
                guard let other = try find(e, attributes, values, id.primaryKey ?? -1) else { continue }
                let described = zip(attributes.map(\.name), values).map { "\($0) = \($1.debugText)" }.joined(separator: ", ")
                errors.append(ObjectGraphError(
                    .constraintConflict, "Another \(e.name) already has \(described)",
                    entityName: e.name, key: attributes.map(\.name).joined(separator: ","), objectID: id))
                let existing = saved.contains(RowKey(root: ObjectIdentifier(e.rootEntity), pk: other.key))
                    ? nil : schema.entity(forNumber: other.entityNumber).map { ManagedObjectID(entity: $0, store: store, primaryKey: other.key) }
                conflicts.append(ConstraintConflict(objectID: object.id, existing: existing))
            }
        }
        if !errors.isEmpty { throw ConstraintConflictError.make(errors, conflicts) }
    }
}
