import Foundation

/// What a lightweight migration from one model to the next does, inferred from the two models
/// (Core Data's inferred mapping model): which entity and property of the old model each one of
/// the new model comes from, and what must hold of the data for the migration to run.
///
/// Inference refuses, before anything is written, what it cannot map: a type change without a
/// conversion, a property that changed between attribute and relationship, a relationship whose
/// destination changed, two entities merged into one table.
struct MigrationMapping: Sendable {
    let source: ManagedObjectModel
    let destination: ManagedObjectModel
    /// The old entity each new entity comes from (absent: a new entity), by new entity.
    private(set) var entitySources: [ObjectIdentifier: EntityDescription] = [:]
    /// The old property each new stored property comes from (absent: a new property), by new property.
    private(set) var propertySources: [ObjectIdentifier: PropertyDescription] = [:]
    /// What changed, one line each, for plans.
    private(set) var changes: [String] = []
    /// What must hold of the store's data; checked before the migration writes.
    private(set) var checks: [DataCheck] = []

    /// A condition on the old store's rows.
    enum DataCheck: Sendable {
        /// No row of `entities` (old entities) exists: `attribute` of `entity` is required, new and has no default.
        case noRows(entities: [EntityDescription], entity: String, attribute: String)
        /// No row of `entities` has nil in `attribute` (old): it becomes required without a default.
        case noNils(entities: [EntityDescription], attribute: AttributeDescription, entity: String, name: String)
        /// No two rows of `entities` share the values of `attributes` (old): a new uniqueness constraint.
        case unique(entities: [EntityDescription], attributes: [AttributeDescription], entity: String, names: [String])
        /// No source of `relationship` (old, to-many) has more than one destination: it becomes to-one.
        case atMostOne(relationship: RelationshipDescription, entity: String, name: String)
    }

    /// The new entity's old entity.
    func source(of entity: EntityDescription) -> EntityDescription? { entitySources[ObjectIdentifier(entity)] }
    /// The new property's old property.
    func source(of property: PropertyDescription) -> PropertyDescription? { propertySources[ObjectIdentifier(property)] }

    /// The new entity each old entity became (nil: removed).
    func destination(of entity: EntityDescription) -> EntityDescription? {
        destination.entitiesByCode.first { source(of: $0) === entity }
    }

