import Foundation
import Synchronization

/// The file format of an atomic store.
enum AtomicFormat: Sendable {
    case binary, xml
}

/// An atomic store (`.binary`, `.xml`): an in-memory store whose whole content is written to a
/// property-list file after every save (to a temporary file, then renamed over the old one, so
/// the file is always either the old content or the new), and read back when the store is added.
///
/// The file records the model that wrote it, as an SQLite store does: its entities' version hashes
/// (`versionHashes`, the store's `NSStoreModelVersionHashes`) and the compiled model, as Core Data
/// caches it in `Z_MODELCACHE` (`modelCache`). Files written before either was recorded stay
/// readable; the next save adds them.
final class AtomicStore: StoreBackend {
    private let memory: InMemoryStore
    /// The file's rows, bound to the store (object IDs need it) on first use.
    private let unbound: Protected<AtomicFile?>
    private let url: URL
    private let format: AtomicFormat
    private let model: ManagedObjectModel
    /// The model's version hashes and compiled model, written into every version of the file.
    private let versionHashes: [String: Data]
    private let modelCache: Data
    /// For tests: the errno every write of the file fails with, or nil.
    private let injectedWriteErrno = Protected<CInt?>(nil)

    var identifier: String { memory.identifier }
    var metadata: [String: any Sendable] { memory.metadata }
    var statementCount: Int { 0 }
    /// The largest key handed out per root entity code (read by a migration, which keeps them).
    var allocatedKeys: [Int: Int64] { memory.withState { $0.maxKeys } }

    init(url: URL, model: ManagedObjectModel, format: AtomicFormat, readOnly: Bool) throws {
        let type: StoreType = format == .xml ? .xml : .binary
        try StoreFiles.require(url.isFileURL, url: url, for: type, "it is not a file URL, and a \(type) store is a local file")
        self.url = url
        self.format = format
        self.model = model
        versionHashes = model.entityVersionHashesByName
        do { modelCache = try CompiledModelWriter.modelCacheContent(model) } catch {
            throw ObjectGraphError(.invalidModel, "Cannot record the model in the \(type) store at \(url.path): \(error)", url: url)
        }
        if FileManager.default.fileExists(atPath: url.path) {
            let data: Data
            do { data = try Data(contentsOf: url) } catch {
                throw ObjectGraphError(.io, "Cannot read the \(type) store at \(url.path): \(error)", url: url)
            }
            try AtomicFileIO.checkNesting(of: data, format: format, url: url, type: type)
            let file: AtomicFile
            do { file = try PropertyListDecoder().decode(AtomicFile.self, from: data) } catch {
                throw ObjectGraphError(.notADatabase, "The file at \(url.path) is not an ObjectGraph \(type) store; it was left as it was", url: url)
            }
            if file.modelHash != model.versionHash {
                throw ObjectGraphError(
                    .incompatibleModel,
                    "The store at \(url.path) was written with another model (version hash \(file.modelHash), this model's is \(model.versionHash))",
                    url: url)
            }
            if let problem = file.problem(with: model) {
                throw ObjectGraphError(
                    .notADatabase, "The file at \(url.path) is not a readable ObjectGraph \(type) store (\(problem)); it was left as it was",
                    url: url)
            }
            var keys = InMemoryState()
            for i in stride(from: 0, to: file.maxKeys.count - 1, by: 2) { keys.maxKeys[Int(file.maxKeys[i])] = file.maxKeys[i + 1] }
            memory = InMemoryStore(model: model, identifier: file.identifier, state: keys, type: type, location: url)
            unbound = Protected(file)
        } else {
            if readOnly { throw ObjectGraphError(.io, "Cannot open the read-only \(type) store at \(url.path): there is no such file", url: url) }
            // A missing folder is an I/O error, as for an SQLite store, not a folder that refuses writing.
            let directory = url.deletingLastPathComponent().path
            if !StoreFiles.isFolder(directory) {
                throw ObjectGraphError(.io, "Cannot create the \(type) store at \(url.path): the folder \(directory) does not exist", url: url)
            }
            memory = InMemoryStore(model: model, type: type, location: url)
            unbound = Protected(nil)
            try write(memory.currentState)
        }
    }

    /// Installs the file's rows, bound to `store`, before the first access.
    private func load(_ store: PersistentStore) -> InMemoryStore {
        unbound.withLock { file in
            guard let pending = file else { return }
            file = nil
            let state = pending.state(model: model, store: store)
            // Not into a closed store: its rows are gone for good.
            memory.withState { if !$0.isClosed { $0 = state } }
        }
        return memory
    }

