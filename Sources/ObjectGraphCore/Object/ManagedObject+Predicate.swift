import Foundation

extension ManagedObject: PredicateSubject {
    var predicateObjectID: ManagedObjectID? { objectID }
    var predicateEntity: EntityDescription { entity }

    func predicateValue(forKey key: String) throws -> PredicateOperand {
        guard let property = entity.propertiesByName[key] else {
            throw ObjectGraphError(.invalidFetchRequest, "Entity '\(entity.name)' has no property '\(key)'", entityName: entity.name, key: key)
        }
        fireFaultIfNeeded()
        if let relationship = property as? RelationshipDescription {
            if relationship.isToMany { return .objects(destinationObjects(relationship)) }
            guard let id = toOneID(relationship), let context = managedObjectContext else { return .object(nil) }
            return .object(context.object(with: id))
        }
        let attribute = property as! AttributeDescription
        if attribute.attributeType == .transformable, let box = boxed[attribute.index] {
            return .value((try? TransformableCoding.encode(box, valueType: attribute.valueType)).map(Value.data) ?? .null)
        }
        return .value(values[attribute.index])
    }

    /// Whether the object matches a predicate (Core Data's `NSPredicate.evaluate(with:)`, from the
    /// object's side).
    public func matches(_ predicate: FetchPredicate) throws -> Bool {
        try predicate.evaluate(with: self)
    }
}

extension FetchPredicate {
    /// Whether an object matches the predicate, evaluated in memory on its current values
    /// (`NSPredicate.evaluate(with:)`). Call it on the object's context's queue.
    ///
    /// - Throws: ``ObjectGraphError/predicateSyntax`` for a malformed predicate,
    ///   ``ObjectGraphError/invalidFetchRequest`` for a key the object's entity does not have.
    public func evaluate(with object: ManagedObject) throws -> Bool {
        try evaluate(with: object as any PredicateSubject)
    }
}