    /// Infers the mapping from `source` to `destination`.
    ///
    /// - Throws: ``ObjectGraphError/migration`` naming the entity, the property and why.
    init(from source: ManagedObjectModel, to destination: ManagedObjectModel) throws {
        self.source = source
        self.destination = destination
        func refuse(_ entity: String, _ property: String?, _ why: String) -> ObjectGraphError {
            let subject = property.map { "\(entity).\($0)" } ?? entity
            return ObjectGraphError(
                .migration, "Cannot infer a migration for \(subject): \(why); nothing was migrated", entityName: entity, key: property)
        }

        // Entities: by name, or by the renaming identifier (the old name, or an identifier both versions carry).
        var taken: [ObjectIdentifier: EntityDescription] = [:]
        for entity in destination.entitiesByCode {
            let key = entity.renamingIdentifier ?? entity.name
            let old = source.entitiesByName[key]
                ?? source.entitiesByCode.first { ($0.renamingIdentifier ?? $0.name) == key }
                ?? (entity.renamingIdentifier != nil ? source.entitiesByName[entity.name] : nil)
            guard let old else {
                changes.append("\(entity.name): new entity")
                continue
            }
            if let other = taken[ObjectIdentifier(old)] {
                throw refuse(entity.name, nil, "both \(other.name) and \(entity.name) come from the old entity \(old.name)")
            }
            taken[ObjectIdentifier(old)] = entity
            entitySources[ObjectIdentifier(entity)] = old
            if old.name != entity.name { changes.append("\(entity.name): renamed from \(old.name)") }
        }
        for old in source.entitiesByCode where taken[ObjectIdentifier(old)] == nil {
            changes.append("\(old.name): removed, with its rows")
        }
        // The rows of one new table come from one old table: two old tables' keys could collide.
        for root in destination.entitiesByCode where root.superentity == nil {
            let tables = Set(root.selfAndDescendants.compactMap { entitySources[ObjectIdentifier($0)]?.rootEntity.name })
            if tables.count > 1 {
                throw refuse(root.name, nil, "its entities come from entities stored apart before (\(tables.sorted().joined(separator: ", "))), whose rows cannot share one table")
            }
        }

        for entity in destination.entitiesByCode {
            let old = entitySources[ObjectIdentifier(entity)]
            for property in entity.declaredProperties where !property.isTransient {
                let key = property.renamingIdentifier ?? property.name
                let candidate = old.flatMap { old in
                    old.propertiesByName[key]
                        ?? old.properties.first { ($0.renamingIdentifier ?? $0.name) == key }
                        ?? (property.renamingIdentifier != nil ? old.propertiesByName[property.name] : nil)
                }
                let previous = candidate.flatMap { $0.isTransient ? nil : $0 }
                if let previous, previous.name != property.name {
                    changes.append("\(entity.name).\(property.name): renamed from \(previous.name)")
                }
                switch (property, previous) {
                case (let attribute as AttributeDescription, nil):
                    if !attribute.isOptional && attribute.defaultStoredValue.isNull {
                        let rows = entity.selfAndDescendants.compactMap { entitySources[ObjectIdentifier($0)] }
                        if !rows.isEmpty { checks.append(.noRows(entities: rows, entity: entity.name, attribute: attribute.name)) }
                    }
                    if old != nil { changes.append("\(entity.name).\(attribute.name): new attribute" + (attribute.defaultStoredValue.isNull ? "" : " (default \(attribute.defaultStoredValue))")) }
                case (let attribute as AttributeDescription, let was as AttributeDescription):
                    guard Self.converts(was.attributeType, to: attribute.attributeType) else {
                        throw refuse(entity.name, attribute.name, "its type changed from \(was.attributeType) to \(attribute.attributeType), which has no lossless conversion")
                    }
                    if was.attributeType != attribute.attributeType {
                        changes.append("\(entity.name).\(attribute.name): widened from \(was.attributeType) to \(attribute.attributeType)")
                    }
                    if was.isOptional && !attribute.isOptional {
                        if attribute.defaultStoredValue.isNull {
                            let rows = entity.selfAndDescendants.compactMap { entitySources[ObjectIdentifier($0)] }
                            checks.append(.noNils(entities: rows, attribute: was, entity: entity.name, name: attribute.name))
                            changes.append("\(entity.name).\(attribute.name): now required (every row has a value)")
                        } else {
                            changes.append("\(entity.name).\(attribute.name): now required, nil becomes \(attribute.defaultStoredValue)")
                        }
                    } else if !was.isOptional && attribute.isOptional {
                        changes.append("\(entity.name).\(attribute.name): now optional")
                    }
                    propertySources[ObjectIdentifier(attribute)] = was
                case (let relationship as RelationshipDescription, nil):
                    if old != nil { changes.append("\(entity.name).\(relationship.name): new relationship") }
                case (let relationship as RelationshipDescription, let was as RelationshipDescription):
                    guard let wasDestination = was.destinationEntity, let destinationEntity = relationship.destinationEntity,
                          let mapped = destination.entitiesByCode.first(where: { entitySources[ObjectIdentifier($0)] === wasDestination }),
                          mapped.isKindOf(entity: destinationEntity)
                    else {
                        throw refuse(entity.name, relationship.name, "its destination changed from \(was.destinationEntityName) to \(relationship.destinationEntityName)")
                    }
                    if was.isToMany && !relationship.isToMany {
                        checks.append(.atMostOne(relationship: was, entity: entity.name, name: relationship.name))
                        changes.append("\(entity.name).\(relationship.name): to-many becomes to-one (every object has at most one destination)")
                    } else if !was.isToMany && relationship.isToMany {
                        changes.append("\(entity.name).\(relationship.name): to-one becomes to-many")
                    }
                    propertySources[ObjectIdentifier(relationship)] = was
                case (_, let was?):
                    let kinds = was is AttributeDescription ? ("an attribute", "a relationship") : ("a relationship", "an attribute")
                    throw refuse(entity.name, property.name, "it was \(kinds.0) (\(was.name)) and is now \(kinds.1)")
                default:
                    break
                }
            }
            // Removed properties.
            if let old {
                let kept = Set(entity.properties.compactMap { propertySources[ObjectIdentifier($0)] }.map(ObjectIdentifier.init))
                for property in old.declaredProperties where !property.isTransient && !kept.contains(ObjectIdentifier(property)) {
                    // A relationship mapped only through its inverse is not removed.
                    if let relationship = property as? RelationshipDescription, let inverse = relationship.inverseRelationship,
                       destination.entitiesByCode.contains(where: { $0.properties.contains { propertySources[ObjectIdentifier($0)] === inverse } }),
                       entity.relationshipsByName.values.contains(where: { $0.inverseRelationship.map { propertySources[ObjectIdentifier($0)] === inverse } ?? false }) {
                        continue
                    }
                    changes.append("\(entity.name).\(property.name): removed (was \(old.name).\(property.name))")
                }
            }
            // New uniqueness constraints must hold of the rows there are.
            for constraint in entity.uniquenessConstraints {
                let attributes = constraint.compactMap { entity.attributesByName[$0] }
                let previous = attributes.compactMap { propertySources[ObjectIdentifier($0)] as? AttributeDescription }
                let hadIt = old.map { old in
                    old.uniquenessConstraints.contains { Set($0) == Set(previous.map(\.name)) } && previous.count == attributes.count
                } ?? false
                if hadIt { continue }
                changes.append("\(entity.name): new uniqueness constraint (\(constraint.joined(separator: ", ")))")
                let rows = entity.selfAndDescendants.compactMap { entitySources[ObjectIdentifier($0)] }
                if !rows.isEmpty {
                    checks.append(.unique(entities: rows, attributes: previous, entity: entity.name, names: constraint))
                }
            }
            if let old {
                for constraint in old.uniquenessConstraints where !entity.uniquenessConstraints.contains(where: { new in
                    Set(new.compactMap { entity.attributesByName[$0].flatMap { propertySources[ObjectIdentifier($0)]?.name } }) == Set(constraint)
                }) {
                    changes.append("\(entity.name): uniqueness constraint (\(constraint.joined(separator: ", "))) removed")
                }
                let oldIndexes = Set(old.indexes.map { $0.joined(separator: ",") })
                let newIndexes = Set(entity.indexes.map { $0.joined(separator: ",") })
                for index in newIndexes.subtracting(oldIndexes).sorted() { changes.append("\(entity.name): new index (\(index))") }
                for index in oldIndexes.subtracting(newIndexes).sorted() { changes.append("\(entity.name): index (\(index)) removed") }
                if old.superentity?.name != entity.superentity?.name, let up = entity.superentity {
                    changes.append("\(entity.name): now a sub-entity of \(up.name)")
                }
            }
        }
        // Relationships mapped through their inverse only (a new to-one whose inverse existed).
        for entity in destination.entitiesByCode {
            for relationship in entity.declaredProperties.compactMap({ $0 as? RelationshipDescription })
            where propertySources[ObjectIdentifier(relationship)] == nil && !relationship.isTransient {
                guard let inverse = relationship.inverseRelationship, let was = propertySources[ObjectIdentifier(inverse)] as? RelationshipDescription,
                      !relationship.isToMany, was.inverseRelationship == nil || was.inverseRelationship!.isToMany else { continue }
                // The new to-one reads the old pairs of its inverse, reversed: each object needs at most one.
                if was.isToMany, was.inverseRelationship == nil {
                    checks.append(.atMostOne(relationship: was, entity: entity.name, name: relationship.name))
                }
            }
        }
    }

