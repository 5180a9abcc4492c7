import Foundation

/// An entity of a model: its name, its properties, its place in an inheritance tree
/// (`NSEntityDescription`).
///
/// ```swift
/// EntityDescription(name: "Folder", properties: [
///     .attribute("name", .string, isOptional: false),
///     .relationship("notes", destination: "Note", toMany: true, inverse: "folder", deleteRule: .cascade),
/// ])
/// ```
///
/// An entity is mutated only while the ``ManagedObjectModel`` that owns it is being built; after
/// that it is immutable and may be used from any queue.
public final class EntityDescription: @unchecked Sendable, Hashable, CustomStringConvertible {
    /// The entity's name.
    public let name: String
    /// The class of the entity's objects: `ManagedObject` or a subclass of it.
    public let managedObjectClass: ManagedObject.Type
    /// Whether the entity has no instances of its own (only its sub-entities do).
    public let isAbstract: Bool
    /// The name of the entity this one inherits from, if any.
    public let superentityName: String?
    /// The properties the entity declares itself (not those it inherits).
    public let declaredProperties: [PropertyDescription]
    /// Sets of attribute names whose values must be unique across the entity's objects.
    public let uniquenessConstraints: [[String]]
    /// Compound indexes (Core Data's fetch indexes): each a list of attribute names, in order.
    public let indexes: [[String]]
    /// Free-form information, as in Core Data.
    public var userInfo: [String: String] = [:] {
        didSet { managedObjectModel?.forgetCompiledModel() }
    }

    /// The entity's name in the model version it was renamed from, as in Core Data: a lightweight
    /// migration maps an entity of the old model onto the new one whose renaming identifier is the old name.
    ///
    /// ```swift
    /// let note = EntityDescription(name: "Note", properties: [...])
    /// note.renamingIdentifier = "Memo"   // was "Memo" in the previous version
    /// ```
    ///
    /// It is a programmer error to set it once the entity's model is built.
    public var renamingIdentifier: String? {
        get { buildTimeFields.renamingIdentifier }
        set {
            precondition(managedObjectModel == nil, "renamingIdentifier of entity '\(name)' set after its model was built")
            buildTimeFields.renamingIdentifier = newValue
        }
    }

    /// A string mixed into the entity's version hash (Core Data's `versionHashModifier`), to mark a
    /// change of meaning that leaves the schema as it was.
    ///
    /// It is a programmer error to set it once the entity's model is built.
    public var versionHashModifier: String? {
        get { buildTimeFields.versionHashModifier }
        set {
            precondition(managedObjectModel == nil, "versionHashModifier of entity '\(name)' set after its model was built")
            buildTimeFields.versionHashModifier = newValue
        }
    }

    /// For an entity read from a Core Data model, the name of its class in the app
    /// (Core Data's `managedObjectClassName`, Xcode's "class").
    public internal(set) var managedObjectClassName: String?

    private var buildTimeFields = (renamingIdentifier: String?.none, versionHashModifier: String?.none)

    /// The model the entity belongs to.
    public internal(set) weak var managedObjectModel: ManagedObjectModel?
    /// The entity this one inherits from (`unowned`, as ``PropertyDescription/entity`` is: the model
    /// owns both entities, and a `weak` reference would slow every retain of the superentity).
    public internal(set) unowned(safe) var superentity: EntityDescription?
    /// The entities that inherit from this one.
    public internal(set) var subentities: [EntityDescription] = []
    /// All properties, inherited ones first.
    @exclusivity(unchecked) public internal(set) var properties: [PropertyDescription] = []
    @exclusivity(unchecked) public internal(set) var propertiesByName: [String: PropertyDescription] = [:]
    @exclusivity(unchecked) public internal(set) var attributesByName: [String: AttributeDescription] = [:]
    @exclusivity(unchecked) public internal(set) var relationshipsByName: [String: RelationshipDescription] = [:]

