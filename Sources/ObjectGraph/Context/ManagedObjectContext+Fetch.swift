import Foundation

extension ManagedObjectContext {
    /// Runs a fetch request; the results' type follows the request's generic parameter.
    ///
    /// ```swift
    /// let notes = try context.fetch(FetchRequest<ManagedObject>(entityName: "Note"))
    /// let ids = try context.fetch(FetchRequest<ManagedObjectID>(entityName: "Note"))
    /// ```
    ///
    /// Unsaved inserts, updates and deletes are reflected unless `includesPendingChanges` is false
    /// (dictionary results read the store only, as in Core Data).
    ///
    /// - Throws: ``ObjectGraphError/invalidFetchRequest`` for an unknown entity or key, or a result
    ///   type that does not fit the request's generic parameter; ``ObjectGraphError/predicateSyntax``
    ///   for a malformed predicate; store errors.
    public func fetch<T>(_ request: FetchRequest<T>) throws -> [T] {
        assertOnQueue("fetch(_:)")
        deliverMailIfNeeded()
        let entity = try resolveEntity(request)
        try request.predicate?.validate()
        let resultType = request.resultType
        switch resultType {
        case .managedObjectResultType:
            guard T.self is ManagedObject.Type else { throw resultTypeMismatch(request, "managed objects") }
            if !(entity.managedObjectClass is T.Type) && !entity.selfAndDescendants.allSatisfy({ $0.managedObjectClass is T.Type }) {
                throw ObjectGraphError(
                    .invalidFetchRequest,
                    "FetchRequest<\(T.self)> cannot return objects of entity '\(entity.name)', whose class is \(entity.managedObjectClass)",
                    entityName: entity.name)
            }
            return try fetchObjects(request, entity: entity).map { $0 as! T }
        case .managedObjectIDResultType:
            guard T.self == ManagedObjectID.self else { throw resultTypeMismatch(request, "object IDs") }
            return try fetchIDs(request, entity: entity) as! [T]
        case .dictionaryResultType:
            guard T.self == [String: Any].self || T.self == NSDictionary.self else { throw resultTypeMismatch(request, "dictionaries") }
            return try fetchDictionaries(request, entity: entity).map { $0 as! T }
        case .countResultType:
            let n = try count(for: request)
            if T.self == Int.self { return [n as! T] }
            if T.self == NSNumber.self { return [NSNumber(value: n) as! T] }
            throw resultTypeMismatch(request, "a count")
        default:
            throw ObjectGraphError(.invalidFetchRequest, "Unknown result type \(resultType.rawValue)", entityName: entity.name)
        }
    }

    /// The number of objects a fetch request would return (honouring pending changes, limit and offset).
    ///
    /// - Throws: as ``fetch(_:)``.
    public func count<T>(for request: FetchRequest<T>) throws -> Int {
        assertOnQueue("count(for:)")
        deliverMailIfNeeded()
        let entity = try resolveEntity(request)
        try request.predicate?.validate()
        if parent != nil { return try matchingThroughParent(request, entity: entity, for: .count).count }
        if !request.includesPendingChanges || !hasPendingChanges(of: entity, includesSubentities: request.includesSubentities) {
            return try coordinator.countRows(storeRequest(request, entity: entity, values: false))
        }
        return try matchingIDsWithPendingChanges(request, entity: entity).count
    }

    private func resultTypeMismatch<T>(_ request: FetchRequest<T>, _ what: String) -> ObjectGraphError {
        ObjectGraphError(
            .invalidFetchRequest, "FetchRequest<\(T.self)> has resultType \(request.resultType.rawValue) (\(what)), which does not fit its generic parameter \(T.self)",
            entityName: request.entity?.name ?? request.entityName)
    }

    func resolveEntity<T>(_ request: FetchRequest<T>) throws -> EntityDescription {
        guard let model else {
            throw ObjectGraphError(.noPersistentStore, "Context '\(debugName)' has no coordinator")
        }
        if let entity = request.entity, let own = model.entitiesByName[entity.name] { return own }
        guard let name = request.entityName ?? request.entity?.name else {
            throw ObjectGraphError(.invalidFetchRequest, "The fetch request names no entity")
        }
        guard let entity = model.entitiesByName[name] else {
            throw ObjectGraphError(.invalidFetchRequest, "The model has no entity named '\(name)'", entityName: name)
        }
        return entity
    }

    func storeRequest<T>(_ request: FetchRequest<T>, entity: EntityDescription, values: Bool, paging: Bool = true) -> StoreFetchRequest {
        StoreFetchRequest(
            entity: entity, includesSubentities: request.includesSubentities, predicate: request.predicate,
            sortDescriptors: request.sortDescriptors ?? [], fetchLimit: paging ? request.fetchLimit : 0,
            fetchOffset: paging ? request.fetchOffset : 0, includesPropertyValues: values)
    }

