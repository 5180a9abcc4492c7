import Foundation

/// One save applied to an in-memory store: checked first, then applied, so it is all or nothing.
struct InMemorySave {
    let request: StoreSaveRequest
    let store: PersistentStore
    let model: ManagedObjectModel

    /// Checks the save against the state (versions, then uniqueness), then applies it: deletes,
    /// inserts, updates, pairs and orderings, in the order of the relational stores' ``SavePlan``.
    func apply(to state: inout InMemoryState) throws -> StoreSaveResult {
        var result = StoreSaveResult()
        // Permanent IDs (computed without touching the state until every check has passed).
        var nextKeys: [Int: Int64] = [:]
        for object in request.inserted where object.id.isTemporaryID {
            let root = object.entity.rootEntity.entityCode
            let key = (nextKeys[root] ?? state.maxKeys[root] ?? 0) + 1
            nextKeys[root] = key
            result.permanentIDs[object.id] = ManagedObjectID(entity: object.entity, store: store, primaryKey: key)
        }
        let ids = PermanentIDs(result.permanentIDs)
        try checkVersions(in: state)
        try checkUniqueness(in: state, ids: ids)

        // Every check passed: apply.
        for (root, key) in nextKeys { state.maxKeys[root] = max(state.maxKeys[root] ?? 0, key) }
        for object in request.deleted { delete(object, from: &state) }
        for object in request.inserted {
            if let (id, snapshot) = insert(object, into: &state, ids: ids) { result.snapshots[id] = snapshot }
        }
        for object in request.updated {
            if let snapshot = update(object, in: &state, ids: ids) { result.snapshots[object.id] = snapshot }
        }
        applyPairs(to: &state, ids: ids)
        for ordering in request.orderings { apply(ordering, to: &state, ids: ids) }
        return result
    }

    /// The IDs objects have after the save.
    struct PermanentIDs {
        let permanent: [ManagedObjectID: ManagedObjectID]
        init(_ permanent: [ManagedObjectID: ManagedObjectID]) { self.permanent = permanent }
        func resolve(_ id: ManagedObjectID) -> ManagedObjectID { permanent[id] ?? id }
        func resolved(_ values: [Value]) -> [Value] {
            values.map { if case .objectID(let id) = $0, let p = permanent[id] { .objectID(p) } else { $0 } }
        }
    }

    /// Optimistic locking: every updated or deleted object's version must be the one its context saw.
    private func checkVersions(in state: InMemoryState) throws {
        var conflicts: [VersionConflict] = []
        for object in request.updated + request.deleted {
            guard let expected = object.expectedVersion, let pk = object.id.primaryKey else { continue }
            let current = state.tables[object.entity.rootEntity.entityCode]?[pk]
            if current?.version != expected {
                conflicts.append(VersionConflict(id: object.id, expectedVersion: expected, persisted: current))
            }
        }
        if !conflicts.isEmpty { throw VersionConflictError(conflicts: conflicts) }
    }

