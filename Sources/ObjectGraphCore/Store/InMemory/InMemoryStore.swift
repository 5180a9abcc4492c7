import Foundation

/// A store that keeps its rows in memory, with the same structure and rules as the SQLite store
/// (tables by root entity, foreign keys, join tables, versions, uniqueness constraints). Its
/// predicates and sort descriptors are evaluated in memory.
///
/// A save validates everything first (versions, constraints), then applies: it is all or nothing.
final class InMemoryStore: StoreBackend {
    let identifier: String
    let metadata: [String: any Sendable]
    let model: ManagedObjectModel
    private let state: Protected<InMemoryState>

    var statementCount: Int { 0 }

    init(model: ManagedObjectModel, identifier: String = UUID().uuidString, state: InMemoryState? = nil, type: StoreType = .inMemory) {
        self.model = model
        self.identifier = identifier
        self.metadata = [
            PersistentStore.metadataIdentifierKey: identifier,
            PersistentStore.metadataTypeKey: type.rawValue,
            PersistentStore.metadataModelHashKey: model.versionHash,
            CoreDataMetadata.versionHashesKey: model.entityVersionHashesByName,
        ]
        self.state = Protected(state ?? InMemoryState())
    }

    /// Runs `body` with exclusive access to the rows.
    func withState<T>(_ body: (inout InMemoryState) throws -> T) rethrows -> T {
        try state.withLock { try body(&$0) }
    }

    /// A consistent copy of the rows (cheap: copy-on-write).
    var currentState: InMemoryState { state.withLock { $0 } }

    /// The rows reads see: a query generation's pinned copy while one is reading, else the current rows.
    private var readableState: InMemoryState {
        QueryGeneration.pinnedVersion(of: self, as: PinnedRows.self)?.state ?? currentState
    }

    /// A query generation's version of the store: a copy of its rows (copy-on-write, so it costs
    /// nothing until the next save changes them).
    final class PinnedRows: PinnedStoreVersion {
        let state: InMemoryState
        let backendID: ObjectIdentifier
        init(state: InMemoryState, backend: InMemoryStore) {
            self.state = state
            self.backendID = ObjectIdentifier(backend)
        }
    }

    func pinVersion(store: PersistentStore) throws -> any PinnedStoreVersion {
        PinnedRows(state: currentState, backend: self)
    }

    // MARK: - Reading

    func fetch(_ request: StoreFetchRequest, store: PersistentStore) throws -> [StoreRow] {
        let view = InMemoryView(state: readableState, store: store, model: model)
        var subjects = try view.matching(request)
        if !request.sortDescriptors.isEmpty {
            subjects = try FetchSortDescriptor.sorted(subjects, by: request.sortDescriptors, subject: { $0 })
        }
        var slice = subjects[...]
        if request.fetchOffset > 0 { slice = slice.dropFirst(request.fetchOffset) }
        if request.fetchLimit > 0 { slice = slice.prefix(request.fetchLimit) }
        return slice.map { StoreRow(id: $0.id, snapshot: request.includesPropertyValues ? $0.snapshot : nil) }
    }

    func count(_ request: StoreFetchRequest, store: PersistentStore) throws -> Int {
        var request = request
        request.sortDescriptors = []
        return try fetch(request, store: store).count
    }

    func snapshots(for ids: [ManagedObjectID], store: PersistentStore) throws -> [ManagedObjectID: Snapshot] {
        func read(_ state: InMemoryState) -> [ManagedObjectID: Snapshot] {
            var result: [ManagedObjectID: Snapshot] = [:]
            for id in ids {
                guard let pk = id.primaryKey, let snapshot = state.tables[id.entity.rootEntity.entityCode]?[pk] else { continue }
                result[id] = snapshot
            }
            return result
        }
        if let pinned = QueryGeneration.pinnedVersion(of: self, as: PinnedRows.self) { return read(pinned.state) }
        return state.withLock { read($0) }
    }

    func destinations(of relationship: RelationshipDescription, for sources: [ManagedObjectID], store: PersistentStore) throws
        -> [ManagedObjectID: [ManagedObjectID]]
    {
        let view = InMemoryView(state: readableState, store: store, model: model)
        var result: [ManagedObjectID: [ManagedObjectID]] = [:]
        for source in sources { result[source] = view.destinations(of: relationship, from: source) }
        return result
    }

