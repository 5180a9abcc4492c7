import Foundation

extension ManagedObjectModel {
    /// Builds a model from `@Managed` classes, and optionally entities described in code.
    ///
    /// ```swift
    /// let model = ManagedObjectModel(types: [Folder.self, Note.self])
    /// let mixed = ManagedObjectModel(types: [Note.self, Folder.self], entities: [
    ///     EntityDescription(name: "Log", properties: [.attribute("line", .string)]),
    /// ])
    /// ```
    ///
    /// Each class gives an entity named after it, with its stored properties as attributes and
    /// relationships in declaration order. A relationship's inverse, declared with
    /// `@Relationship(inverse:)` on either side, is set on both. The superclass of a managed
    /// class that is itself managed becomes its super-entity, and is added when not listed.
    /// Mistakes (an inverse naming a property that is not a relationship back) are reported as
    /// for any model: ``validate()`` throws them, and so does adding a store.
    ///
    /// It is a programmer error to list a class that is not `@Managed`.
    public convenience init(types: [ManagedObject.Type], entities: [EntityDescription] = []) {
        var ordered: [any ManagedModel.Type] = []
        var seen: Set<ObjectIdentifier> = []
        func add(_ type: ManagedObject.Type) {
            guard let managed = type as? any ManagedModel.Type else {
                fatalError("ObjectGraph: \(type) is not a @Managed class; write '@Managed final class \(type): ManagedObject { ... }', or describe it with EntityDescription")
            }
            let superclass = managed._managedSchema.superclass
            if superclass != ManagedObject.self { add(superclass) }
            if seen.insert(ObjectIdentifier(type)).inserted { ordered.append(managed) }
        }
        types.forEach(add)

        // Inverses declared on one side are set on both.
        var inverses: [String: [String: String]] = [:]  // entity → relationship → inverse
        for type in ordered {
            let schema = type._managedSchema
            for property in schema.properties {
                guard case .relationship(let destination, _, _, _) = property.kind, let keyPath = property.relationshipOptions.inverse else { continue }
                let destinationName = Self.entityName(of: destination)
                let inverseName = (destination as? any ManagedModel.Type)?._managedPropertyName(for: keyPath) ?? "\(keyPath)"
                inverses[schema.entityName, default: [:]][property.name] = inverseName
                if inverses[destinationName]?[inverseName] == nil {
                    inverses[destinationName, default: [:]][inverseName] = property.name
                }
            }
        }

        let built = ordered.map { type -> EntityDescription in
            let schema = type._managedSchema
            var unique: [[String]] = []
            let properties = schema.properties.map { property -> PropertyDescription in
                switch property.kind {
                case .attribute(let attributeType, let isOptional, let defaultValue, let valueType):
                    if property.attributeOptions.options.contains(.unique) { unique.append([property.name]) }
                    let description = PropertyDescription.attribute(
                        property.name, attributeType, isOptional: isOptional, defaultValue: defaultValue, valueType: valueType,
                        isIndexed: property.attributeOptions.options.contains(.indexed))
                    if let originalName = property.attributeOptions.originalName {
                        description.userInfo["originalName"] = originalName
                        description.renamingIdentifier = originalName
                    }
                    return description
                case .relationship(let destination, let isToMany, let isOrdered, let isOptional):
                    let options = property.relationshipOptions
                    return PropertyDescription.relationship(
                        property.name, destination: Self.entityName(of: destination), toMany: isToMany, isOrdered: isOrdered,
                        inverse: inverses[schema.entityName]?[property.name], deleteRule: options.deleteRule,
                        isOptional: isOptional, minimumCount: options.minimumModelCount, maximumCount: options.maximumModelCount)
                }
            }
            return EntityDescription(
                name: schema.entityName, managedObjectClass: type, superentity: schema.superentityName,
                properties: properties, uniquenessConstraints: unique)
        }
        self.init(entities: built + entities)
    }

    /// The entity name of a class: its schema's for a `@Managed` class, its type name otherwise.
    static func entityName(of type: ManagedObject.Type) -> String {
        (type as? any ManagedModel.Type)?._managedSchema.entityName ?? String(describing: type)
    }
}