    /// Uniqueness, against the rows as they will be after the save.
    private func checkUniqueness(in state: InMemoryState, ids: PermanentIDs) throws {
        let removed = Set(request.deleted.compactMap(\.id.primaryKey))
        var claimed: [String: [[Value]: Int64]] = [:]
        var uniqueConflicts: [ObjectGraphError] = []
        var constraintConflicts: [ConstraintConflict] = []
        var updatesByKey: [Int64: SavedObject] = [:]
        for update in request.updated { if let pk = update.id.primaryKey { updatesByKey[pk] = update } }
        for object in request.inserted + request.updated {
            let pk = ids.resolve(object.id).primaryKey ?? -1
            for (key, entity, attributes) in RelationalLayout.uniquenessConstraints(of: object.entity)
            where object.changedIndices.isEmpty || attributes.contains(where: { object.changedIndices.contains($0.index) }) {
                let values = attributes.map { object.values[$0.index] }
                if !RelationalLayout.canCollide(values) { continue }
                let others = (state.uniqueness[key]?[values] ?? []).subtracting([pk]).subtracting(removed).filter { other in
                    // A row updated in this save keeps its old values only if its new ones are the same.
                    guard let update = updatesByKey[other] else { return true }
                    return attributes.map { update.values[$0.index] } == values
                }
                let inSave = claimed[key]?[values].map { $0 != pk } ?? false
                if !others.isEmpty || inSave {
                    let described = zip(attributes.map(\.name), values).map { "\($0) = \($1.debugText)" }.joined(separator: ", ")
                    uniqueConflicts.append(ObjectGraphError(
                        .constraintConflict, "Another \(entity.name) already has \(described)",
                        entityName: entity.name, key: attributes.map(\.name).joined(separator: ","), objectID: ids.resolve(object.id)))
                    var existing: ManagedObjectID?
                    if !inSave, let other = others.min(), updatesByKey[other] == nil,
                       let row = state.tables[entity.rootEntity.entityCode]?[other] {
                        existing = ManagedObjectID(entity: row.entity, store: store, primaryKey: other)
                    }
                    constraintConflicts.append(ConstraintConflict(objectID: object.id, existing: existing))
                }
                claimed[key, default: [:]][values] = pk
            }
        }
        if !uniqueConflicts.isEmpty { throw ConstraintConflictError.make(uniqueConflicts, constraintConflicts) }
    }

    /// Removes a deleted object's row, with its pairs.
    private func delete(_ object: SavedObject, from state: inout InMemoryState) {
        guard let pk = object.id.primaryKey, let old = state.tables[object.entity.rootEntity.entityCode]?[pk] else { return }
        unindex(old, pk: pk, in: &state)
        state.tables[object.entity.rootEntity.entityCode]?[pk] = nil
        for relationship in old.entity.relationships where relationship.usesJoinTable {
            guard case .pairs(let table, let forward) = RelationalLayout.toMany(relationship) else { continue }
            let partners = (forward ? state.joinForward[table]?[pk] : state.joinBackward[table]?[pk]) ?? [:]
            for partner in partners.keys {
                if forward { state.joinBackward[table]?[partner]?[pk] = nil } else { state.joinForward[table]?[partner]?[pk] = nil }
            }
            if forward { state.joinForward[table]?[pk] = nil } else { state.joinBackward[table]?[pk] = nil }
        }
    }

    private func insert(_ object: SavedObject, into state: inout InMemoryState, ids: PermanentIDs) -> (ManagedObjectID, Snapshot)? {
        let id = ids.resolve(object.id)
        guard let pk = id.primaryKey else { return nil }
        var values = ids.resolved(object.values)
        for attribute in object.entity.attributes where attribute.isTransient { values[attribute.index] = .null }
        let snapshot = Snapshot(entity: object.entity, version: 1, values: values)
        let root = object.entity.rootEntity.entityCode
        state.tables[root, default: [:]][pk] = snapshot
        state.maxKeys[root] = max(state.maxKeys[root] ?? 0, pk)
        index(snapshot, pk: pk, in: &state)
        return (id, snapshot)
    }

    /// Writes an updated object's changed values, bumping the row's version.
    private func update(_ object: SavedObject, in state: inout InMemoryState, ids: PermanentIDs) -> Snapshot? {
        guard let pk = object.id.primaryKey, let old = state.tables[object.entity.rootEntity.entityCode]?[pk] else { return nil }
        var values = old.values
        let newValues = ids.resolved(object.values)
        for index in object.changedIndices where index < values.count {
            let property = object.entity.properties[index]
            if (property as? AttributeDescription)?.isTransient == true || (property as? RelationshipDescription)?.isToMany == true { continue }
            values[index] = newValues[index]
        }
        unindex(old, pk: pk, in: &state)
        let snapshot = Snapshot(entity: old.entity, version: old.version + 1, values: values)
        state.tables[object.entity.rootEntity.entityCode]?[pk] = snapshot
        index(snapshot, pk: pk, in: &state)
        return snapshot
    }

