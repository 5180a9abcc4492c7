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
    /// What the store is, for messages: its type, and the file an atomic store keeps its rows in.
    private let type: StoreType
    private let location: URL?

    var statementCount: Int { 0 }

    init(
        model: ManagedObjectModel, identifier: String = UUID().uuidString, state: InMemoryState? = nil, type: StoreType = .inMemory,
        location: URL? = nil
    ) {
        self.model = model
        self.type = type
        self.location = location
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

    /// Runs `body`, which changes the rows, with exclusive access to them; throws instead once the
    /// store was closed (its rows are gone: nothing may be written from them).
    func changingState<T>(_ body: (inout InMemoryState) throws -> T) throws -> T {
        try state.withLock { state in
            guard !state.isClosed else {
                let place = location.map { " at \($0.path)" } ?? ""
                throw ObjectGraphError(.io, "The \(type) store\(place) was removed from its coordinator; nothing was saved", url: location)
            }
            return try body(&state)
        }
    }

    /// A consistent copy of the rows (cheap: copy-on-write).
    var currentState: InMemoryState { state.withLock { $0 } }

    /// The rows reads see: a query generation's pinned copy while one is reading, else the current rows.
    private var readableState: InMemoryState {
        QueryGeneration.pinnedVersion(of: self, as: PinnedRows.self)?.content ?? currentState
    }

    /// A query generation's version of the store: a copy of its rows (copy-on-write, so it costs
    /// nothing until the next save changes them).
    typealias PinnedRows = PinnedContent<InMemoryState>

    func pinVersion(store: PersistentStore) throws -> any PinnedStoreVersion {
        PinnedRows(currentState, backend: self)
    }

    // MARK: - Reading

    func fetch(_ request: StoreFetchRequest, store: PersistentStore) throws -> [StoreRow] {
        let view = InMemoryView(state: readableState, store: store, model: model)
        return try request.rows(of: try view.matching(request))
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
        if let pinned = QueryGeneration.pinnedVersion(of: self, as: PinnedRows.self) { return read(pinned.content) }
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
        try changingState { state in state.allocate(root: entity.rootEntity.entityCode, count: count) }
    }

    func save(_ request: StoreSaveRequest, store: PersistentStore) throws -> StoreSaveResult {
        try changingState { state in
            try InMemorySave(request: request, store: store, model: model).apply(to: &state)
        }
    }

    /// Drops the rows: they hold object IDs, which hold the store, and so the store, its rows and
    /// its model would keep each other alive. A removed in-memory store is gone, as in Core Data.
    func close() throws {
        state.withLock { state in
            state = InMemoryState()
            state.isClosed = true
        }
    }

    func coordinatorWentAway() {
        try? close()
    }
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
    /// Set when the store is closed, its rows dropped: nothing is written any more.
    var isClosed = false

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
typealias InMemoryRowSubject = RowSubject<InMemoryView>

/// A read-only view of an in-memory store's rows, for one fetch.
final class InMemoryView: RowView, @unchecked Sendable {  // immutable after init
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
