import Foundation

extension ManagedObjectContext {
    // MARK: - Registration

    /// The objects registered in the context.
    public var registeredObjects: Set<ManagedObject> {
        assertOnQueue("registeredObjects")
        return Set(liveObjects)
    }

    /// Whether the context has unsaved changes.
    public var hasChanges: Bool {
        assertOnQueue("hasChanges")
        return !insertedObjects.isEmpty || !deletedObjects.isEmpty || updatedObjects.contains(where: \.hasChanges)
    }

    func canonical(_ id: ManagedObjectID) -> ManagedObjectID { aliases[id] ?? id }

    /// An ID handed in by the program, made with this context's coordinator's store and model (an
    /// ID from another coordinator on the same store names the same row).
    func local(_ id: ManagedObjectID) -> ManagedObjectID {
        guard !id.isTemporaryID, let coordinator = persistentStoreCoordinator else { return id }
        return coordinator.localID(id) ?? id
    }

    func register(_ object: ManagedObject) {
        registered[object.objectID] = WeakObject(object)
        noteRegistration()
        object.managedObjectContext = self
        if retainsRegisteredObjects { retained.insert(object) }
    }

    func unregister(_ object: ManagedObject) {
        if registered[object.objectID]?.object === object { registered[object.objectID] = nil }
        if object.state.giveUpRowCache() {
            persistentStoreCoordinator?.rowCache.release([object.objectID])
        }
        object.managedObjectContext = nil
        retained.remove(object)
    }

    /// Forgets an object whose row is gone (deleted elsewhere, or refused by the store): out of
    /// every change set and the identity map, and invalid from now on.
    func invalidate(_ object: ManagedObject) {
        changes.forget(object)
        unregister(object)
        object.state.invalidate()
    }

    /// The object registered under an ID, without touching the store.
    ///
    /// ```swift
    /// if let note = context.registeredObject(for: id) { ... }
    /// ```
    public func registeredObject(for objectID: ManagedObjectID) -> ManagedObject? {
        assertOnQueue("registeredObject(for:)")
        return registered[canonical(objectID)]?.object
    }

    /// The object with an ID: the registered one, or a new fault. It always returns an object; an
    /// object whose row does not exist fails when its fault fires.
    public func object(with objectID: ManagedObjectID) -> ManagedObject {
        assertOnQueue("object(with:)")
        freezeConfiguration()
        var id = canonical(local(objectID))
        if let object = registered[id]?.object { return object }
        if id.isTemporaryID && parentStore.resolvesTemporaryIDs {
            id = permanentIDKnownAbove(id)
            if let object = registered[id]?.object { return object }
        }
        let object = makeFault(id)
        register(object)
        return object
    }

    func makeFault(_ id: ManagedObjectID) -> ManagedObject {
        let object = id.entity.managedObjectClass.init(entity: id.entity, insertInto: nil)
        object.objectID = id
        _ = object.state.turnIntoFault()
        return object
    }

    /// A registered object or a new fault for an ID (nil only for a temporary ID never registered here).
    func existingRegisteredOrFault(_ id: ManagedObjectID) -> ManagedObject? {
        let id = canonical(id)
        if let object = registered[id]?.object { return object }
        // A child resolves its ancestors' inserted objects by their temporary IDs.
        if id.isTemporaryID && !parentStore.resolvesTemporaryIDs { return nil }
        return object(with: id)
    }

    /// The object with an ID, read from the store if needed.
    ///
    /// - Throws: ``ObjectGraphError/temporaryObjectID`` for a temporary ID this context does not
    ///   know, ``ObjectGraphError/objectNotFound`` when the row does not exist.
    public func existingObject(with objectID: ManagedObjectID) throws -> ManagedObject {
        assertOnQueue("existingObject(with:)")
        freezeConfiguration()
        var id = canonical(local(objectID))
        if id.isTemporaryID && parentStore.resolvesTemporaryIDs && registered[id]?.object == nil { id = permanentIDKnownAbove(id) }
        if let object = registered[id]?.object {
            if object.isFault {
                guard try loadSnapshot(for: object) else {
                    throw ObjectGraphError(.objectNotFound, "No \(id.entityName) with ID \(id) exists in the store", entityName: id.entityName, objectID: id)
                }
            }
            return object
        }
        if id.isTemporaryID && !parentStore.resolvesTemporaryIDs {
            throw ObjectGraphError(
                .temporaryObjectID,
                "The ID \(id) is temporary: the object was never saved, and only its own context can resolve it",
                entityName: id.entityName, objectID: id)
        }
        let object = makeFault(id)
        register(object)
        guard try loadSnapshot(for: object) else {
            unregister(object)
            if id.isTemporaryID {
                throw ObjectGraphError(
                    .temporaryObjectID, "The ID \(id) is temporary and no context of the chain of '\(debugName)' has its object",
                    entityName: id.entityName, objectID: id)
            }
            throw ObjectGraphError(.objectNotFound, "No \(id.entityName) with ID \(id) exists in the store", entityName: id.entityName, objectID: id)
        }
        return object
    }

    /// Checks that an object set as a relationship's destination belongs to this context.
    func checkSameContext(_ object: ManagedObject, relationship: RelationshipDescription, source: ManagedObject) {
        if object.managedObjectContext !== self {
            fatalError("""
                ObjectGraph: cannot set \(source.entity.name).\(relationship.name) of \(source.objectID) in context '\(debugName)' \
                to \(object.objectID), which belongs to \(object.managedObjectContext.map { "context '\($0.debugName)'" } ?? "no context"); \
                relationships link objects of one context (resolve the object's ID in this context first)
                """)
        }
        if let destination = relationship.destinationEntity, !object.entity.isKindOf(entity: destination) {
            fatalError("ObjectGraph: cannot set \(source.entity.name).\(relationship.name) to a \(object.entity.name); its destination entity is \(destination.name)")
        }
    }
}