    /// Removes, then adds, the pairs of many-to-many relationships (and to-many ones without an inverse).
    private func applyPairs(to state: inout InMemoryState, ids: PermanentIDs) {
        for change in request.joinDeletes {
            guard case .pairs(let table, let forward) = RelationalLayout.toMany(change.relationship),
                  let s = ids.resolve(change.source).primaryKey, let d = ids.resolve(change.destination).primaryKey else { continue }
            let (src, dst) = forward ? (s, d) : (d, s)
            state.joinForward[table]?[src]?[dst] = nil
            state.joinBackward[table]?[dst]?[src] = nil
        }
        for change in request.joinInserts {
            guard case .pairs(let table, let forward) = RelationalLayout.toMany(change.relationship) else { continue }
            let source = ids.resolve(change.source), destination = ids.resolve(change.destination)
            guard let s = source.primaryKey, let d = destination.primaryKey else { continue }
            let (src, dst) = forward ? (s, d) : (d, s)
            let (srcEntity, dstEntity) = forward
                ? (source.entity.entityCode, destination.entity.entityCode) : (destination.entity.entityCode, source.entity.entityCode)
            if state.joinForward[table]?[src]?[dst] == nil {
                let entry = InMemoryState.JoinEntry(sourceEntity: srcEntity, destinationEntity: dstEntity)
                state.joinForward[table, default: [:]][src, default: [:]][dst] = entry
                state.joinBackward[table, default: [:]][dst, default: [:]][src] = entry
            }
        }
    }

    /// Writes each destination's position in an ordered relationship.
    private func apply(_ ordering: OrderingChange, to state: inout InMemoryState, ids: PermanentIDs) {
        guard let s = ids.resolve(ordering.source).primaryKey, ordering.relationship.isOrdered else { return }
        switch RelationalLayout.toMany(ordering.relationship) {
        case .inverseForeignKey:
            for (position, destination) in ordering.destinations.enumerated() {
                guard let d = ids.resolve(destination).primaryKey else { continue }
                state.foreignKeyOrders[ObjectIdentifier(ordering.relationship), default: [:]][d] = position
                state.orderedRelationships[ObjectIdentifier(ordering.relationship)] = ordering.relationship
            }
        case .pairs(let table, let forward):
            for (position, destination) in ordering.destinations.enumerated() {
                guard let d = ids.resolve(destination).primaryKey else { continue }
                let (src, dst) = forward ? (s, d) : (d, s)
                if forward {
                    state.joinForward[table]?[src]?[dst]?.destinationOrder = position
                    state.joinBackward[table]?[dst]?[src]?.destinationOrder = position
                } else {
                    state.joinForward[table]?[src]?[dst]?.sourceOrder = position
                    state.joinBackward[table]?[dst]?[src]?.sourceOrder = position
                }
            }
        }
    }

    func index(_ snapshot: Snapshot, pk: Int64, in state: inout InMemoryState) {
        for relationship in snapshot.entity.relationships where !relationship.isToMany {
            if case .objectID(let destination) = snapshot.values[relationship.index], let d = destination.primaryKey {
                state.foreignKeys[ObjectIdentifier(relationship), default: [:]][d, default: []].insert(pk)
            }
        }
        for (key, _, attributes) in RelationalLayout.uniquenessConstraints(of: snapshot.entity) {
            let values = attributes.map { snapshot.values[$0.index] }
            if RelationalLayout.canCollide(values) { state.uniqueness[key, default: [:]][values, default: []].insert(pk) }
        }
    }

    private func unindex(_ snapshot: Snapshot, pk: Int64, in state: inout InMemoryState) {
        for relationship in snapshot.entity.relationships where !relationship.isToMany {
            if case .objectID(let destination) = snapshot.values[relationship.index], let d = destination.primaryKey {
                state.foreignKeys[ObjectIdentifier(relationship)]?[d]?.remove(pk)
            }
        }
        for (key, _, attributes) in RelationalLayout.uniquenessConstraints(of: snapshot.entity) {
            let values = attributes.map { snapshot.values[$0.index] }
            state.uniqueness[key]?[values]?.remove(pk)
        }
    }
}
