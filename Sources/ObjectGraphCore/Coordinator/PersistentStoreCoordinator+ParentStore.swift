import Foundation

// The coordinator as a root context's parent store: reads go to the row cache, then to the store
// each object lives in; a save is split by store (configurations and `assign(_:to:)`) and written
// to each in one transaction.

extension PersistentStoreCoordinator: ParentStore {
    func snapshots(for ids: [ManagedObjectID], maximumAge: Double?, leasing: Bool, requester: StoreRequester) throws -> ViewedSnapshots {
        if let generation = requester.generation {
            // A pinned context reads its generation, never the row cache (which has the latest rows).
            return ViewedSnapshots(snapshots: try generation.reading { try readSnapshots(ids.filter { !$0.isTemporaryID }) })
        }
        var result = ViewedSnapshots()
        var referenced: [ManagedObjectID] = []
        var unread: [ManagedObjectID] = []
        for id in ids where !id.isTemporaryID && result.snapshots[id] == nil {
            if let snapshot = rowCache.retainSnapshot(for: id, maximumAge: maximumAge) {
                result.snapshots[id] = snapshot
                referenced.append(id)
            } else {
                unread.append(id)
            }
        }
        if let metrics = instrumentation.metrics {
            if !referenced.isEmpty { metrics.rowCacheHits.increment(by: referenced.count) }
            if !unread.isEmpty { metrics.rowCacheMisses.increment(by: unread.count) }
        }
        if !unread.isEmpty {
            let fetched: [ManagedObjectID: Snapshot]
            do { fetched = try fetchSnapshots(unread) } catch {
                rowCache.release(referenced)
                throw error
            }
            for (id, snapshot) in fetched {
                result.snapshots[id] = snapshot
                referenced.append(id)
            }
        }
        if leasing {
            if !referenced.isEmpty { result.leases = RowLeases(cache: rowCache, ids: referenced) }
        } else if !referenced.isEmpty {
            rowCache.release(referenced)
        }
        return result
    }

    /// The snapshots of rows a root context's faults already hold references on (fetched as
    /// faults), stale or not, no older than `maximumAge` (see ``RowCache/heldSnapshot(for:maximumAge:)``);
    /// counted as row-cache hits, as ``snapshots(for:maximumAge:leasing:requester:)`` counts them.
    func heldSnapshots(for ids: [ManagedObjectID], maximumAge: Double?) -> [ManagedObjectID: Snapshot] {
        var held: [ManagedObjectID: Snapshot] = [:]
        for id in ids {
            if let snapshot = rowCache.heldSnapshot(for: id, maximumAge: maximumAge) { held[id] = snapshot }
        }
        if !held.isEmpty, let metrics = instrumentation.metrics { metrics.rowCacheHits.increment(by: held.count) }
        return held
    }

    func destinations(of relationship: RelationshipDescription, for sources: [ManagedObjectID], requester: StoreRequester) throws
        -> [ManagedObjectID: [ManagedObjectID]] {
        try requester.reading { try destinations(of: relationship, for: sources.filter { !$0.isTemporaryID }) }
    }

    func rows(_ request: StoreFetchRequest, leasing: Bool, requester: StoreRequester) throws -> FetchedRows {
        try instrumented(fetch: request, counting: false) {
            // Each of several stores orders and pages only its own rows: the requester orders the union.
            let stores = persistentStores
            let single = stores.count <= 1
            // With one store, the destinations of the request's to-one prefetches may come with
            // the rows, from the same statement.
            if single, let store = stores.first, !request.prefetchedToOnes.isEmpty {
                var destinations: [StoreRow] = []
                if let generation = requester.generation {
                    let rows = try generation.reading { try fetchRows(request, from: store, destinations: &destinations) }
                    return FetchedRows(rows: rows, isOrdered: true, leases: nil, destinations: destinations)
                }
                let mark = rowCache.evictionMark
                let rows = try fetchRows(request, from: store, destinations: &destinations)
                // The destinations' rows are leased whether or not the rows are: a prefetch keeps
                // its rows in the row cache (``ManagedObjectContext/prefetch(_:for:)``).
                return FetchedRows(
                    rows: rows, isOrdered: true, leases: lease(leasing ? rows + destinations : destinations, readSince: mark),
                    destinations: destinations)
            }
            if let generation = requester.generation {
                return FetchedRows(rows: try generation.reading { try fetchRows(single ? request : request.unpaged) }, isOrdered: single, leases: nil)
            }
            let mark = rowCache.evictionMark
            let rows = try fetchRows(single ? request : request.unpaged)
            return FetchedRows(rows: rows, isOrdered: single, leases: leasing ? lease(rows, readSince: mark) : nil)
        } rows: { $0.rows.count }
    }

