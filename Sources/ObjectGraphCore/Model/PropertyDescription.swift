import Foundation

// Descriptions are classes, as in Core Data. They are mutated only while the ManagedObjectModel
// that owns them is being built (resolution of entities, inverses and indices); after that they are
// immutable and shared by every queue, hence `@unchecked Sendable`.

/// A property of an entity: an attribute or a relationship (`NSPropertyDescription`).
///
/// Build them with ``attribute(_:_:isOptional:defaultValue:isTransient:minimum:maximum:minimumLength:maximumLength:regularExpression:valueType:isIndexed:)``
/// and ``relationship(_:destination:toMany:isOrdered:inverse:deleteRule:isOptional:minimumCount:maximumCount:)``:
///
/// ```swift
/// EntityDescription(name: "Note", properties: [
///     .attribute("title", .string, isOptional: false, defaultValue: ""),
///     .relationship("folder", destination: "Folder", toMany: false, inverse: "notes"),
/// ])
/// ```
public class PropertyDescription: @unchecked Sendable, CustomStringConvertible {
    /// The property's name, the key of `value(forKey:)`.
    public let name: String
    /// Whether nil (or, for a to-many relationship, no destination) is valid.
    public let isOptional: Bool
    /// Whether the property is kept in memory only, never stored.
    public let isTransient: Bool
    /// Free-form information, as in Core Data.
    public var userInfo: [String: String] = [:] {
        didSet { entity?.managedObjectModel?.forgetCompiledModel() }
    }

    /// The property's name in the model version it was renamed from, as in Core Data: a lightweight
    /// migration maps a property of the old model onto the new one whose renaming identifier is the old name.
    ///
    /// ```swift
    /// let title = PropertyDescription.attribute("title", .string)
    /// title.renamingIdentifier = "name"   // was "name" in the previous version
    /// ```
    ///
    /// It is a programmer error to set it once the model that owns the property is built.
    public var renamingIdentifier: String? {
        get { buildTimeFields.renamingIdentifier }
        set {
            precondition(entity?.managedObjectModel == nil, "renamingIdentifier of '\(name)' set after its model was built")
            buildTimeFields.renamingIdentifier = newValue
        }
    }

    /// A string mixed into the property's version hash (Core Data's `versionHashModifier`), to mark a
    /// change of meaning that leaves the schema as it was.
    ///
    /// It is a programmer error to set it once the model that owns the property is built.
    public var versionHashModifier: String? {
        get { buildTimeFields.versionHashModifier }
        set {
            precondition(entity?.managedObjectModel == nil, "versionHashModifier of '\(name)' set after its model was built")
            buildTimeFields.versionHashModifier = newValue
        }
    }

    /// Whether Core Data's model marks the property read-only (derived attributes are); part of the
    /// version hash.
    var isReadOnly = false
    /// Fields a model file sets while it is read; frozen with the model.
    private var buildTimeFields = (renamingIdentifier: String?.none, versionHashModifier: String?.none)

    /// Copies the fields a model file sets onto `copy`.
    func copyFileFields(to copy: PropertyDescription) {
        copy.userInfo = userInfo
        copy.buildTimeFields = buildTimeFields
        copy.isReadOnly = isReadOnly
    }

    /// The entity that declares the property.
    ///
    /// An `unowned` reference, as in Core Data (where it is not retained either): the entity owns the
    /// property. A `weak` one would give every entity a side table, and then every retain and release
    /// of an entity — on every property access of every object — takes the runtime's slow path.
    /// Reading it after the entity is gone stops the program (Core Data's reference dangles).
    public internal(set) unowned(safe) var entity: EntityDescription?
    /// Position of the property in the values of every object of its entity and its sub-entities.
    var index: Int = -1

    init(name: String, isOptional: Bool, isTransient: Bool) {
        self.name = name
        self.isOptional = isOptional
        self.isTransient = isTransient
    }

    public var description: String { name }

    func copy() -> PropertyDescription { fatalError("abstract") }

    /// An attribute.
    ///
    /// - Parameters:
    ///   - name: the attribute's name, a key of `value(forKey:)`.
    ///   - type: how its values are stored.
    ///   - isOptional: whether nil is valid at save.
    ///   - defaultValue: the value of a new object.
    ///   - isTransient: kept in objects, never written to a store.
    ///   - minimum: the least value of a numeric or date attribute, checked at save.
    ///   - maximum: the greatest value of a numeric or date attribute, checked at save.
    ///   - minimumLength: the least length of a string (in characters), checked at save.
    ///   - maximumLength: the greatest length of a string (in characters), checked at save.
    ///   - regularExpression: a pattern a string value must match entirely, checked at save.
    ///   - valueType: for a transformable attribute, the `Codable` type of its values.
    ///   - isIndexed: whether an SQLite store keeps an index on it.
    public static func attribute(
        _ name: String, _ type: AttributeType, isOptional: Bool = true, defaultValue: (any Sendable)? = nil,
        isTransient: Bool = false, minimum: (any Sendable)? = nil, maximum: (any Sendable)? = nil,
        minimumLength: Int? = nil, maximumLength: Int? = nil, regularExpression: String? = nil,
        valueType: (any Codable.Type)? = nil, isIndexed: Bool = false
    ) -> PropertyDescription {
        AttributeDescription(
            name: name, attributeType: type, isOptional: isOptional, defaultValue: defaultValue,
            isTransient: isTransient, minimum: minimum, maximum: maximum, minimumLength: minimumLength,
            maximumLength: maximumLength, regularExpression: regularExpression, valueType: valueType,
            isIndexed: isIndexed)
    }