    /// Whether a value of type `old` converts to `new` without loss: the same type, or a wider number.
    static func converts(_ old: AttributeType, to new: AttributeType) -> Bool {
        if old == new { return true }
        let integers: [AttributeType] = [.integer16, .integer32, .integer64]
        if let a = integers.firstIndex(of: old), let b = integers.firstIndex(of: new) { return a <= b }
        if old == .float && new == .double { return true }
        if integers.contains(old) && new == .double { return true }
        if old == .integer16 && new == .float { return true }
        return false
    }
}

extension MigrationMapping.DataCheck {
    /// The refusal when the check fails, naming the entity, the property and why.
    func failure(count: Int, url: URL) -> ObjectGraphError {
        let (entity, key, why): (String, String, String)
        switch self {
        case .noRows(_, let e, let attribute):
            (entity, key, why) = (e, attribute, "the new attribute is required and has no default value, and \(count) row(s) exist; give it a default value or make it optional")
        case .noNils(_, _, let e, let name):
            (entity, key, why) = (e, name, "it becomes required without a default value, and \(count) row(s) have no value; give it a default value")
        case .unique(_, _, let e, let names):
            (entity, key, why) = (e, names.joined(separator: ","), "the new uniqueness constraint (\(names.joined(separator: ", "))) is violated by \(count) group(s) of rows with equal values")
        case .atMostOne(_, let e, let name):
            (entity, key, why) = (e, name, "it becomes to-one, and \(count) object(s) have more than one destination")
        }
        return ObjectGraphError(
            .migration, "Cannot migrate the store at \(url.path): \(entity).\(key): \(why); the store was left as it was",
            entityName: entity, key: key, url: url)
    }
}
