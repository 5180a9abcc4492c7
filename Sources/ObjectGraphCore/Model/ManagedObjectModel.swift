import Foundation

/// A model: the entities of an object graph (`NSManagedObjectModel`).
///
/// Building a model resolves every relationship's destination and inverse and every entity's
/// inheritance. A model with a mistake in it (a dangling destination or inverse, a duplicate name,
/// an unknown super-entity) is refused: ``validate()`` throws an ``ObjectGraphError/invalidModel``
/// error that names it, and so does adding a store to a coordinator that uses the model.
///
/// A model is immutable once built and may be shared by any number of coordinators and queues.
public final class ManagedObjectModel: @unchecked Sendable, CustomStringConvertible {
    /// The entities, in the order given.
    public let entities: [EntityDescription]
    /// The entities by name.
    public let entitiesByName: [String: EntityDescription]
    /// Problems found while building the model, the warnings among them (``validationWarnings``);
    /// empty for a valid model.
    public let validationErrors: [ObjectGraphError]
    /// The problems of ``validationErrors`` that do not refuse the model, because Core Data accepts
    /// them and momc only warns of them: to-one relationships whose inverses cross (A.x names B.y as
    /// its inverse, B.y names another), as early Artsy Folio models have. Each relationship keeps
    /// the inverse it declares, as in Core Data. A coordinator logs each as a warning when it is
    /// created with the model.
    public let validationWarnings: [ObjectGraphError]
    /// The validation errors that refuse the model (``validate()``): all but the warnings.
    let refusingErrors: [ObjectGraphError]
    /// A hash of everything in the model that affects how objects are stored. Two models with the
    /// same hash read and write the same stores.
    public let versionHash: String
    /// Version identifiers, free-form, as in Core Data.
    public var versionIdentifiers: Set<String> = [] {
        didSet { forgetCompiledModel() }
    }
    /// What a Core Data model file holds that ObjectGraph loaded without acting on it, or did not load
    /// (fetched properties, derived and composite attributes, fetch request templates): empty for a
    /// model built in code. See <doc:OpeningCoreDataStores>.
    public internal(set) var unsupportedFeatures: [UnsupportedModelFeature] = []

    /// Named configurations: sets of entities a store can be added with.
    private let configurationEntities = Protected<[String: [EntityDescription]]>([:])

    /// The names of the model's configurations (Core Data's `configurations`).
    public var configurations: [String] { configurationEntities.withLock { $0.keys.sorted() } }

    /// The entities of a configuration; nil when the model has no configuration of that name.
    public func entities(forConfigurationName name: String) -> [EntityDescription]? {
        configurationEntities.withLock { $0[name] }
    }

    /// Defines a configuration: the entities a store added with it holds (sub-entities with
    /// their super-entity). Do it before adding stores.
    ///
    /// ```swift
    /// model.setEntities([model.entitiesByName["Note"]!], forConfigurationName: "Notes")
    /// try coordinator.addPersistentStore(type: .sqlite, configuration: "Notes", at: notesURL)
    /// ```
    public func setEntities(_ entities: [EntityDescription], forConfigurationName name: String) {
        let own = entities.compactMap { entitiesByName[$0.name] }
        configurationEntities.withLock { $0[name] = own }
        forgetCompiledModel()
    }

    /// What stores ask of the model each time one is added or written, computed once: the entities'
    /// version hashes (SHA-256 over every stored property) and the compiled model a store records
    /// (a keyed archive, deflated). Without it, adding an atomic store spent nine tenths of its time
    /// on them.
    struct Derived {
        var versionHashes: [String: Data]?
        var modelCache: Data?
        /// Bumped when something the compiled model records changes (``versionIdentifiers``, a
        /// configuration, an entity's or property's `userInfo`): a compiled model made before is not kept.
        var modelCacheGeneration = 0
    }

    let derived = Protected(Derived())

    /// Drops the cached compiled model: what it records changed.
    func forgetCompiledModel() {
        derived.withLock {
            $0.modelCache = nil
            $0.modelCacheGeneration += 1
        }
    }

    /// Entities sorted by name; an entity's `entityCode` is its position here.
    let entitiesByCode: [EntityDescription]

    /// Builds a model from entity descriptions.
    ///
    /// Entities that already belong to another model are copied.
    public init(entities: [EntityDescription]) {
        let owned = entities.map { $0.managedObjectModel == nil ? $0 : $0.copy() }
        self.entities = owned
        var errors: [ObjectGraphError] = []
        var byName: [String: EntityDescription] = [:]
        for entity in owned {
            if byName[entity.name] != nil {
                errors.append(ObjectGraphError(.invalidModel, "Duplicate entity name '\(entity.name)'", entityName: entity.name))
            }
            byName[entity.name] = entity
        }
        self.entitiesByName = byName
        self.entitiesByCode = owned.sorted { $0.name < $1.name }
        var tolerated: [ObjectGraphError] = []
        Self.resolve(owned, byName: byName, errors: &errors, tolerated: &tolerated)
        self.validationErrors = errors + tolerated
        self.validationWarnings = tolerated
        self.refusingErrors = errors
        self.versionHash = Self.computeVersionHash(entitiesByCode)
        for (code, entity) in entitiesByCode.enumerated() { entity.entityCode = code }
        for entity in owned { entity.managedObjectModel = self }
    }

