import Foundation

// What the accessors `@Managed` generates call: reads and writes by property index, through the
// same fault firing, change tracking and inverse maintenance as `value(forKey:)` and
// `setValue(_:forKey:)`, without the key lookup. The index is checked against the entity's layout
// once per entity, when the first object of the class is created (`ManagedSchema.verifyLayout`).
extension ManagedObject {
    // MARK: - Internals

    @inline(__always)
    func checkTypedAccess(_ index: Int) {
        checkQueue("\(entity.properties[index].name) (typed accessor)")
    }

    @inline(__always)
    func attributeDescription(_ index: Int) -> AttributeDescription {
        unsafeDowncast(entity.properties[index], to: AttributeDescription.self)
    }

    @inline(__always)
    func relationshipDescription(_ index: Int) -> RelationshipDescription {
        unsafeDowncast(entity.properties[index], to: RelationshipDescription.self)
    }

    /// The attribute's value, nil when nil. A value of the wrong type (set through `setValue`)
    /// is returned when it is a `T`.
    @inline(__always)
    func optionalAttribute<T: CanonicalValueConvertible>(_ index: Int) -> T? {
        checkTypedAccess(index)
        fireFaultIfNeeded()
        if let value = T(canonicalValue: values[index]) { return value }
        if let box = boxed[index] { return box as? T }
        return nil
    }

    @inline(__always)
    func requiredAttribute<T: CanonicalValueConvertible>(_ index: Int) -> T {
        guard let value: T = optionalAttribute(index) else { missingValue(index, T.self) }
        return value
    }

    func missingValue(_ index: Int, _ type: Any.Type) -> Never {
        let property = entity.properties[index]
        let found = boxed[index].map { "a \(Swift.type(of: $0))" } ?? "nil"
        fatalError(
            "ObjectGraph: \(entity.name).\(property.name) of \(objectID) is \(found), not a \(type); give the property a default value, "
                + "set it before reading it, or declare it optional")
    }

    @inline(__always)
    func setCanonical(_ value: Value, _ index: Int) {
        checkTypedAccess(index)
        if entity.transformableIndices.contains(index) { return setAttribute(value, attributeDescription(index), tracking: true) }
        fireFaultIfNeeded()
        store(value, at: index, tracking: true)
    }

    /// A transformable attribute's decoded value, cached as `value(forKey:)` caches it.
    func transformableAttribute<T: Decodable>(_ index: Int, _: T.Type) -> T? {
        checkTypedAccess(index)
        fireFaultIfNeeded()
        if let box = boxed[index] {
            if let value = box as? T { return value }
            missingValue(index, T.self)
        }
        guard case .data(let data) = values[index] else { return nil }
        guard let value = try? JSONDecoder().decode(T.self, from: data) else {
            fatalError("ObjectGraph: \(entity.name).\(entity.properties[index].name) of \(objectID) holds data that does not decode as \(T.self)")
        }
        cacheDecoded(value, at: index)
        return value
    }

    func setTransformable(_ value: Any?, _ index: Int) {
        checkTypedAccess(index)
        setAttribute(value, attributeDescription(index), tracking: true)
    }

    func rawRepresentable<T: RawRepresentable>(_ index: Int, _: T.Type) -> T? where T.RawValue: ManagedAttributeValue {
        checkTypedAccess(index)
        fireFaultIfNeeded()
        let raw = T.RawValue.fromCanonical(values[index]) ?? boxed[index] as? T.RawValue
        guard let raw else { return nil }
        guard let value = T(rawValue: raw) else {
            fatalError("ObjectGraph: \(entity.name).\(entity.properties[index].name) of \(objectID) holds \(raw), which is not a raw value of \(T.self)")
        }
        return value
    }

    func toOne<T: ManagedObject>(_ index: Int, _: T.Type) -> T? {
        checkTypedAccess(index)
        fireFaultIfNeeded()
        guard case .objectID(let id) = values[index], let context = managedObjectContext else { return nil }
        let object = context.object(with: id)
        guard let typed = object as? T else {
            fatalError("ObjectGraph: \(entity.name).\(entity.properties[index].name) of \(objectID) points to \(object.entity.name), whose class \(type(of: object)) is not \(T.self)")
        }
        return typed
    }

    func toMany<T: ManagedObject>(_ index: Int, _: T.Type) -> [T] {
        checkTypedAccess(index)
        return destinationObjects(relationshipDescription(index)).map { object in
            guard let typed = object as? T else {
                fatalError("ObjectGraph: \(entity.name).\(entity.properties[index].name) of \(objectID) holds \(object.entity.name), whose class \(type(of: object)) is not \(T.self)")
            }
            return typed
        }
    }

    func setRelationshipValue(_ value: Any?, _ index: Int) {
        checkTypedAccess(index)
        setRelationship(value, relationshipDescription(index))
    }