    /// The rows of a fetch, as ``rows(_:leasing:requester:)`` returns them, read with no thread
    /// waiting for the store: nil when that cannot be (several stores, a pinned query generation,
    /// a store that reads synchronously, a fetch of more than one statement).
    func rowsAsync(_ request: StoreFetchRequest, leasing: Bool, requester: StoreRequester) async throws -> FetchedRows? {
        let stores = persistentStores
        guard requester.generation == nil, stores.count == 1, let store = stores.first else { return nil }
        let mark = rowCache.evictionMark
        let started = DispatchTime.now().uptimeNanoseconds
        guard let (rows, destinations) = try await store.backend.fetchAsync(request, store: store) else { return nil }
        if instrumentation.isOn {
            // The metrics and the slow-operation log of a fetch (not its span: the read has no
            // span of its own yet).
            let elapsed = DispatchTime.now().uptimeNanoseconds &- started
            if let metrics = instrumentation.metrics {
                metrics.fetches.increment()
                metrics.fetchedRows.increment(by: rows.count)
                if instrumentation.measuresTime { metrics.fetchDuration.recordNanoseconds(Int64(clamping: elapsed)) }
            }
            let threshold = instrumentation.slowThreshold.load(ordering: .relaxed)
            if instrumentation.measuresTime, threshold > 0, elapsed >= UInt64(threshold) {
                logger.warning(
                    "slow fetch of \(request.entity.name) — \(rows.count) rows — \(String(format: "%.3f", Double(elapsed) / 1e6)) ms",
                    metadata: ["coordinator": "\(name ?? "unnamed")"])
            }
        }
        // As ``rows(_:leasing:requester:)``: the destinations are leased whether or not the rows are.
        return FetchedRows(
            rows: rows, isOrdered: true, leases: lease(leasing ? rows + destinations : destinations, readSince: mark), destinations: destinations)
    }

    func savedRows(_ request: StoreFetchRequest, requester: StoreRequester) throws -> [StoreRow] {
        try requester.reading { try fetchRows(request) }
    }

    func savedKeys(_ request: StoreFetchRequest, requester: StoreRequester) throws -> [(PersistentStore, [Int64], [Int32])] {
        try requester.reading { try fetchKeys(request) }
    }

    /// A fetch or count, with its span, metrics and slow-operation log.
    @inline(__always)
    private func instrumented<T>(fetch request: StoreFetchRequest, counting: Bool, _ body: () throws -> T, rows: (T) -> Int) rethrows -> T {
        guard instrumentation.isOn else { return try body() }
        return try instrumentation.span(counting ? "ObjectGraph count" : "ObjectGraph fetch") { span in
            span?.attributes["objectgraph.entity"] = request.entity.name
            let result = try measured(\.fetchDuration, describe: { (result: T?) in
                let what = counting ? "count of" : "fetch of"
                let predicate = request.predicate.map { " where \($0)" } ?? ""
                return "\(what) \(request.entity.name)\(predicate)" + (result.map { counting ? " — \(rows($0))" : " — \(rows($0)) rows" } ?? " (failed)")
            }, body)
            let count = rows(result)
            span?.attributes["objectgraph.rows"] = count
            if let metrics = instrumentation.metrics {
                metrics.fetches.increment()
                if !counting { metrics.fetchedRows.increment(by: count) }
            }
            return result
        }
    }

    /// Registers fetched rows in the row cache with a reference each, for the requester's faults
    /// (unless a batch request evicted rows since the read began, `mark`).
    func lease(_ rows: [StoreRow], readSince mark: UInt64? = nil) -> RowLeases? {
        let withValues = rows.filter { $0.snapshot != nil }
        guard !withValues.isEmpty else { return nil }
        rowCache.register(withValues, retain: true, readSince: mark)
        return RowLeases(cache: rowCache, ids: withValues.map(\.id))
    }

    func count(_ request: StoreFetchRequest, requester: StoreRequester) throws -> Int {
        try instrumented(fetch: request, counting: true) {
            try requester.reading {
                guard persistentStores.count > 1, request.fetchLimit > 0 || request.fetchOffset > 0 else { return try countRows(request) }
                return request.pagedCount(ofUnpaged: try countRows(request.unpaged))
            }
        } rows: { $0 }
    }