    /// Builds a model, throwing when it is invalid.
    ///
    /// - Throws: ``ObjectGraphError/invalidModel`` naming every mistake.
    public convenience init(validating entities: [EntityDescription]) throws {
        self.init(entities: entities)
        try validate()
    }

    /// Throws when the model is invalid.
    ///
    /// To-one relationships whose inverses cross (A.x names B.y as its inverse, B.y names another)
    /// do not refuse the model, as in Core Data: they are listed in ``validationWarnings``, and
    /// each keeps the inverse it declares.
    ///
    /// - Throws: ``ObjectGraphError/invalidModel`` naming every mistake.
    public func validate() throws {
        guard let first = refusingErrors.first else { return }
        if refusingErrors.count == 1 { throw first }
        throw ObjectGraphError(
            .invalidModel, "The model has \(refusingErrors.count) errors: "
                + refusingErrors.map(\.message).joined(separator: "; "),
            underlyingErrors: refusingErrors)
    }

    public var description: String { "ManagedObjectModel(\(entities.map(\.name).joined(separator: ", ")))" }

    // MARK: - Resolution

    private static func resolve(_ entities: [EntityDescription], byName: [String: EntityDescription], errors: inout [ObjectGraphError],
                                tolerated: inout [ObjectGraphError]) {
        // Inheritance.
        for entity in entities {
            entity.subentities = []
        }
        for entity in entities {
            guard let superName = entity.superentityName else { continue }
            guard let superentity = byName[superName] else {
                errors.append(ObjectGraphError(
                    .invalidModel, "Entity '\(entity.name)' inherits from unknown entity '\(superName)'",
                    entityName: entity.name))
                continue
            }
            entity.superentity = superentity
            superentity.subentities.append(entity)
        }
        // A cycle is cut where the walk up from an entity closes it: the entity that inherits from
        // one already passed loses its super-entity, and leaves that one's sub-entities (walks down
        // the tree, as `selfAndDescendants` below, would otherwise never end). An entity whose own
        // parent is itself is such a cycle.
        for entity in entities {
            var seen: Set<ObjectIdentifier> = [ObjectIdentifier(entity)]
            var root = entity
            while let up = root.superentity {
                if !seen.insert(ObjectIdentifier(up)).inserted {
                    errors.append(ObjectGraphError(
                        .invalidModel, "Entity '\(root.name)' is part of an inheritance cycle (it inherits from '\(up.name)', which inherits from it)",
                        entityName: root.name))
                    up.subentities.removeAll { $0 === root }
                    root.superentity = nil
                    break
                }
                root = up
            }
            entity.rootEntity = root
        }
        // Properties, top-down so inherited ones come first with stable indices.
        var done: Set<ObjectIdentifier> = []
        func layOut(_ entity: EntityDescription) {
            guard done.insert(ObjectIdentifier(entity)).inserted else { return }
            var properties: [PropertyDescription] = []
            if let up = entity.superentity {
                layOut(up)
                properties = up.properties
            }
            var names = Set(properties.map(\.name))
            for property in entity.declaredProperties {
                if !names.insert(property.name).inserted {
                    errors.append(ObjectGraphError(
                        .invalidModel, "Entity '\(entity.name)' has more than one property named '\(property.name)'",
                        entityName: entity.name, key: property.name))
                    continue
                }
                property.entity = entity
                property.index = properties.count
                properties.append(property)
                if let attribute = property as? AttributeDescription { errors += attribute.ruleErrors(of: entity) }
            }
            entity.properties = properties
            entity.propertyNames = properties.map(\.name)
            entity.propertiesByName = Dictionary(properties.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
            entity.attributes = properties.compactMap { $0 as? AttributeDescription }
            entity.relationships = properties.compactMap { $0 as? RelationshipDescription }
            entity.attributesByName = Dictionary(entity.attributes.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
            entity.relationshipsByName = Dictionary(entity.relationships.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
            entity.storedAttributes = entity.attributes.filter { !$0.isTransient }
            entity.transformableIndices = PropertyMask(entity.attributes.filter { $0.attributeType == .transformable }.map(\.index))
        }
        for entity in entities { layOut(entity) }
        for entity in entities {
            var all: [EntityDescription] = []
            func walk(_ e: EntityDescription) {
                all.append(e)
                e.subentities.forEach(walk)
            }
            entity.subentities.forEach(walk)
            entity.descendants = all
        }
        // Relationships: destinations, then inverses.
        for entity in entities {
            for relationship in entity.declaredProperties.compactMap({ $0 as? RelationshipDescription }) {
                guard let destination = byName[relationship.destinationEntityName] else {
                    errors.append(ObjectGraphError(
                        .invalidModel,
                        "Relationship '\(entity.name).\(relationship.name)' has unknown destination entity '\(relationship.destinationEntityName)'",
                        entityName: entity.name, key: relationship.name))
                    continue
                }
                relationship.destinationEntity = destination
                if relationship.minCount < 0 || (relationship.maxCount > 0 && relationship.maxCount < relationship.minCount) {
                    errors.append(ObjectGraphError(
                        .invalidModel, "Relationship '\(entity.name).\(relationship.name)' has invalid count bounds",
                        entityName: entity.name, key: relationship.name))
                }
            }
        }
        for entity in entities {
            for relationship in entity.declaredProperties.compactMap({ $0 as? RelationshipDescription }) {
                guard let inverseName = relationship.inverseName, let destination = relationship.destinationEntity else { continue }
                guard let inverse = destination.relationshipsByName[inverseName] else {
                    errors.append(ObjectGraphError(
                        .invalidModel,
                        "Relationship '\(entity.name).\(relationship.name)' names inverse '\(inverseName)', which entity '\(destination.name)' does not have",
                        entityName: entity.name, key: relationship.name))
                    continue
                }
                if let inverseDestination = inverse.destinationEntity, !entity.isKindOf(entity: inverseDestination) {
                    errors.append(ObjectGraphError(
                        .invalidModel,
                        "Relationship '\(entity.name).\(relationship.name)' names inverse '\(destination.name).\(inverseName)', whose destination is '\(inverseDestination.name)', not '\(entity.name)'",
                        entityName: entity.name, key: relationship.name))
                    continue
                }
                if let back = inverse.inverseName, back != relationship.name {
                    // Crossed inverses: the inverse names a third relationship as its own inverse.
                    // Between to-ones, momc only warns and Core Data keeps each inverse as declared:
                    // so does ObjectGraph (setting this relationship sets the inverse on the
                    // destination, whose own inverse stays the one it names).
                    guard !relationship.isToMany && !inverse.isToMany else {
                        errors.append(ObjectGraphError(
                            .invalidModel,
                            "Relationship '\(entity.name).\(relationship.name)' names inverse '\(destination.name).\(inverseName)', whose own inverse is '\(back)'",
                            entityName: entity.name, key: relationship.name))
                        continue
                    }
                    tolerated.append(ObjectGraphError(
                        .invalidModel,
                        "Relationship '\(entity.name).\(relationship.name)' names inverse '\(destination.name).\(inverseName)', whose own inverse is '\(back)': "
                            + "kept as declared, as Core Data does (setting \(entity.name).\(relationship.name) sets \(destination.name).\(inverseName))",
                        entityName: entity.name, key: relationship.name))
                    relationship.inverseRelationship = inverse
                    continue
                }
                relationship.inverseRelationship = inverse
                inverse.inverseRelationship = relationship
            }
        }
        // Uniqueness constraints.
        for entity in entities {
            for constraint in entity.uniquenessConstraints {
                for name in constraint where entity.attributesByName[name] == nil {
                    errors.append(ObjectGraphError(
                        .invalidModel, "Uniqueness constraint of entity '\(entity.name)' names unknown attribute '\(name)'",
                        entityName: entity.name, key: name))
                }
            }
            for index in entity.indexes {
                for name in index where entity.attributesByName[name] == nil && entity.relationshipsByName[name].map({ $0.isToMany }) ?? true {
                    errors.append(ObjectGraphError(
                        .invalidModel, "Index of entity '\(entity.name)' names unknown attribute '\(name)'",
                        entityName: entity.name, key: name))
                }
            }
        }
    }

    // MARK: - Version hash

    private static func computeVersionHash(_ entities: [EntityDescription]) -> String {
        var text = ""
        for entity in entities {
            text += "E:\(entity.name)|\(entity.superentityName ?? "")|\(entity.isAbstract)\n"
            for property in entity.declaredProperties.sorted(by: { $0.name < $1.name }) {
                if let attribute = property as? AttributeDescription {
                    text += "A:\(attribute.name)|\(attribute.attributeType.rawValue)|\(attribute.isOptional)|\(attribute.isTransient)\n"
                } else if let relationship = property as? RelationshipDescription {
                    // A crossed inverse (one naming another relationship as its own inverse) hashes as
                    // none, as before such inverses were kept: stores written then still open.
                    let inverse = relationship.inverseRelationship.flatMap { inverse in
                        inverse.inverseName == nil || inverse.inverseName == relationship.name ? inverse.name : nil
                    }
                    text += "R:\(relationship.name)|\(relationship.destinationEntityName)|\(inverse ?? "")|"
                        + "\(relationship.isToMany)|\(relationship.isOrdered)\n"
                }
            }
            for constraint in entity.uniquenessConstraints { text += "U:\(constraint.joined(separator: ","))\n" }
        }
        return StableHash.hex(of: text)
    }
}

/// A hash that is the same in every process and on every platform (unlike `Hasher`): two FNV-1a
/// 64-bit hashes with different offsets.
enum StableHash {
    static func hex(of text: String) -> String {
        var a: UInt64 = 0xcbf2_9ce4_8422_2325
        var b: UInt64 = 0x8422_2325_cbf2_9ce4
        for byte in text.utf8 {
            a = (a ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
            b = (b ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
        }
        return String(a, radix: 16) + String(b, radix: 16)
    }
}
