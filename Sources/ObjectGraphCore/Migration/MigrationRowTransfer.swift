import Foundation

/// The rows of a store written with a migration's source model, carried over to its destination
/// model: every object keeps its key (so object IDs and URIs stay valid), renamed entities and
/// properties keep their values, new attributes take their defaults, relationships are carried in
/// whichever direction the old model stored them, and the conditions the new model sets on the
/// data (``MigrationMapping/checks``) are checked first. What the atomic stores and the PostgreSQL
/// store share: each reads the old rows its own way and writes the returned request its own way.
enum MigrationRowTransfer {
    /// The save request that writes `rows` (every row of the old store) with the new model.
    ///
    /// - Parameters:
    ///   - url: the store, for errors.
    ///   - newStore: the store the new IDs name.
    ///   - destinations: the destinations of an old to-many relationship for some of its sources
    ///     (in order, for an ordered one).
    /// - Throws: ``ObjectGraphError/migration`` naming the first condition of the new model the data breaks.
    static func request(
        mapping: MigrationMapping, url: URL, rows: [StoreRow], newStore: PersistentStore,
        destinations: (RelationshipDescription, [ManagedObjectID]) throws -> [ManagedObjectID: [ManagedObjectID]]
    ) throws -> StoreSaveRequest {
        var targets: [ObjectIdentifier: EntityDescription] = [:]
        for entity in mapping.destination.entitiesByCode {
            if let old = mapping.source(of: entity) { targets[ObjectIdentifier(old)] = entity }
        }
        func newID(_ id: ManagedObjectID) -> ManagedObjectID? {
            guard let entity = targets[ObjectIdentifier(id.entity)], let key = id.primaryKey else { return nil }
            return ManagedObjectID(entity: entity, store: newStore, primaryKey: key)
        }
        func oldIDs(of entity: EntityDescription) -> [ManagedObjectID] {
            rows.filter { $0.id.entity.isKindOf(entity: entity) }.map(\.id)
        }
        /// The pairs of an old relationship, in its direction.
        func pairs(_ relationship: RelationshipDescription) throws -> [(ManagedObjectID, [ManagedObjectID])] {
            guard let entity = relationship.entity else { return [] }
            if !relationship.isToMany {
                return rows.compactMap { row in
                    guard row.id.entity.isKindOf(entity: entity), case .objectID(let d)? = row.snapshot?.values[relationship.index] else { return nil }
                    return (row.id, [d])
                }
            }
            let found = try destinations(relationship, oldIDs(of: entity))
            return found.sorted { ($0.key.primaryKey ?? 0) < ($1.key.primaryKey ?? 0) }.filter { !$0.value.isEmpty }.map { ($0.key, $0.value) }
        }
        /// The pairs of a new relationship, from the old relationship or the old inverse, reversed.
        func newPairs(_ relationship: RelationshipDescription) throws -> [(ManagedObjectID, [ManagedObjectID])] {
            if let was = mapping.source(of: relationship) as? RelationshipDescription { return try pairs(was) }
            if let inverse = relationship.inverseRelationship, let was = mapping.source(of: inverse) as? RelationshipDescription {
                var reversed: [ManagedObjectID: [ManagedObjectID]] = [:]
                for (s, ds) in try pairs(was) { for d in ds { reversed[d, default: []].append(s) } }
                return reversed.sorted { ($0.key.primaryKey ?? 0) < ($1.key.primaryKey ?? 0) }.map { ($0.key, $0.value) }
            }
            return []
        }

        // The conditions the new model sets on the data.
        for check in mapping.checks {
            var count = 0
            switch check {
            case .noRows(let entities, _, _):
                count = rows.filter { row in entities.contains { $0 === row.id.entity } }.count
            case .noNils(let entities, let attribute, _, _):
                count = rows.filter { row in entities.contains { $0 === row.id.entity } && (row.snapshot?.values[attribute.index].isNull ?? true) }.count
            case .unique(let entities, let attributes, _, _):
                var groups: [[Value]: Int] = [:]
                for row in rows where entities.contains(where: { $0 === row.id.entity }) {
                    groups[attributes.map { row.snapshot?.values[$0.index] ?? .null }, default: 0] += 1
                }
                count = groups.values.filter { $0 > 1 }.count
            case .atMostOne(let relationship, _, _):
                count = try pairs(relationship).filter { $0.1.count > 1 }.count
            }
            if count > 0 { throw check.failure(count: count, url: url) }
        }

        // The objects, with their keys.
        var toOne: [ObjectIdentifier: [ManagedObjectID: ManagedObjectID]] = [:]
        for entity in mapping.destination.entitiesByCode {
            for relationship in entity.declaredProperties.compactMap({ $0 as? RelationshipDescription }) where !relationship.isToMany {
                if let was = mapping.source(of: relationship) as? RelationshipDescription, !was.isToMany { continue }
                var map: [ManagedObjectID: ManagedObjectID] = [:]
                for (s, ds) in try newPairs(relationship) { if let d = ds.first { map[s] = d } }
                toOne[ObjectIdentifier(relationship)] = map
            }
        }
        var request = StoreSaveRequest()
        for row in rows {
            guard let id = newID(row.id), let snapshot = row.snapshot else { continue }
            let entity = id.entity
            let values = entity.properties.map { property -> Value in
                if property.isTransient { return .null }
                if let attribute = property as? AttributeDescription {
                    guard let was = mapping.source(of: attribute) as? AttributeDescription else { return attribute.defaultStoredValue }
                    var value = snapshot.values[was.index]
                    if case .int(let v) = value, [.double, .float].contains(attribute.attributeType) { value = .double(Double(v)) }
                    if value.isNull && !attribute.isOptional { value = attribute.defaultStoredValue }
                    return value
                }
                guard let relationship = property as? RelationshipDescription, !relationship.isToMany else { return .null }
                if let was = mapping.source(of: relationship) as? RelationshipDescription, !was.isToMany {
                    if case .objectID(let d) = snapshot.values[was.index] { return newID(d).map(Value.objectID) ?? .null }
                    return .null
                }
                return toOne[ObjectIdentifier(relationship)]?[row.id].flatMap(newID).map(Value.objectID) ?? .null
            }
            request.inserted.append(SavedObject(id: id, entity: entity, values: values, changedIndices: [], expectedVersion: nil))
        }
        // To-many relationships kept as pairs (all but those read through their inverse's key), and orders.
        var done: Set<ObjectIdentifier> = []
        for entity in mapping.destination.entitiesByCode {
            for relationship in entity.declaredProperties.compactMap({ $0 as? RelationshipDescription }) where relationship.isToMany {
                guard relationship.usesJoinTable || relationship.isOrdered else { continue }
                let pairs = try newPairs(relationship)
                if relationship.usesJoinTable && !done.contains(ObjectIdentifier(relationship)) {
                    done.insert(ObjectIdentifier(relationship))
                    if let inverse = relationship.inverseRelationship { done.insert(ObjectIdentifier(inverse)) }
                    for (s, ds) in pairs {
                        guard let source = newID(s) else { continue }
                        for d in ds { if let destination = newID(d) { request.joinInserts.append(JoinChange(relationship: relationship, source: source, destination: destination)) } }
                    }
                }
                if relationship.isOrdered {
                    for (s, ds) in pairs {
                        guard let source = newID(s) else { continue }
                        request.orderings.append(OrderingChange(relationship: relationship, source: source, destinations: ds.compactMap(newID)))
                    }
                }
            }
        }
        return request
    }

    /// The largest key of each new root entity (by entity code), from the old store's (by old entity code).
    static func maxKeys(mapping: MigrationMapping, old: [Int: Int64]) -> [Int: Int64] {
        var keys: [Int: Int64] = [:]
        for entity in mapping.destination.entitiesByCode {
            guard let was = mapping.source(of: entity), let key = old[was.entityCode] else { continue }
            keys[entity.rootEntity.entityCode] = max(keys[entity.rootEntity.entityCode] ?? 0, key)
        }
        return keys
    }
}