    /// A relationship to `destination`, with its inverse named by `inverse`.
    public static func relationship(
        _ name: String, destination: String, toMany: Bool = false, isOrdered: Bool = false,
        inverse: String? = nil, deleteRule: DeleteRule = .nullify, isOptional: Bool = true,
        minimumCount: Int = 0, maximumCount: Int = 0
    ) -> PropertyDescription {
        RelationshipDescription(
            name: name, destinationEntityName: destination, isToMany: toMany, isOrdered: isOrdered,
            inverseName: inverse, deleteRule: deleteRule, isOptional: isOptional,
            minCount: minimumCount, maxCount: maximumCount)
    }
}

/// An attribute of an entity (`NSAttributeDescription`).
public final class AttributeDescription: PropertyDescription, @unchecked Sendable {
    /// The attribute's type.
    public let attributeType: AttributeType
    /// The value a newly inserted object starts with.
    public let defaultValue: (any Sendable)?
    /// For a transformable attribute, the `Codable` type of its values (nil: JSON-compatible values).
    public let valueType: (any Codable.Type)?
    /// Validation bounds.
    public let minimum: (any Sendable)?
    public let maximum: (any Sendable)?
    public let minimumLength: Int?
    public let maximumLength: Int?
    public let regularExpression: String?
    /// Whether the store keeps an index on the attribute (for fast predicates and sorts on it).
    public let isIndexed: Bool

    /// The default value in canonical form.
    let defaultStoredValue: Value
    let minimumValue: Value?
    let maximumValue: Value?
    let compiledRegularExpression: NSRegularExpression?

    public init(
        name: String, attributeType: AttributeType, isOptional: Bool = true, defaultValue: (any Sendable)? = nil,
        isTransient: Bool = false, minimum: (any Sendable)? = nil, maximum: (any Sendable)? = nil,
        minimumLength: Int? = nil, maximumLength: Int? = nil, regularExpression: String? = nil,
        valueType: (any Codable.Type)? = nil, isIndexed: Bool = false
    ) {
        self.isIndexed = isIndexed
        self.attributeType = attributeType
        self.defaultValue = defaultValue
        self.valueType = valueType
        self.minimum = minimum
        self.maximum = maximum
        self.minimumLength = minimumLength
        self.maximumLength = maximumLength
        self.regularExpression = regularExpression
        if attributeType == .transformable {
            defaultStoredValue = defaultValue.flatMap { try? TransformableCoding.encode($0, valueType: valueType) }.map(Value.data) ?? .null
        } else {
            defaultStoredValue = Value.converting(defaultValue, to: attributeType, valueType: valueType) ?? .null
        }
        minimumValue = minimum.flatMap { Value.converting($0, to: attributeType, valueType: nil) }
        maximumValue = maximum.flatMap { Value.converting($0, to: attributeType, valueType: nil) }
        compiledRegularExpression = regularExpression.flatMap { try? NSRegularExpression(pattern: "^(?:\($0))$") }
        super.init(name: name, isOptional: isOptional, isTransient: isTransient)
    }

    /// What is wrong with the attribute's validation rules: a pattern that is not a regular
    /// expression, a bound of a type the attribute cannot hold (either would never be checked).
    func ruleErrors(of entity: EntityDescription) -> [ObjectGraphError] {
        var errors: [ObjectGraphError] = []
        func refuse(_ what: String) {
            errors.append(ObjectGraphError(.invalidModel, "Attribute '\(entity.name).\(name)': \(what)", entityName: entity.name, key: name))
        }
        if let regularExpression, compiledRegularExpression == nil {
            refuse("the pattern \(regularExpression.debugDescription) is not a regular expression")
        }
        if let minimum, minimumValue == nil { refuse("its minimum \(minimum) is not a value of its type, \(attributeType)") }
        if let maximum, maximumValue == nil { refuse("its maximum \(maximum) is not a value of its type, \(attributeType)") }
        return errors
    }