    /// Whether unsaved changes touch objects of the entity.
    func hasPendingChanges(of entity: EntityDescription, includesSubentities: Bool) -> Bool {
        if pendingDeletes.count > 0 { processPendingChanges() }
        func relevant(_ object: ManagedObject) -> Bool {
            includesSubentities ? object.entity.isKindOf(entity: entity) : object.entity === entity
        }
        return insertedObjects.contains(where: relevant) || deletedObjects.contains(where: relevant)
            || updatedObjects.contains { $0.hasChanges && relevant($0) }
    }

    // MARK: - Objects

    private func fetchObjects<T>(_ request: FetchRequest<T>, entity: EntityDescription) throws -> [ManagedObject] {
        let objects: [ManagedObject]
        if parent != nil {
            objects = try matchingThroughParent(request, entity: entity, for: .objects).compactMap(\.object)
        } else if request.includesPendingChanges && hasPendingChanges(of: entity, includesSubentities: request.includesSubentities) {
            objects = try matchingIDsWithPendingChanges(request, entity: entity).map { object(with: $0) }
        } else if request.fetchBatchSize > 0 {
            let rows = try coordinator.fetchRows(storeRequest(request, entity: entity, values: false))
            var result: [ManagedObject] = []
            result.reserveCapacity(rows.count)
            for start in stride(from: 0, to: rows.count, by: request.fetchBatchSize) {
                let ids = rows[start..<min(start + request.fetchBatchSize, rows.count)].map(\.id)
                let batch = FaultBatch(ids: ids)
                for id in ids {
                    let object = object(with: id)
                    if object.isFault { object.batch = batch }
                    result.append(object)
                }
            }
            objects = result
        } else {
            let rows = try coordinator.fetchRows(storeRequest(request, entity: entity, values: request.includesPropertyValues))
            objects = register(rows, asFaults: request.returnsObjectsAsFaults)
        }
        if let keyPaths = request.relationshipKeyPathsForPrefetching, !keyPaths.isEmpty {
            try prefetch(keyPaths, for: objects)
        }
        return objects
    }

    /// Registers fetched rows as objects: faults whose rows wait in the row cache, or objects
    /// filled at once.
    func register(_ rows: [StoreRow], asFaults: Bool) -> [ManagedObject] {
        var result: [ManagedObject] = []
        result.reserveCapacity(rows.count)
        if asFaults {
            let withValues = rows.filter { $0.snapshot != nil }
            if !withValues.isEmpty { coordinator.rowCache.register(withValues, retain: true) }
            var extra: [ManagedObjectID] = []
            for row in rows {
                let id = row.id
                if let existing = registered[id]?.takeUnretainedValue() {
                    if row.snapshot != nil { extra.append(id) }
                    result.append(existing)
                    continue
                }
                let object = makeFault(id)
                if row.snapshot != nil { object.flags.insert(.holdsRowCache) }
                register(object)
                result.append(object)
            }
            if !extra.isEmpty { coordinator.rowCache.release(extra) }
        } else {
            for row in rows {
                if let existing = registered[row.id]?.takeUnretainedValue() {
                    if existing.isFault, let snapshot = row.snapshot { materialize(existing, snapshot, holdsRowCache: false) }
                    result.append(existing)
                    continue
                }
                let object = makeFault(row.id)
                register(object)
                if let snapshot = row.snapshot { materialize(object, snapshot, holdsRowCache: false) }
                result.append(object)
            }
        }
        return result
    }

    /// The IDs matching a request with unsaved changes applied: store results less deleted and
    /// changed objects, plus changed and inserted objects that match now; sorted and paged in memory.
    func matchingIDsWithPendingChanges<T>(_ request: FetchRequest<T>, entity: EntityDescription) throws -> [ManagedObjectID] {
        let sorts = request.sortDescriptors ?? []
        let rows = try coordinator.fetchRows(storeRequest(request, entity: entity, values: !sorts.isEmpty, paging: false))
        func relevant(_ object: ManagedObject) -> Bool {
            request.includesSubentities ? object.entity.isKindOf(entity: entity) : object.entity === entity
        }
        var excluded = Set(deletedObjects.filter(relevant).map(\.objectID))
        let changed = updatedObjects.filter { $0.hasChanges && relevant($0) && !$0.isDeleted }
        for object in changed { excluded.insert(object.objectID) }
        var candidates: [ManagedObject] = []
        for object in Array(changed) + insertedObjects.filter({ relevant($0) && !$0.isDeleted }).sorted(by: { $0.objectID < $1.objectID }) {
            if let predicate = request.predicate, !(try predicate.evaluate(with: object)) { continue }
            candidates.append(object)
        }
        var ids: [ManagedObjectID]
        if sorts.isEmpty {
            ids = rows.map(\.id).filter { !excluded.contains($0) } + candidates.map(\.objectID)
        } else {
            let stored = register(rows.filter { !excluded.contains($0.id) }, asFaults: true)
            let all = try FetchSortDescriptor.sorted(stored + candidates, by: sorts, subject: { $0 })
            ids = all.map(\.objectID)
        }
        if request.fetchOffset > 0 { ids = Array(ids.dropFirst(request.fetchOffset)) }
        if request.fetchLimit > 0 { ids = Array(ids.prefix(request.fetchLimit)) }
        return ids
    }

