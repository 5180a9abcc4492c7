import Foundation

// Relationships read and set through an object: destinations loaded when needed, inverses kept.

extension ManagedObject {
    /// The destination IDs of a to-many relationship, loading them when needed.
    func destinationIDs(_ relationship: RelationshipDescription) -> [ManagedObjectID] {
        fireFaultIfNeeded()
        let value = relationshipValue(relationship)
        if !value.isLoaded { managedObjectContext?.loadToMany(relationship, of: [self]) }
        return value.ids
    }

    func destinationObjects(_ relationship: RelationshipDescription) -> [ManagedObject] {
        let ids = destinationIDs(relationship)
        guard let context = managedObjectContext else { return [] }
        return ids.map { context.object(with: $0) }
    }

    func toOneID(_ relationship: RelationshipDescription) -> ManagedObjectID? {
        fireFaultIfNeeded()
        if case .objectID(let id) = values[relationship.index] { return id }
        return nil
    }

    func setRelationship(_ newValue: Any?, _ relationship: RelationshipDescription, maintainInverse: Bool = true) {
        if state.isBatchRow { return noteRelationshipSetInBatchRow(relationship.index) }
        fireFaultIfNeeded()
        if relationship.isToMany {
            var objects: [ManagedObject]
            switch newValue {
            case nil, is NSNull: objects = []
            case let set as Set<ManagedObject>: objects = Array(set)
            case let array as [ManagedObject]: objects = array
            case let sequence as any Sequence:
                objects = sequence.compactMap { $0 as? ManagedObject }
            default:
                fatalError("ObjectGraph: '\(entity.name).\(relationship.name)' is to-many; set a Set<ManagedObject> or [ManagedObject], not \(type(of: newValue!)) (object \(objectID))")
            }
            replaceDestinations(of: relationship, with: objects, maintainInverse: maintainInverse)
        } else {
            let object: ManagedObject?
            switch newValue {
            case nil, is NSNull: object = nil
            case let o as ManagedObject: object = o
            default:
                fatalError("ObjectGraph: '\(entity.name).\(relationship.name)' is to-one; set a ManagedObject, not \(type(of: newValue!)) (object \(objectID))")
            }
            if let object { managedObjectContext?.checkSameContext(object, relationship: relationship, source: self) }
            setToOne(relationship, to: object, maintainInverse: maintainInverse)
        }
    }

    /// Sets a to-one relationship and, when asked, its inverse on both the old and new destination.
    func setToOne(_ relationship: RelationshipDescription, to object: ManagedObject?, maintainInverse: Bool) {
        fireFaultIfNeeded()
        let oldID = toOneID(relationship)
        let newID = object?.objectID
        if oldID == newID { return }
        registerUndoOfStored(relationship.index)
        storeToOne(newID, at: relationship.index)
        markChanged(relationship.index)
        guard maintainInverse, let inverse = relationship.inverseRelationship, let context = managedObjectContext else { return }
        if let oldID, let old = context.existingRegisteredOrFault(oldID) {
            if inverse.isToMany {
                old.removeDestination(self.objectID, from: inverse)
            } else if old.toOneID(inverse) == objectID {
                old.setToOne(inverse, to: nil, maintainInverse: false)
            }
        }
        if let object {
            if inverse.isToMany {
                object.addDestination(self.objectID, to: inverse)
            } else {
                // One-to-one: the new destination leaves its previous partner.
                if let previous = object.toOneID(inverse), previous != objectID, let partner = context.existingRegisteredOrFault(previous) {
                    if partner.toOneID(relationship) == object.objectID { partner.setToOne(relationship, to: nil, maintainInverse: false) }
                }
                object.setToOne(inverse, to: self, maintainInverse: false)
            }
        }
    }

    /// Adds one destination to a to-many relationship (without its inverse).
    func addDestination(_ id: ManagedObjectID, to relationship: RelationshipDescription) {
        changeDestination(id, of: relationship, adding: true)
    }

    /// Removes one destination from a to-many relationship (without its inverse).
    func removeDestination(_ id: ManagedObjectID, from relationship: RelationshipDescription) {
        changeDestination(id, of: relationship, adding: false)
    }

    /// Adds (`adding`) or removes one destination of a to-many relationship, without its inverse;
    /// a change that happens registers the opposite one for undo.
    private func changeDestination(_ id: ManagedObjectID, of relationship: RelationshipDescription, adding: Bool) {
        fireFaultIfNeeded()
        let destinations = relationshipValue(relationship)
        guard adding ? destinations.add(id) : destinations.remove(id) else { return }
        if let context = managedObjectContext, context.undoManager != nil {
            context.registerUndo(of: self) { _, object in object.changeDestination(id, of: relationship, adding: !adding) }
        }
        markChanged(relationship.index)
    }

    /// Replaces a to-many relationship's destinations, keeping inverses in sync.
    func replaceDestinations(of relationship: RelationshipDescription, with objects: [ManagedObject], maintainInverse: Bool) {
        guard let context = managedObjectContext else { return }
        for object in objects { context.checkSameContext(object, relationship: relationship, source: self) }
        let old = destinationIDs(relationship)
        let oldSet = Set(old)
        let newIDs = objects.map(\.objectID)
        let newSet = Set(newIDs)
        let removed = old.filter { !newSet.contains($0) }
        let added = objects.filter { !oldSet.contains($0.objectID) }
        let value = relationshipValue(relationship)
        if removed.isEmpty && added.isEmpty && (!relationship.isOrdered || old == newIDs) { return }
        registerUndoOfDestinations(relationship, old)
        value.replace(with: newIDs)
        markChanged(relationship.index)
        guard maintainInverse, let inverse = relationship.inverseRelationship else { return }
        // Fault the other sides in together rather than one by one.
        context.fulfillFaults(removed.compactMap { context.registeredObject(for: $0) } + added)
        for id in removed {
            guard let other = context.existingRegisteredOrFault(id) else { continue }
            if inverse.isToMany {
                other.removeDestination(objectID, from: inverse)
            } else if other.toOneID(inverse) == objectID {
                other.setToOne(inverse, to: nil, maintainInverse: false)
            }
        }
        for other in added {
            if inverse.isToMany {
                other.addDestination(objectID, to: inverse)
            } else {
                if let previousID = other.toOneID(inverse), previousID != objectID, let previous = context.existingRegisteredOrFault(previousID) {
                    previous.removeDestination(other.objectID, from: relationship)
                }
                other.setToOne(inverse, to: self, maintainInverse: false)
            }
        }
    }
}