    // MARK: - Writing

    func allocatePrimaryKeys(for entity: EntityDescription, count: Int) throws -> Int64 {
        state.withLock { state in state.allocate(root: entity.rootEntity.entityCode, count: count) }
    }

    func save(_ request: StoreSaveRequest, store: PersistentStore) throws -> StoreSaveResult {
        try state.withLock { state in
            try InMemorySave(request: request, store: store, model: model).apply(to: &state)
        }
    }

    func close() throws {}
}

/// The rows of an in-memory store.
struct InMemoryState: Sendable {
    /// Rows by root entity code, then primary key.
    var tables: [Int: [Int64: Snapshot]] = [:]
    /// The largest primary key handed out, by root entity code.
    var maxKeys: [Int: Int64] = [:]
    /// For each to-one relationship, the sources pointing at each destination key.
    var foreignKeys: [ObjectIdentifier: [Int64: Set<Int64>]] = [:]
    /// Positions in ordered to-many relationships stored through foreign keys: relationship → row → position.
    var foreignKeyOrders: [ObjectIdentifier: [Int64: Int]] = [:]
    /// The relationships `foreignKeyOrders` is keyed by.
    var orderedRelationships: [ObjectIdentifier: RelationshipDescription] = [:]
    /// Join tables by name: source key → destination key → entry (and the reverse direction).
    var joinForward: [String: [Int64: [Int64: JoinEntry]]] = [:]
    var joinBackward: [String: [Int64: [Int64: JoinEntry]]] = [:]
    /// Values of uniqueness constraints: "Entity#n" → values → keys.
    var uniqueness: [String: [[Value]: Set<Int64>]] = [:]

    struct JoinEntry: Sendable {
        var sourceEntity: Int
        var destinationEntity: Int
        var sourceOrder: Int?
        var destinationOrder: Int?
    }

    mutating func allocate(root: Int, count: Int) -> Int64 {
        let first = (maxKeys[root] ?? 0) + 1
        maxKeys[root] = first + Int64(count) - 1
        return first
    }
}

/// A row of an in-memory store seen by predicates and sort descriptors.
struct InMemoryRowSubject: PredicateSubject {
    let view: InMemoryView
    let id: ManagedObjectID
    let snapshot: Snapshot

    var predicateObjectID: ManagedObjectID? { id }
    var predicateEntity: EntityDescription { snapshot.entity }

    func predicateValue(forKey key: String) throws -> PredicateOperand {
        guard let property = snapshot.entity.propertiesByName[key] else {
            throw ObjectGraphError(
                .invalidFetchRequest, "Entity '\(snapshot.entity.name)' has no property '\(key)'",
                entityName: snapshot.entity.name, key: key)
        }
        if let relationship = property as? RelationshipDescription {
            if relationship.isToMany {
                return .objects(view.destinations(of: relationship, from: id).compactMap(view.subject(for:)))
            }
            guard case .objectID(let destination) = snapshot.values[relationship.index] else { return .object(nil) }
            return .object(view.subject(for: destination))
        }
        return .value(snapshot.values[property.index])
    }
}

/// A read-only view of an in-memory store's rows, for one fetch.
final class InMemoryView: @unchecked Sendable {  // immutable after init
    let state: InMemoryState
    let store: PersistentStore
    let model: ManagedObjectModel

    init(state: InMemoryState, store: PersistentStore, model: ManagedObjectModel) {
        self.state = state
        self.store = store
        self.model = model
    }

    func subject(for id: ManagedObjectID) -> InMemoryRowSubject? {
        guard let pk = id.primaryKey, let snapshot = state.tables[id.entity.rootEntity.entityCode]?[pk] else { return nil }
        return InMemoryRowSubject(view: self, id: ManagedObjectID(entity: snapshot.entity, store: store, primaryKey: pk), snapshot: snapshot)
    }