    func permanentIDs(for ids: [ManagedObjectID], assignments: [ManagedObjectID: PersistentStore], requester: StoreRequester) throws
        -> PermanentIDGrant {
        PermanentIDGrant(mapping: try allocatePermanentIDs(for: ids, assignments: assignments), isHandedDown: false)
    }

    func save(_ request: ContextSaveRequest, requester: StoreRequester) throws -> ContextSaveResult {
        guard instrumentation.isOn else {
            return try write(request, requester: requester)
        }
        let (inserted, updated, deleted) = (request.inserted.count, request.updated.count, request.deleted.count)
        let result = try instrumentation.span("ObjectGraph save") { span in
            span?.attributes["objectgraph.context"] = requester.debugName
            span?.attributes["objectgraph.inserted"] = inserted
            span?.attributes["objectgraph.updated"] = updated
            span?.attributes["objectgraph.deleted"] = deleted
            return try measured(\.saveDuration, describe: { (_: ContextSaveResult?) in
                "save by '\(requester.debugName)': \(inserted) inserted, \(updated) updated, \(deleted) deleted"
            }) { try write(request, requester: requester) }
        }
        if let metrics = instrumentation.metrics {
            metrics.saves.increment()
            metrics.savedObjects.increment(by: inserted + updated + deleted)
        }
        return result
    }

    /// Writes a context's save to the stores.
    private func write(_ request: ContextSaveRequest, requester: StoreRequester) throws -> ContextSaveResult {
        // One request per store, in the order the stores were added, each filled in place (a copy
        // would copy its growing arrays once per object). Most coordinators have one store: an
        // object's store is then found without hashing or locking, once per object.
        let stores = persistentStores
        var requests = [StoreSaveRequest](repeating: StoreSaveRequest(), count: stores.count)
        func index(of store: PersistentStore, for id: ManagedObjectID) throws -> Int {
            if stores.count == 1 && stores[0] === store { return 0 }
            if let index = stores.firstIndex(where: { $0 === store }) ?? stores.firstIndex(where: { $0.identifier == store.identifier }) {
                return index
            }
            throw ObjectGraphError(
                .objectNotFound, "\(id) belongs to no store of this coordinator (was its store removed?)", entityName: id.entityName, objectID: id)
        }
        // The store of each entity without an assignment, looked up once per entity.
        var lastEntity: EntityDescription?
        var lastIndex = 0
        var indexByEntity: [ObjectIdentifier: Int] = [:]
        func index(forNew object: ChangedObject) throws -> Int {
            if let store = object.store { return try index(of: store, for: object.id) }
            if object.entity === lastEntity { return lastIndex }
            let found = try indexByEntity[ObjectIdentifier(object.entity)] ?? index(of: store(for: object.entity), for: object.id)
            indexByEntity[ObjectIdentifier(object.entity)] = found
            lastEntity = object.entity
            lastIndex = found
            return found
        }
        func index(ofExisting id: ManagedObjectID) throws -> Int {
            guard let store = id.persistentStore else {
                throw ObjectGraphError(.objectNotFound, "\(id) belongs to no store of this coordinator", entityName: id.entityName, objectID: id)
            }
            return try index(of: store, for: id)
        }
        func relationshipChanges(_ object: ChangedObject, into request: inout StoreSaveRequest) {
            for change in object.relationships {
                guard let relationship = object.entity.properties[change.index] as? RelationshipDescription else { continue }
                if relationship.usesJoinTable {
                    for id in change.added { request.joinInserts.append(JoinChange(relationship: relationship, source: object.id, destination: id)) }
                    for id in change.removed { request.joinDeletes.append(JoinChange(relationship: relationship, source: object.id, destination: id)) }
                }
                if let order = change.order {
                    request.orderings.append(OrderingChange(relationship: relationship, source: object.id, destinations: order))
                }
            }
        }
        for object in request.inserted {
            let index = try index(forNew: object)
            requests[index].inserted.append(SavedObject(id: object.id, entity: object.entity, values: object.values, changedIndices: [], expectedVersion: nil))
            relationshipChanges(object, into: &requests[index])
        }
        for object in request.updated {
            let index = try index(ofExisting: object.id)
            // Only what lives in the row: transient attributes are not written.
            let columns = object.changedIndices.filter(object.entity.isStoredInRow)
            if !columns.isEmpty {
                requests[index].updated.append(SavedObject(
                    id: object.id, entity: object.entity, values: object.values, changedIndices: columns, expectedVersion: object.base?.version))
            }
            relationshipChanges(object, into: &requests[index])
        }
        for object in request.deleted {
            let index = try index(ofExisting: object.id)
            requests[index].deleted.append(SavedObject(
                id: object.id, entity: object.entity, values: [], changedIndices: [], expectedVersion: object.base?.version))
        }
        // Read-only stores refuse before anything is written.
        for (store, request) in zip(stores, requests) where store.isReadOnly && !request.isEmpty {
            throw ObjectGraphError(.readOnly, "The store \(store.url?.path ?? store.identifier) is read-only; nothing was written", url: store.url)
        }
        var result = ContextSaveResult()
        let info = TransactionInfo(author: requester.transactionAuthor, contextName: requester.name)
        var historyNumbers: [String: Int64] = [:]
        for (store, request) in zip(stores, requests) where !request.isEmpty {
            let saved = try save(request, to: store, info: info)
            if let number = saved.historyTransactionNumber { historyNumbers[store.identifier] = number }
            // The first (usually the only) store's result is taken whole: merging rebuilds it.
            if result.permanentIDs.isEmpty { result.permanentIDs = saved.permanentIDs } else {
                result.permanentIDs.merge(saved.permanentIDs) { _, new in new }
            }
            if result.snapshots.isEmpty { result.snapshots = saved.snapshots } else {
                result.snapshots.merge(saved.snapshots) { _, new in new }
            }
        }
        if !historyNumbers.isEmpty { result.historyToken = PersistentHistoryToken(transactionNumbers: historyNumbers) }
        return result
    }