    // MARK: - IDs

    private func fetchIDs<T>(_ request: FetchRequest<T>, entity: EntityDescription) throws -> [ManagedObjectID] {
        if parent != nil { return try matchingThroughParent(request, entity: entity, for: .objectIDs).map(\.id) }
        if request.includesPendingChanges && hasPendingChanges(of: entity, includesSubentities: request.includesSubentities) {
            return try matchingIDsWithPendingChanges(request, entity: entity)
        }
        let rows = try coordinator.fetchRows(storeRequest(request, entity: entity, values: request.includesPropertyValues))
        if request.includesPropertyValues {
            coordinator.rowCache.register(rows, retain: true)
            pinnedRows.append(contentsOf: rows.lazy.filter { $0.snapshot != nil }.map(\.id))
        }
        return rows.map(\.id)
    }

    // MARK: - Dictionaries

    private func fetchDictionaries<T>(_ request: FetchRequest<T>, entity: EntityDescription) throws -> [[String: Any]] {
        var properties: [PropertyDescription] = []
        if let names = request.propertiesToFetch {
            for item in names {
                let name = (item as? String) ?? (item as? PropertyDescription)?.name ?? "\(item)"
                guard let property = entity.propertiesByName[name] else {
                    throw ObjectGraphError(.invalidFetchRequest, "Entity '\(entity.name)' has no property '\(name)' to fetch", entityName: entity.name, key: name)
                }
                if (property as? RelationshipDescription)?.isToMany == true {
                    throw ObjectGraphError(.invalidFetchRequest, "'\(entity.name).\(name)' is to-many; dictionary results take attributes and to-one relationships", entityName: entity.name, key: name)
                }
                properties.append(property)
            }
        } else {
            properties = entity.attributes.filter { !$0.isTransient }
        }
        let rows = try coordinator.fetchRows(storeRequest(request, entity: entity, values: true))
        var result: [[String: Any]] = []
        var seen: Set<[Value]> = []
        for row in rows {
            guard let snapshot = row.snapshot else { continue }
            var dictionary: [String: Any] = [:]
            var key: [Value] = []
            for property in properties where property.index < snapshot.values.count || snapshot.entity.propertiesByName[property.name] != nil {
                guard let own = snapshot.entity.propertiesByName[property.name] else { continue }
                let value = snapshot.values[own.index]
                key.append(value)
                if let attribute = own as? AttributeDescription {
                    if attribute.attributeType == .transformable, case .data(let data) = value {
                        dictionary[own.name] = try? TransformableCoding.decode(data, valueType: attribute.valueType)
                    } else if let v = value.publicValue(for: attribute.attributeType) {
                        dictionary[own.name] = v
                    }
                } else if case .objectID(let id) = value {
                    dictionary[own.name] = id
                }
            }
            if request.returnsDistinctResults && !seen.insert(key).inserted { continue }
            result.append(dictionary)
        }
        return result
    }

    // MARK: - Prefetching

    /// Fetches the destinations of relationship key paths for many objects at once.
    func prefetch(_ keyPaths: [String], for objects: [ManagedObject]) throws {
        for keyPath in keyPaths {
            var level = objects
            for name in keyPath.split(separator: ".").map(String.init) {
                fulfillFaults(level)
                var next: [ManagedObject] = []
                var seen: Set<ObjectIdentifier> = []
                var byEntity: [ObjectIdentifier: (RelationshipDescription, [ManagedObject])] = [:]
                for object in level {
                    guard let relationship = object.entity.relationshipsByName[name] else {
                        throw ObjectGraphError(
                            .invalidFetchRequest, "Entity '\(object.entity.name)' has no relationship '\(name)' to prefetch (key path '\(keyPath)')",
                            entityName: object.entity.name, key: name)
                    }
                    byEntity[ObjectIdentifier(relationship), default: (relationship, [])].1.append(object)
                }
                for (relationship, sources) in byEntity.values {
                    if relationship.isToMany {
                        loadToMany(relationship, of: sources)
                        for source in sources {
                            for id in source.relationshipValue(relationship).ids {
                                let destination = object(with: id)
                                if seen.insert(ObjectIdentifier(destination)).inserted { next.append(destination) }
                            }
                        }
                    } else {
                        for source in sources {
                            guard let id = source.toOneID(relationship) else { continue }
                            let destination = object(with: id)
                            if seen.insert(ObjectIdentifier(destination)).inserted { next.append(destination) }
                        }
                    }
                }
                fulfillFaults(next)
                // Prefetched rows stay in the row cache while the context lives (until reset), so
                // the objects can be dropped and faulted again without going back to the store.
                let ids = next.filter { !$0.isFault && $0.flags.contains(.holdsRowCache) }.map(\.objectID)
                coordinator.rowCache.retain(ids)
                pinnedRows.append(contentsOf: ids)
                level = next
            }
        }
    }
}