    func fetch(_ request: StoreFetchRequest, store: PersistentStore) throws -> [StoreRow] { try load(store).fetch(request, store: store) }
    func count(_ request: StoreFetchRequest, store: PersistentStore) throws -> Int { try load(store).count(request, store: store) }
    func pinVersion(store: PersistentStore) throws -> any PinnedStoreVersion { try load(store).pinVersion(store: store) }
    func snapshots(for ids: [ManagedObjectID], store: PersistentStore) throws -> [ManagedObjectID: Snapshot] {
        try load(store).snapshots(for: ids, store: store)
    }
    func destinations(of relationship: RelationshipDescription, for sources: [ManagedObjectID], store: PersistentStore) throws
        -> [ManagedObjectID: [ManagedObjectID]]
    {
        try load(store).destinations(of: relationship, for: sources, store: store)
    }
    func allocatePrimaryKeys(for entity: EntityDescription, count: Int) throws -> Int64 {
        // Keys are allocated and written under the rows' lock; a failed write takes them back. While
        // the file's rows are not installed yet, the file is written from them, not from `memory`
        // (which holds only the keys until then).
        try unbound.withLock { file in
            try memory.changingState { state in
                let before = state
                let first = state.allocate(root: entity.rootEntity.entityCode, count: count)
                do {
                    if var pending = file {
                        pending.maxKeys = AtomicFile.keys(state.maxKeys)
                        try write(pending)
                        file = pending
                    } else {
                        try write(state)
                    }
                } catch {
                    state = before
                    throw error
                }
                return first
            }
        }
    }

    func save(_ request: StoreSaveRequest, store: PersistentStore) throws -> StoreSaveResult {
        // The file is written under the same lock as the rows, so saves reach the file in order,
        // and a failed write undoes the save in memory.
        try load(store).saveAndPersist(request, store: store) { state in try self.write(state) }
    }

    func executeBatch(_ request: StoreBatchRequest, store: PersistentStore) throws -> StoreBatchResult {
        // As a save: the file is rewritten once, under the rows' lock; a failed write undoes the request.
        try load(store).executeBatchAndPersist(request, store: store) { state in try self.write(state) }
    }

    /// Drops the rows read from the file (every save wrote them there): they hold object IDs, which
    /// hold the store. From then on the file is never written again: a save through an object of
    /// the removed store throws (``InMemoryStore/changingState(_:)``) rather than write the file
    /// from rows that are gone. A save under way finishes first: both take the rows' lock.
    func close() throws {
        try memory.close()
    }

    func coordinatorWentAway() {
        try? close()
    }

    /// Makes every write of the file fail with `code` (an errno), or write again with nil. For tests.
    func failWrites(withErrno code: CInt?) {
        injectedWriteErrno.withLock { $0 = code }
    }

    private func write(_ state: InMemoryState) throws {
        try write(AtomicFile(identifier: memory.identifier, modelHash: model.versionHash, state: state))
    }

    private func write(_ file: AtomicFile) throws {
        try file.write(
            recording: versionHashes, modelCache: modelCache, format: format, to: url, otherwise: "nothing was saved",
            injectedErrno: injectedWriteErrno.withLock { $0 })
    }
}

extension AtomicFile {
    /// Records the model that writes the file (its entities' version hashes and compiled model),
    /// encodes the file in `format` and replaces the file at `url` with it atomically.
    ///
    /// - Parameter otherwise: what an encoding failure means for the caller, for its message.
    func write(
        recording versionHashes: [String: Data], modelCache: Data, format: AtomicFormat, to url: URL, otherwise: String,
        injectedErrno: CInt? = nil
    ) throws {
        var file = self
        file.versionHashes = versionHashes
        file.modelCache = modelCache
        let type: StoreType = format == .xml ? .xml : .binary
        let encoder = PropertyListEncoder()
        encoder.outputFormat = format == .xml ? .xml : .binary
        let data: Data
        do { data = try encoder.encode(file) } catch {
            throw ObjectGraphError(.io, "Cannot encode the \(type) store at \(url.path): \(error); \(otherwise)", url: url)
        }
        try AtomicFileIO.write(data, to: url, type: type, injectedErrno: injectedErrno)
    }
}

extension InMemoryStore {
    /// Applies a save, then runs `persist` with the new rows; when `persist` throws, the rows are
    /// put back as they were.
    func saveAndPersist(_ request: StoreSaveRequest, store: PersistentStore, persist: (InMemoryState) throws -> Void) throws -> StoreSaveResult {
        try changingState { state in
            let before = state
            let result = try InMemorySave(request: request, store: store, model: model).apply(to: &state)
            do { try persist(state) } catch {
                state = before
                throw error
            }
            return result
        }
    }
}