    func permanentID(forTemporary id: ManagedObjectID) -> ManagedObjectID? { nil }

    var resolvesTemporaryIDs: Bool { false }

    var reinsertsDeletedObjects: Bool { true }

    func describeConflict(_ conflict: VersionConflict, requester: StoreRequester) -> String {
        let state = conflict.persisted.map { "the store has version \($0.version)" } ?? "the row was deleted"
        return "\(conflict.id) was changed by another context since context '\(requester.debugName)' read it (read version \(conflict.expectedVersion), \(state))"
    }

    var conflictSummary: String { "optimistic locking failures" }

    var nameInMessages: String { "a persistent store coordinator" }

    var coordinatorBehind: PersistentStoreCoordinator? { self }

    func adopt(_ child: ManagedObjectContext) {}

    func release(_ child: ManagedObjectContext) {}

    /// The contexts on this coordinator that merge automatically hear a save into its stores.
    func announceSave(_ changes: ManagedObjectContext.SaveChanges, from requester: StoreRequester) {
        didSave(changes, from: requester.context)
    }

    func followSaves(_ handler: @escaping @Sendable (ManagedObjectContext.SaveChanges, ObjectIdentifier) -> Void) -> SaveSubscription? {
        subscribeToSaves(handler)
    }

    func pinnedGeneration(for token: QueryGenerationToken, requester: StoreRequester) throws -> QueryGeneration {
        if token == .current { return try pinQueryGeneration() }
        guard let generation = queryGeneration(for: token) else {
            throw ObjectGraphError(
                .unsupported,
                "Cannot pin context '\(requester.debugName)' to \(token): no context of this coordinator is pinned to that generation any more; pin to QueryGenerationToken.current")
        }
        return generation
    }

    // MARK: - Routing objects to stores

    /// The store an object of an entity is saved to when no store was assigned: the first store
    /// whose configuration has the entity (a store added with no configuration has every entity),
    /// writable ones first.
    func store(for entity: EntityDescription) throws -> PersistentStore {
        let stores = persistentStores
        let candidates = stores.filter { holds($0, entity) }
        guard let store = candidates.first(where: { !$0.isReadOnly }) ?? candidates.first else {
            let reason = stores.isEmpty ? "has no persistent store" : "has no store whose configuration includes entity '\(entity.name)'"
            throw ObjectGraphError(.noPersistentStore, "The coordinator \(reason) to save \(entity.name) objects to", entityName: entity.name)
        }
        return store
    }

    /// Core Data's name for the configuration that holds every entity.
    static let defaultConfigurationName = "PF_DEFAULT_CONFIGURATION_NAME"

    /// Whether objects of `entity` can live in `store`: a store added without a configuration, or
    /// with the default one, holds every entity; another holds the entities of its configuration
    /// and their sub-entities.
    func holds(_ store: PersistentStore, _ entity: EntityDescription) -> Bool {
        guard let name = store.configurationName, name != Self.defaultConfigurationName else { return true }
        return managedObjectModel.entities(forConfigurationName: name)?.contains { entity.isKindOf(entity: $0) } ?? false
    }
}