    func matching(_ request: StoreFetchRequest) throws -> [InMemoryRowSubject] {
        let codes = Set(request.includesSubentities ? request.entity.selfAndDescendants.map(\.entityCode) : [request.entity.entityCode])
        var result: [InMemoryRowSubject] = []
        for (pk, snapshot) in state.tables[request.entity.rootEntity.entityCode] ?? [:] where codes.contains(snapshot.entity.entityCode) {
            let subject = InMemoryRowSubject(view: self, id: ManagedObjectID(entity: snapshot.entity, store: store, primaryKey: pk), snapshot: snapshot)
            if let predicate = request.predicate, !(try predicate.evaluate(with: subject)) { continue }
            result.append(subject)
        }
        // Primary-key order, as SQLite's table scan, so unsorted fetches agree between stores.
        result.sort { $0.id.primaryKey! < $1.id.primaryKey! }
        return result
    }

    func destinations(of relationship: RelationshipDescription, from source: ManagedObjectID) -> [ManagedObjectID] {
        guard let pk = source.primaryKey, let destinationEntity = relationship.destinationEntity else { return [] }
        switch RelationalLayout.toMany(relationship) {
        case .inverseForeignKey:
            guard let inverse = relationship.inverseRelationship else { return [] }
            var keys = Array(state.foreignKeys[ObjectIdentifier(inverse)]?[pk] ?? [])
            if relationship.isOrdered {
                let orders = state.foreignKeyOrders[ObjectIdentifier(relationship)] ?? [:]
                keys.sort { (orders[$0] ?? Int.max, $0) < (orders[$1] ?? Int.max, $1) }
            } else {
                keys.sort()
            }
            let table = state.tables[destinationEntity.rootEntity.entityCode] ?? [:]
            return keys.compactMap { key in table[key].map { ManagedObjectID(entity: $0.entity, store: store, primaryKey: key) } }
        case .pairs(let table, let forward):
            let entries = (forward ? state.joinForward[table] : state.joinBackward[table])?[pk] ?? [:]
            var pairs = Array(entries)
            if relationship.isOrdered {
                pairs.sort { a, b in
                    let x = (forward ? a.value.destinationOrder : a.value.sourceOrder) ?? Int.max
                    let y = (forward ? b.value.destinationOrder : b.value.sourceOrder) ?? Int.max
                    return (x, a.key) < (y, b.key)
                }
            } else {
                pairs.sort { $0.key < $1.key }
            }
            return pairs.map { key, entry in
                let code = forward ? entry.destinationEntity : entry.sourceEntity
                let entity = code < model.entitiesByCode.count ? model.entitiesByCode[code] : destinationEntity
                return ManagedObjectID(entity: entity, store: store, primaryKey: key)
            }
        }
    }
}

/// One save applied to an in-memory store: checked first, then applied, so it is all or nothing.
struct InMemorySave {
    let request: StoreSaveRequest
    let store: PersistentStore
    let model: ManagedObjectModel