/// The content of an atomic store file.
struct AtomicFile: Codable {
    var identifier: String
    var modelHash: String
    /// The version hash of each entity of the model that wrote the file (nil in files written
    /// before ObjectGraph recorded them).
    var versionHashes: [String: Data]?
    /// The compiled model that wrote the file, as Core Data caches it in `Z_MODELCACHE`: a raw
    /// DEFLATE stream of the keyed archive (nil in files written before ObjectGraph recorded it).
    var modelCache: Data?
    /// The property names of each entity with rows, in the order of its rows' cells (nil in files
    /// written before ObjectGraph recorded them). A model that lists an entity's properties in
    /// another order (the model read back from `modelCache` lists them by name, as Core Data does)
    /// reads each cell by its name.
    var columns: [String: [String]]?
    var maxKeys: [Int64]
    var rows: [Row]
    var joins: [Join]
    var orders: [Order]

    struct Row: Codable {
        var entity: Int
        var key: Int64
        var version: Int64
        var values: [Cell]
    }

    struct Join: Codable {
        var table: String
        var source: Int64
        var destination: Int64
        var sourceEntity: Int
        var destinationEntity: Int
        var sourceOrder: Int?
        var destinationOrder: Int?
    }

    struct Order: Codable {
        var entity: Int
        var relationship: String
        var key: Int64
        var position: Int
    }

    enum Cell: Codable {
        case null
        case int(Int64)
        case bool(Bool)
        case double(Double)
        case decimal(String)
        case string(String)
        case date(Double)
        case data(Data)
        case uuid(String)
        case url(String)
        case object(entity: Int, key: Int64)
        /// A -0.0 double or date interval, as its bit pattern: a binary property list stores equal
        /// numbers once, and -0.0 == 0.0, so a -0.0 written as a number could read back as 0.0.
        case doubleBits(Int64)
        case dateBits(Int64)
    }

    init(identifier: String, modelHash: String, state: InMemoryState) {
        self.identifier = identifier
        self.modelHash = modelHash
        maxKeys = Self.keys(state.maxKeys)
        rows = state.tables.values.flatMap { table in
            table.map { key, snapshot in
                Row(entity: snapshot.entity.entityCode, key: key, version: snapshot.version, values: snapshot.values.map(Self.cell))
            }
        }.sorted { ($0.entity, $0.key) < ($1.entity, $1.key) }
        var columns: [String: [String]] = [:]
        for table in state.tables.values {
            for snapshot in table.values where columns[snapshot.entity.name] == nil {
                columns[snapshot.entity.name] = snapshot.entity.properties.map(\.name)
            }
        }
        self.columns = columns
        joins = state.joinForward.flatMap { table, sources in
            sources.flatMap { source, destinations in
                destinations.map { destination, entry in
                    Join(table: table, source: source, destination: destination, sourceEntity: entry.sourceEntity,
                         destinationEntity: entry.destinationEntity, sourceOrder: entry.sourceOrder, destinationOrder: entry.destinationOrder)
                }
            }
        }.sorted { ($0.table, $0.source, $0.destination) < ($1.table, $1.source, $1.destination) }
        orders = state.foreignKeyOrders.flatMap { relationshipID, positions -> [Order] in
            guard let relationship = state.orderedRelationships[relationshipID], let entity = relationship.entity else { return [] }
            return positions.map { Order(entity: entity.entityCode, relationship: relationship.name, key: $0.key, position: $0.value) }
        }.sorted { ($0.entity, $0.relationship, $0.key) < ($1.entity, $1.relationship, $1.key) }
    }

    /// The largest key allocated per root entity code, as the file holds them: code, key, code, key…
    static func keys(_ maxKeys: [Int: Int64]) -> [Int64] {
        maxKeys.sorted { $0.key < $1.key }.flatMap { [Int64($0.key), $0.value] }
    }

    private static func isNegativeZero(_ v: Double) -> Bool { v == 0 && v.sign == .minus }

    private static func cell(_ value: Value) -> Cell {
        switch value {
        case .null: .null
        case .int(let v): .int(v)
        case .bool(let v): .bool(v)
        case .double(let v): isNegativeZero(v) ? .doubleBits(Int64(bitPattern: v.bitPattern)) : .double(v)
        case .decimal(let v): .decimal(v.description)
        case .string(let v): .string(v)
        case .date(let v):
            isNegativeZero(v.timeIntervalSinceReferenceDate)
                ? .dateBits(Int64(bitPattern: v.timeIntervalSinceReferenceDate.bitPattern)) : .date(v.timeIntervalSinceReferenceDate)
        case .data(let v): .data(v)
        case .uuid(let v): .uuid(v.uuidString)
        case .url(let v): .url(v.absoluteString)
        case .objectID(let id): .object(entity: id.entity.entityCode, key: id.primaryKey ?? -1)
        }
    }