    override func copy() -> PropertyDescription {
        let copy = AttributeDescription(
            name: name, attributeType: attributeType, isOptional: isOptional, defaultValue: defaultValue,
            isTransient: isTransient, minimum: minimum, maximum: maximum, minimumLength: minimumLength,
            maximumLength: maximumLength, regularExpression: regularExpression, valueType: valueType, isIndexed: isIndexed)
        copyFileFields(to: copy)
        copy.valueTransformerName = valueTransformerName
        copy.attributeValueClassName = attributeValueClassName
        copy.allowsExternalBinaryDataStorage = allowsExternalBinaryDataStorage
        copy.preservesValueInHistoryOnDeletion = preservesValueInHistoryOnDeletion
        copy.coreDataAttributeTypeCode = coreDataAttributeTypeCode
        copy.derivation = derivation
        return copy
    }

    /// Core Data's name for the default value.
    public var defaultValueForAttribute: (any Sendable)? { defaultValue }

    /// For a transformable attribute read from a Core Data model, the name of its value transformer
    /// (Core Data's `valueTransformerName`); nil when the model names none.
    public internal(set) var valueTransformerName: String?
    /// For an attribute read from a Core Data model, the class its values have in Core Data
    /// (`attributeValueClassName`, Xcode's "custom class").
    public internal(set) var attributeValueClassName: String?
    /// Whether Core Data may keep large values of this binary attribute in files beside the store
    /// (Core Data's `allowsExternalBinaryDataStorage`); part of the version hash.
    public internal(set) var allowsExternalBinaryDataStorage = false
    /// Whether the value is kept in persistent history when the object is deleted (Core Data's
    /// `preservesValueInHistoryOnDeletion`, Xcode's "preserve after deletion"); part of the version hash.
    public internal(set) var preservesValueInHistoryOnDeletion = false
    /// Core Data's `NSAttributeType` raw value when it has no ``AttributeType`` of its own (a composite
    /// or undefined attribute read from a model file); otherwise derived from ``attributeType``.
    var coreDataAttributeTypeCode: UInt?
    /// For a derived attribute read from a Core Data model, its derivation expression and filtering
    /// predicate in Core Data's predicate format: Core Data hashes these instead of the attribute.
    var derivation: (expression: String, filter: String?)?
}

/// A relationship between entities (`NSRelationshipDescription`).
public final class RelationshipDescription: PropertyDescription, @unchecked Sendable {
    /// The name of the destination entity.
    public let destinationEntityName: String
    /// The name of the inverse relationship on the destination, if any.
    public let inverseName: String?
    /// Whether the relationship has many destinations.
    public let isToMany: Bool
    /// Whether a to-many relationship keeps its destinations in order (`[ManagedObject]` rather than a set).
    public let isOrdered: Bool
    /// What deleting the source does to the destinations.
    public let deleteRule: DeleteRule
    /// For a to-many relationship, the least and most destinations (0: no bound).
    public let minCount: Int
    public let maxCount: Int

    /// The destination entity, resolved when the model is built (`unowned`, like ``PropertyDescription/entity``: the
    /// model owns both entities).
    public internal(set) unowned(safe) var destinationEntity: EntityDescription?
    /// The inverse relationship, resolved when the model is built (`unowned`, like ``PropertyDescription/entity``).
    public internal(set) unowned(safe) var inverseRelationship: RelationshipDescription?

    public init(
        name: String, destinationEntityName: String, isToMany: Bool = false, isOrdered: Bool = false,
        inverseName: String? = nil, deleteRule: DeleteRule = .nullify, isOptional: Bool = true,
        minCount: Int = 0, maxCount: Int = 0, isTransient: Bool = false
    ) {
        self.destinationEntityName = destinationEntityName
        self.inverseName = inverseName
        self.isToMany = isToMany
        self.isOrdered = isToMany && isOrdered
        self.deleteRule = deleteRule
        self.minCount = minCount
        self.maxCount = maxCount
        super.init(name: name, isOptional: isOptional, isTransient: isTransient)
    }

    override func copy() -> PropertyDescription {
        let copy = RelationshipDescription(
            name: name, destinationEntityName: destinationEntityName, isToMany: isToMany, isOrdered: isOrdered,
            inverseName: inverseName, deleteRule: deleteRule, isOptional: isOptional, minCount: minCount,
            maxCount: maxCount, isTransient: isTransient)
        copyFileFields(to: copy)
        return copy
    }

    /// Core Data's names for the count bounds.
    public var minimumCount: Int { minCount }
    public var maximumCount: Int { maxCount }

    /// How the relationship is stored: a to-one is a foreign key in the source's row; a to-many whose
    /// inverse is to-one is read through that foreign key; any other to-many is a set of pairs (in
    /// SQLite, Core Data's join table, or the hidden foreign key of a to-many without an inverse).
    var isForeignKeyDerived: Bool { isToMany && (inverseRelationship.map { !$0.isToMany } ?? false) }
    var usesJoinTable: Bool { isToMany && !isForeignKeyDerived }
}