    func apply(to state: inout InMemoryState) throws -> StoreSaveResult {
        var result = StoreSaveResult()
        // Permanent IDs (computed without touching the state until every check has passed).
        var nextKeys: [Int: Int64] = [:]
        for object in request.inserted where object.id.isTemporaryID {
            let root = object.entity.rootEntity.entityCode
            let key = (nextKeys[root] ?? state.maxKeys[root] ?? 0) + 1
            nextKeys[root] = key
            result.permanentIDs[object.id] = ManagedObjectID(entity: object.entity, store: store, primaryKey: key)
        }
        let permanent = result.permanentIDs
        func resolve(_ id: ManagedObjectID) -> ManagedObjectID { permanent[id] ?? id }
        func resolved(_ values: [Value]) -> [Value] {
            values.map { if case .objectID(let id) = $0, let p = permanent[id] { .objectID(p) } else { $0 } }
        }

        // Optimistic locking.
        var conflicts: [VersionConflict] = []
        for object in request.updated + request.deleted {
            guard let expected = object.expectedVersion, let pk = object.id.primaryKey else { continue }
            let current = state.tables[object.entity.rootEntity.entityCode]?[pk]
            if current?.version != expected {
                conflicts.append(VersionConflict(id: object.id, expectedVersion: expected, persisted: current))
            }
        }
        if !conflicts.isEmpty { throw VersionConflictError(conflicts: conflicts) }

        // Uniqueness, against the rows as they will be after the save.
        let removed = Set(request.deleted.compactMap(\.id.primaryKey))
        var claimed: [String: [[Value]: Int64]] = [:]
        var uniqueConflicts: [ObjectGraphError] = []
        var constraintConflicts: [ConstraintConflict] = []
        var updatesByKey: [Int64: SavedObject] = [:]
        for update in request.updated { if let pk = update.id.primaryKey { updatesByKey[pk] = update } }
        for object in request.inserted + request.updated {
            let pk = resolve(object.id).primaryKey ?? -1
            for (key, entity, attributes) in RelationalLayout.uniquenessConstraints(of: object.entity)
            where object.changedIndices.isEmpty || attributes.contains(where: { object.changedIndices.contains($0.index) }) {
                let values = attributes.map { object.values[$0.index] }
                if !RelationalLayout.canCollide(values) { continue }
                let others = (state.uniqueness[key]?[values] ?? []).subtracting([pk]).subtracting(removed).filter { other in
                    // A row updated in this save keeps its old values only if its new ones are the same.
                    guard let update = updatesByKey[other] else { return true }
                    return attributes.map { update.values[$0.index] } == values
                }
                let inSave = claimed[key]?[values].map { $0 != pk } ?? false
                if !others.isEmpty || inSave {
                    let described = zip(attributes.map(\.name), values).map { "\($0) = \($1.debugText)" }.joined(separator: ", ")
                    uniqueConflicts.append(ObjectGraphError(
                        .constraintConflict, "Another \(entity.name) already has \(described)",
                        entityName: entity.name, key: attributes.map(\.name).joined(separator: ","), objectID: resolve(object.id)))
                    var existing: ManagedObjectID?
                    if !inSave, let other = others.min(), updatesByKey[other] == nil,
                       let row = state.tables[entity.rootEntity.entityCode]?[other] {
                        existing = ManagedObjectID(entity: row.entity, store: store, primaryKey: other)
                    }
                    constraintConflicts.append(ConstraintConflict(objectID: object.id, existing: existing))
                }
                claimed[key, default: [:]][values] = pk
            }
        }
        if !uniqueConflicts.isEmpty { throw ConstraintConflictError.make(uniqueConflicts, constraintConflicts) }

        // Every check passed: apply.
        for (root, key) in nextKeys { state.maxKeys[root] = max(state.maxKeys[root] ?? 0, key) }
        for object in request.deleted {
            guard let pk = object.id.primaryKey, let old = state.tables[object.entity.rootEntity.entityCode]?[pk] else { continue }
            unindex(old, pk: pk, in: &state)
            state.tables[object.entity.rootEntity.entityCode]?[pk] = nil
            for relationship in old.entity.relationships where relationship.usesJoinTable {
                guard case .pairs(let table, let forward) = RelationalLayout.toMany(relationship) else { continue }
                let partners = (forward ? state.joinForward[table]?[pk] : state.joinBackward[table]?[pk]) ?? [:]
                for partner in partners.keys {
                    if forward { state.joinBackward[table]?[partner]?[pk] = nil } else { state.joinForward[table]?[partner]?[pk] = nil }
                }
                if forward { state.joinForward[table]?[pk] = nil } else { state.joinBackward[table]?[pk] = nil }
            }
        }
        for object in request.inserted {
            let id = resolve(object.id)
            guard let pk = id.primaryKey else { continue }
            var values = resolved(object.values)
            for attribute in object.entity.attributes where attribute.isTransient { values[attribute.index] = .null }
            let snapshot = Snapshot(entity: object.entity, version: 1, values: values)
            state.tables[object.entity.rootEntity.entityCode, default: [:]][pk] = snapshot
            state.maxKeys[object.entity.rootEntity.entityCode] = max(state.maxKeys[object.entity.rootEntity.entityCode] ?? 0, pk)
            index(snapshot, pk: pk, in: &state)
            result.snapshots[id] = snapshot
        }
        for object in request.updated {
            guard let pk = object.id.primaryKey, let old = state.tables[object.entity.rootEntity.entityCode]?[pk] else { continue }
            var values = old.values
            let newValues = resolved(object.values)
            for index in object.changedIndices where index < values.count {
                let property = object.entity.properties[index]
                if (property as? AttributeDescription)?.isTransient == true || (property as? RelationshipDescription)?.isToMany == true { continue }
                values[index] = newValues[index]
            }
            unindex(old, pk: pk, in: &state)
            let snapshot = Snapshot(entity: old.entity, version: old.version + 1, values: values)
            state.tables[object.entity.rootEntity.entityCode]?[pk] = snapshot
            index(snapshot, pk: pk, in: &state)
            result.snapshots[object.id] = snapshot
        }
        for change in request.joinDeletes {
            guard case .pairs(let table, let forward) = RelationalLayout.toMany(change.relationship),
                  let s = resolve(change.source).primaryKey, let d = resolve(change.destination).primaryKey else { continue }
            let (src, dst) = forward ? (s, d) : (d, s)
            state.joinForward[table]?[src]?[dst] = nil
            state.joinBackward[table]?[dst]?[src] = nil
        }
        for change in request.joinInserts {
            guard case .pairs(let table, let forward) = RelationalLayout.toMany(change.relationship) else { continue }
            let source = resolve(change.source), destination = resolve(change.destination)
            guard let s = source.primaryKey, let d = destination.primaryKey else { continue }
            let (src, dst) = forward ? (s, d) : (d, s)
            let (srcEntity, dstEntity) = forward
                ? (source.entity.entityCode, destination.entity.entityCode) : (destination.entity.entityCode, source.entity.entityCode)
            if state.joinForward[table]?[src]?[dst] == nil {
                let entry = InMemoryState.JoinEntry(sourceEntity: srcEntity, destinationEntity: dstEntity)
                state.joinForward[table, default: [:]][src, default: [:]][dst] = entry
                state.joinBackward[table, default: [:]][dst, default: [:]][src] = entry
            }
        }
        for ordering in request.orderings {
            guard let s = resolve(ordering.source).primaryKey else { continue }
            guard ordering.relationship.isOrdered else { continue }
            switch RelationalLayout.toMany(ordering.relationship) {
            case .inverseForeignKey:
                for (position, destination) in ordering.destinations.enumerated() {
                    guard let d = resolve(destination).primaryKey else { continue }
                    state.foreignKeyOrders[ObjectIdentifier(ordering.relationship), default: [:]][d] = position
                    state.orderedRelationships[ObjectIdentifier(ordering.relationship)] = ordering.relationship
                }
            case .pairs(let table, let forward):
                for (position, destination) in ordering.destinations.enumerated() {
                    guard let d = resolve(destination).primaryKey else { continue }
                    let (src, dst) = forward ? (s, d) : (d, s)
                    if forward {
                        state.joinForward[table]?[src]?[dst]?.destinationOrder = position
                        state.joinBackward[table]?[dst]?[src]?.destinationOrder = position
                    } else {
                        state.joinForward[table]?[src]?[dst]?.sourceOrder = position
                        state.joinBackward[table]?[dst]?[src]?.sourceOrder = position
                    }
                }
            }
        }
        return result
    }