    /// What in the file's rows does not fit `model`, the model it was written with (an entity code
    /// that names no entity, a row with more or fewer cells than its columns), or nil. The rows are
    /// installed on first use, by ``state(model:store:)``, which relies on them fitting.
    func problem(with model: ManagedObjectModel) -> String? {
        let entities = model.entitiesByCode
        func names(_ code: Int) -> Bool { entities.indices.contains(code) }
        for row in rows {
            guard names(row.entity) else { return "row \(row.key) has the entity code \(row.entity), which names no entity" }
            let entity = entities[row.entity]
            let expected = columns?[entity.name]?.count ?? entity.properties.count
            guard row.values.count == expected else {
                return "row \(row.key) of \(entity.name) has \(row.values.count) cells for \(expected) columns"
            }
            for case .object(let code, _) in row.values where !names(code) {
                return "row \(row.key) of \(entity.name) refers to the entity code \(code), which names no entity"
            }
        }
        for join in joins where !names(join.sourceEntity) || !names(join.destinationEntity) {
            return "a row of the join table \(join.table) has the entity codes \(join.sourceEntity) and \(join.destinationEntity), and one names no entity"
        }
        for order in orders where !names(order.entity) {
            return "the order of \(order.relationship) has the entity code \(order.entity), which names no entity"
        }
        return nil
    }

    /// The rows, with object IDs bound to `store`.
    func state(model: ManagedObjectModel, store: PersistentStore) -> InMemoryState {
        var state = InMemoryState()
        for i in stride(from: 0, to: maxKeys.count - 1, by: 2) { state.maxKeys[Int(maxKeys[i])] = maxKeys[i + 1] }
        let entities = model.entitiesByCode
        func value(_ cell: Cell) -> Value {
            switch cell {
            case .null: .null
            case .int(let v): .int(v)
            case .bool(let v): .bool(v)
            case .double(let v): .double(v)
            case .decimal(let v): Value.decimal(v).map(Value.decimal) ?? .null
            case .string(let v): .string(v)
            case .date(let v): .date(Date(timeIntervalSinceReferenceDate: v))
            case .doubleBits(let bits): .double(Double(bitPattern: UInt64(bitPattern: bits)))
            case .dateBits(let bits): .date(Date(timeIntervalSinceReferenceDate: Double(bitPattern: UInt64(bitPattern: bits))))
            case .data(let v): .data(v)
            case .uuid(let v): UUID(uuidString: v).map(Value.uuid) ?? .null
            case .url(let v): URL(string: v).map(Value.url) ?? .null
            case .object(let entity, let key):
                entity < entities.count ? .objectID(ManagedObjectID(entity: entities[entity], store: store, primaryKey: key)) : .null
            }
        }
        // Where each property's cell is, for an entity whose cells the file lists in another order.
        var positions: [Int: [Int?]] = [:]
        for (code, entity) in entities.enumerated() {
            guard let names = columns?[entity.name] else { continue }
            let order = entity.properties.map(\.name)
            if names != order { positions[code] = order.map { names.firstIndex(of: $0) } }
        }
        let indexer = InMemorySave(request: StoreSaveRequest(), store: store, model: model)
        for row in rows where row.entity < entities.count {
            let entity = entities[row.entity]
            var values = row.values.map(value)
            if let cells = positions[row.entity] {
                values = cells.map { position in position.flatMap { $0 < values.count ? values[$0] : nil } ?? .null }
            }
            let snapshot = Snapshot(entity: entity, version: row.version, values: values)
            state.tables[entity.rootEntity.entityCode, default: [:]][row.key] = snapshot
            indexer.index(snapshot, pk: row.key, in: &state)
        }
        for join in joins {
            let entry = InMemoryState.JoinEntry(
                sourceEntity: join.sourceEntity, destinationEntity: join.destinationEntity,
                sourceOrder: join.sourceOrder, destinationOrder: join.destinationOrder)
            state.joinForward[join.table, default: [:]][join.source, default: [:]][join.destination] = entry
            state.joinBackward[join.table, default: [:]][join.destination, default: [:]][join.source] = entry
        }
        for order in orders where order.entity < entities.count {
            guard let relationship = entities[order.entity].relationshipsByName[order.relationship] else { continue }
            state.foreignKeyOrders[ObjectIdentifier(relationship), default: [:]][order.key] = order.position
            state.orderedRelationships[ObjectIdentifier(relationship)] = relationship
        }
        return state
    }
}
