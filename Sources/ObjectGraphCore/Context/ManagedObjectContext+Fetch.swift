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
        freezeConfiguration()
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
    /// - Throws: as ``fetch(_:)-(FetchRequest<T>)``.
    public func count<T>(for request: FetchRequest<T>) throws -> Int {
        assertOnQueue("count(for:)")
        freezeConfiguration()
        deliverMailIfNeeded()
        let entity = try resolveEntity(request)
        try request.predicate?.validate()
        return try viewCount(storeRequest(request, entity: entity, values: false), includingPendingChanges: request.includesPendingChanges)
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

    func storeRequest<T>(_ request: FetchRequest<T>, entity: EntityDescription, values: Bool) -> StoreFetchRequest {
        StoreFetchRequest(
            entity: entity, includesSubentities: request.includesSubentities, predicate: request.predicate,
            sortDescriptors: request.sortDescriptors ?? [], fetchLimit: request.fetchLimit,
            fetchOffset: request.fetchOffset, includesPropertyValues: values)
    }

    // MARK: - Objects and IDs

    /// What a fetch is for.
    enum FetchPurpose: Sendable {
        case objects, objectIDs
    }

    /// What a fetch matched: objects (registered here) or IDs, as its purpose asked.
    enum FetchMatches {
        /// The objects, and the destinations of to-one prefetches the store read with them (kept
        /// alive here until the fetch's prefetching has taken them).
        case objects([ManagedObject], destinations: [ManagedObject] = [])
        case ids([ManagedObjectID])

        var objects: [ManagedObject] {
            guard case .objects(let objects, _) = self else { preconditionFailure("ObjectGraph: a fetch of IDs has no objects") }
            return objects
        }

        var ids: [ManagedObjectID] {
            switch self {
            case .objects(let objects, _): objects.map(\.objectID)
            case .ids(let ids): ids
            }
        }
    }

    /// The objects a request matches as this context sees them (its parent store's rows with its
    /// unsaved changes applied), registered here, in order.
    private func fetchObjects<T>(_ request: FetchRequest<T>, entity: EntityDescription) throws -> [ManagedObject] {
        try prefetched(request, try matches(request, entity: entity, for: .objects))
    }

    /// The objects a fetch matched, with the relationships it asks to prefetch filled.
    func prefetched<T>(_ request: FetchRequest<T>, _ matched: FetchMatches) throws -> [ManagedObject] {
        let objects = matched.objects
        if let keyPaths = request.relationshipKeyPathsForPrefetching, !keyPaths.isEmpty {
            try withExtendedLifetime(matched) { try prefetch(keyPaths, for: objects) }
        }
        return objects
    }

    private func fetchIDs<T>(_ request: FetchRequest<T>, entity: EntityDescription) throws -> [ManagedObjectID] {
        try matches(request, entity: entity, for: .objectIDs).ids
    }

    /// The one fetch path. The parent store orders and pages the rows when nothing unsaved (here or
    /// in a parent) touches the entity; otherwise the rows come unordered, are registered as
    /// objects here, and are sorted and paged in memory.
    func matches<T>(_ request: FetchRequest<T>, entity: EntityDescription, for purpose: FetchPurpose) throws -> FetchMatches {
        let plan = matchPlan(request, entity: entity, for: purpose)
        let fetched = try viewRows(plan.asked, includingPendingChanges: request.includesPendingChanges, leasing: plan.leasing, forChild: false)
        return try matches(request, plan: plan, fetched: fetched)
    }

    /// What a fetch asks its parent store, and how its rows become what it returns.
    struct MatchPlan: Sendable {
        var purpose: FetchPurpose
        var asked: StoreFetchRequest
        var batched: Bool
        var asFaults: Bool
        /// Whether the rows come with references on the row cache's rows, for faults.
        var leasing: Bool
    }

    func matchPlan<T>(_ request: FetchRequest<T>, entity: EntityDescription, for purpose: FetchPurpose) -> MatchPlan {
        let sorts = request.sortDescriptors ?? []
        let batched = purpose == .objects && request.fetchBatchSize > 0
        // Values come with the rows when the objects want them, when fetched IDs fill the row cache,
        // or when a parent context may hand back rows to sort here.
        let values = (purpose == .objects && !batched && request.includesPropertyValues)
            || (purpose == .objectIDs && request.includesPropertyValues)
            || (!sorts.isEmpty && parentStore.resolvesTemporaryIDs)
        let asFaults = purpose == .objects && request.returnsObjectsAsFaults
        var asked = storeRequest(request, entity: entity, values: values)
        // Only from the coordinator: a parent context's rows are its view of its objects, which the
        // store's rows of their destinations are not.
        if purpose == .objects && !batched && values && parentStore is PersistentStoreCoordinator,
           let keyPaths = request.relationshipKeyPathsForPrefetching {
            asked.prefetchedToOnes = Self.toOnesFirst(in: keyPaths, of: entity)
        }
        return MatchPlan(
            purpose: purpose, asked: asked, batched: batched, asFaults: asFaults, leasing: values && (asFaults || purpose == .objectIDs))
    }

    /// What a fetch matched, from the rows this context sees for its plan.
    func matches<T>(_ request: FetchRequest<T>, plan: MatchPlan, fetched: FetchedRows) throws -> FetchMatches {
        let sorts = request.sortDescriptors ?? []
        let purpose = plan.purpose, batched = plan.batched, asFaults = plan.asFaults
        if fetched.isOrdered {
            switch purpose {
            case .objectIDs:
                if let leases = fetched.leases {
                    // Fetched IDs with their values keep the rows cached until reset().
                    for row in fetched.rows where row.snapshot != nil && leases.claim(row.id) { pinnedRows.append(row.id) }
                }
                return .ids(fetched.rows.map(\.id))
            case .objects where batched:
                var result: [ManagedObject] = []
                result.reserveCapacity(fetched.rows.count)
                for start in stride(from: 0, to: fetched.rows.count, by: request.fetchBatchSize) {
                    let ids = fetched.rows[start..<min(start + request.fetchBatchSize, fetched.rows.count)].map(\.id)
                    let batch = FaultBatch(ids: ids)
                    for id in ids {
                        let object = object(with: id)
                        if object.isFault { object.join(batch) }
                        result.append(object)
                    }
                }
                return .objects(result)
            case .objects:
                let objects = register(fetched.rows, asFaults: asFaults, leases: fetched.leases)
                return .objects(objects, destinations: registerDestinations(of: fetched))
            }
        }

        // Unordered: objects here, sorted and paged in memory.
        var objects = register(fetched.rows, asFaults: false, leases: fetched.leases)
        let destinations = registerDestinations(of: fetched)
        if !sorts.isEmpty {
            try fillFaults(objects)
            objects = try FetchSortDescriptor.sorted(objects, by: sorts, subject: { $0 })
        }
        if request.fetchOffset > 0 { objects = Array(objects.dropFirst(request.fetchOffset)) }
        if request.fetchLimit > 0 { objects = Array(objects.prefix(request.fetchLimit)) }
        return .objects(objects, destinations: destinations)
    }

    /// Registers the destinations a store read with a fetch's rows (``FetchedRows/destinations``),
    /// filled, as the fetch's prefetching would have filled them (holding their rows in the row
    /// cache, which the coordinator leased for them).
    private func registerDestinations(of fetched: FetchedRows) -> [ManagedObject] {
        fetched.destinations.isEmpty ? [] : register(fetched.destinations, asFaults: false, leases: fetched.leases)
    }

    /// Registers fetched rows as objects: faults that hold their rows in the row cache (when they
    /// can claim a lease), or objects filled at once.
    func register(_ rows: [StoreRow], asFaults: Bool, leases: RowLeases?) -> [ManagedObject] {
        var result: [ManagedObject] = []
        result.reserveCapacity(rows.count)
        // One growth of the identity map for the whole batch, not one per doubling.
        registered.reserveCapacity(registered.count + rows.count)
        for row in rows {
            let object: ManagedObject
            if let existing = registered[row.id]?.object {
                object = existing
            } else {
                object = makeFault(row.id)
                register(object)
            }
            result.append(object)
            guard let snapshot = row.snapshot, object.isFault else { continue }
            let leased = leases?.claim(row.id) ?? false
            if !(asFaults && leased && object.state.holdRowCacheAsFault()) {
                materialize(object, snapshot, holdsRowCache: leased)
            }
        }
        return result
    }

    // MARK: - Dictionaries

    /// The key of `propertiesToFetch` that asks for each row's object ID.
    static let objectIDKey = "objectID"

    private func fetchDictionaries<T>(_ request: FetchRequest<T>, entity: EntityDescription) throws -> [[String: Any]] {
        var properties: [PropertyDescription] = []
        var includesObjectID = false
        if let names = request.propertiesToFetch {
            for item in names {
                let name = (item as? String) ?? (item as? PropertyDescription)?.name ?? "\(item)"
                if name == Self.objectIDKey {
                    // Core Data's "evaluatedObject" expression, as the common plain key: each row's ID.
                    includesObjectID = true
                    continue
                }
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
        let rows = try parentStore.savedRows(storeRequest(request, entity: entity, values: true), requester: storeRequester)
        var result: [[String: Any]] = []
        var seen: Set<[Value]> = []
        for row in rows {
            guard let snapshot = row.snapshot else { continue }
            var dictionary: [String: Any] = [:]
            var key: [Value] = []
            if includesObjectID {
                dictionary[Self.objectIDKey] = canonical(row.id)
                key.append(.objectID(row.id))
            }
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

    /// The to-one relationships of `entity` that key paths to prefetch start with, each once: a
    /// store may read their destinations with the fetched rows.
    static func toOnesFirst(in keyPaths: [String], of entity: EntityDescription) -> [RelationshipDescription] {
        var result: [RelationshipDescription] = []
        for keyPath in keyPaths {
            let name = keyPath.split(separator: ".", maxSplits: 1).first.map(String.init) ?? keyPath
            guard let relationship = entity.relationshipsByName[name], !relationship.isToMany, relationship.destinationEntity != nil,
                  !result.contains(where: { $0 === relationship }) else { continue }
            result.append(relationship)
        }
        return result
    }

    /// Fetches the destinations of relationship key paths for many objects at once.
    func prefetch(_ keyPaths: [String], for objects: [ManagedObject]) throws {
        for keyPath in keyPaths {
            var level = objects
            for name in keyPath.split(separator: ".").map(String.init) {
                try fillFaults(level)
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
                        try readToMany(relationship, of: sources)
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
                try fillFaults(next)
                // Prefetched rows stay in the row cache while the context lives (until reset), so
                // the objects can be dropped and faulted again without going back to the store.
                let ids = next.filter { !$0.isFault && $0.state.holdsRowCache }.map(\.objectID)
                coordinator.rowCache.retain(ids)
                pinnedRows.append(contentsOf: ids)
                level = next
            }
        }
    }
}