    @exclusivity(unchecked) var attributes: [AttributeDescription] = []
    @exclusivity(unchecked) var relationships: [RelationshipDescription] = []
    /// Attributes that are stored (not transient).
    @exclusivity(unchecked) var storedAttributes: [AttributeDescription] = []
    /// The indices of the transformable attributes, whose values a typed accessor sets through
    /// their coding (a mask: asking costs no retain of a property description).
    @exclusivity(unchecked) var transformableIndices = PropertyMask()
    /// The topmost entity of the inheritance tree; its objects share one table.
    unowned(unsafe) var rootEntity: EntityDescription! = nil
    /// The entity's number in the model (stable: entities sorted by name).
    @exclusivity(unchecked) var entityCode: Int = 0
    /// Every entity below this one, depth first (not the entity itself: an entity that held itself
    /// would never be freed).
    @exclusivity(unchecked) var descendants: [EntityDescription] = []
    /// This entity and every entity below it.
    var selfAndDescendants: [EntityDescription] { [self] + descendants }

    /// Creates an entity.
    ///
    /// - Parameters:
    ///   - name: the entity's name, unique in its model.
    ///   - managedObjectClass: the class of its objects, a subclass of `ManagedObject` with typed accessors.
    ///   - superentity: the name of the entity it inherits from.
    ///   - isAbstract: whether only sub-entities have instances.
    ///   - properties: its attributes and relationships (not those it inherits).
    ///   - uniquenessConstraints: sets of attribute names whose values no two objects share.
    ///   - indexes: sets of attribute names an SQLite store keeps an index on.
    public init(
        name: String, managedObjectClass: ManagedObject.Type = ManagedObject.self, superentity: String? = nil,
        isAbstract: Bool = false, properties: [PropertyDescription], uniquenessConstraints: [[String]] = [],
        indexes: [[String]] = []
    ) {
        self.indexes = indexes
        self.name = name
        self.managedObjectClass = managedObjectClass
        self.superentityName = superentity
        self.isAbstract = isAbstract
        self.declaredProperties = properties
        self.uniquenessConstraints = uniquenessConstraints
    }

    func copy() -> EntityDescription {
        let copy = EntityDescription(
            name: name, managedObjectClass: managedObjectClass, superentity: superentityName, isAbstract: isAbstract,
            properties: declaredProperties.map { $0.copy() }, uniquenessConstraints: uniquenessConstraints, indexes: indexes)
        copy.userInfo = userInfo
        copy.buildTimeFields = buildTimeFields
        copy.managedObjectClassName = managedObjectClassName
        return copy
    }

    public var description: String { name }

    public static func == (lhs: EntityDescription, rhs: EntityDescription) -> Bool { lhs === rhs }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }

    /// Property names in index order, for lookups without hashing (small entities).
    @exclusivity(unchecked) var propertyNames: [String] = []

    /// The property named `key`, if any: a scan of the names for small entities (comparing small
    /// strings is cheaper than hashing them), the dictionary otherwise.
    @inline(__always)
    func property(forKey key: String) -> PropertyDescription? {
        let names = propertyNames
        if names.count <= 16 {
            for i in names.indices where names[i] == key { return properties[i] }
            return nil
        }
        return propertiesByName[key]
    }

    /// Whether the property at `index` is a column of the entity's row: a stored attribute or a
    /// to-one relationship. A to-many relationship lives in its destinations' foreign keys or in
    /// join-table rows, and a transient attribute is not stored.
    func isStoredInRow(_ index: Int) -> Bool {
        switch properties[index] {
        case let attribute as AttributeDescription: !attribute.isTransient
        case let relationship as RelationshipDescription: !relationship.isToMany
        default: false
        }
    }

    /// Whether this entity is `other` or inherits from it.
    public func isKindOf(entity other: EntityDescription) -> Bool {
        var entity: EntityDescription? = self
        while let e = entity {
            if e === other { return true }
            entity = e.superentity
        }
        return false
    }

    /// Core Data's `NSEntityDescription.insertNewObject(forEntityName:into:)`.
    public static func insertNewObject(forEntityName name: String, into context: ManagedObjectContext) -> ManagedObject {
        context.insertNewObject(forEntityName: name)
    }

    /// Core Data's `NSEntityDescription.entity(forEntityName:in:)`.
    public static func entity(forEntityName name: String, in context: ManagedObjectContext) -> EntityDescription? {
        context.model?.entitiesByName[name]
    }
}