    func index(_ snapshot: Snapshot, pk: Int64, in state: inout InMemoryState) {
        for relationship in snapshot.entity.relationships where !relationship.isToMany {
            if case .objectID(let destination) = snapshot.values[relationship.index], let d = destination.primaryKey {
                state.foreignKeys[ObjectIdentifier(relationship), default: [:]][d, default: []].insert(pk)
            }
        }
        for (key, _, attributes) in RelationalLayout.uniquenessConstraints(of: snapshot.entity) {
            let values = attributes.map { snapshot.values[$0.index] }
            if RelationalLayout.canCollide(values) { state.uniqueness[key, default: [:]][values, default: []].insert(pk) }
        }
    }

    private func unindex(_ snapshot: Snapshot, pk: Int64, in state: inout InMemoryState) {
        for relationship in snapshot.entity.relationships where !relationship.isToMany {
            if case .objectID(let destination) = snapshot.values[relationship.index], let d = destination.primaryKey {
                state.foreignKeys[ObjectIdentifier(relationship)]?[d]?.remove(pk)
            }
        }
        for (key, _, attributes) in RelationalLayout.uniquenessConstraints(of: snapshot.entity) {
            let values = attributes.map { snapshot.values[$0.index] }
            state.uniqueness[key]?[values]?.remove(pk)
        }
    }
}