    // MARK: - Enums stored as their raw values

    /// Reads an enum stored as its raw value (generated accessors call this).
    public func _managedGet<T: RawRepresentable>(at index: Int, as _: T.Type) -> T where T.RawValue: ManagedAttributeValue {
        guard let value = rawRepresentable(index, T.self) else { missingValue(index, T.self) }
        return value
    }

    /// Reads an optional enum stored as its raw value (generated accessors call this).
    public func _managedGet<T: RawRepresentable>(at index: Int, as _: T?.Type) -> T? where T.RawValue: ManagedAttributeValue {
        rawRepresentable(index, T.self)
    }

    /// Writes an enum stored as its raw value (generated accessors call this).
    public func _managedSet<T: RawRepresentable>(_ value: T, at index: Int) where T.RawValue: ManagedAttributeValue {
        setCanonical(value.rawValue.canonical, index)
    }

    /// Writes an optional enum stored as its raw value (generated accessors call this).
    public func _managedSet<T: RawRepresentable>(_ value: T?, at index: Int) where T.RawValue: ManagedAttributeValue {
        setCanonical(value?.rawValue.canonical ?? .null, index)
    }

    /// Reads a `Codable` enum stored as its raw value (generated accessors call this).
    public func _managedGet<T: RawRepresentable & Codable>(at index: Int, as _: T.Type) -> T where T.RawValue: ManagedAttributeValue {
        guard let value = rawRepresentable(index, T.self) else { missingValue(index, T.self) }
        return value
    }

    /// Reads an optional `Codable` enum stored as its raw value (generated accessors call this).
    public func _managedGet<T: RawRepresentable & Codable>(at index: Int, as _: T?.Type) -> T? where T.RawValue: ManagedAttributeValue {
        rawRepresentable(index, T.self)
    }

    /// Writes a `Codable` enum stored as its raw value (generated accessors call this).
    public func _managedSet<T: RawRepresentable & Codable>(_ value: T, at index: Int) where T.RawValue: ManagedAttributeValue {
        setCanonical(value.rawValue.canonical, index)
    }

    /// Writes an optional `Codable` enum stored as its raw value (generated accessors call this).
    public func _managedSet<T: RawRepresentable & Codable>(_ value: T?, at index: Int) where T.RawValue: ManagedAttributeValue {
        setCanonical(value?.rawValue.canonical ?? .null, index)
    }

    // MARK: - Codable values (transformable attributes)

    /// Reads a `Codable` value (generated accessors call this).
    public func _managedGet<T: Codable>(at index: Int, as _: T.Type) -> T {
        guard let value = transformableAttribute(index, T.self) else { missingValue(index, T.self) }
        return value
    }

    /// Reads an optional `Codable` value (generated accessors call this).
    public func _managedGet<T: Codable>(at index: Int, as _: T?.Type) -> T? {
        transformableAttribute(index, T.self)
    }

    /// Writes a `Codable` value (generated accessors call this).
    public func _managedSet<T: Codable>(_ value: T, at index: Int) {
        setTransformable(value, index)
    }

    /// Writes an optional `Codable` value (generated accessors call this).
    public func _managedSet<T: Codable>(_ value: T?, at index: Int) {
        setTransformable(value.map { $0 as Any }, index)
    }

    // MARK: - Relationships

    /// Reads an optional to-one relationship (generated accessors call this).
    public func _managedGet<T: ManagedObject>(at index: Int, as _: T?.Type) -> T? {
        toOne(index, T.self)
    }

    /// Reads a required to-one relationship (generated accessors call this).
    public func _managedGet<T: ManagedObject>(at index: Int, as _: T.Type) -> T {
        guard let value = toOne(index, T.self) else { missingValue(index, T.self) }
        return value
    }

    /// Reads a to-many relationship (generated accessors call this).
    public func _managedGet<T: ManagedObject>(at index: Int, as _: Set<T>.Type) -> Set<T> {
        Set(toMany(index, T.self))
    }

    /// Reads an ordered to-many relationship (generated accessors call this).
    public func _managedGet<T: ManagedObject>(at index: Int, as _: [T].Type) -> [T] {
        toMany(index, T.self)
    }

    /// Writes an optional to-one relationship (generated accessors call this).
    public func _managedSet<T: ManagedObject>(_ value: T?, at index: Int) {
        setRelationshipValue(value, index)
    }

    /// Writes a to-many relationship (generated accessors call this).
    public func _managedSet<T: ManagedObject>(_ value: Set<T>, at index: Int) {
        setRelationshipValue(value.map { $0 as ManagedObject }, index)
    }

    /// Writes an ordered to-many relationship (generated accessors call this).
    public func _managedSet<T: ManagedObject>(_ value: [T], at index: Int) {
        setRelationshipValue(value.map { $0 as ManagedObject }, index)
    }
}
