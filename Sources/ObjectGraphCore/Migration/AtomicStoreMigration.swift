import Foundation

/// A lightweight migration of an atomic (binary or XML) store: the file is read with the old
/// model, every object is carried over to the new model with its key (so object IDs and URIs
/// stay valid) and the store's UUID, and the file is rewritten whole, atomically (a new file
/// renamed over the old one): the store is the old file or the new one, never a mix.
enum AtomicStoreMigration {
    static func migrate(storeAt url: URL, type: StoreType, mapping: MigrationMapping) throws {
        let format: AtomicFormat = type == .xml ? .xml : .binary
        let oldBackend = try AtomicStore(url: url, model: mapping.source, format: format, readOnly: true)
        let oldStore = PersistentStore(type: type, url: url, configurationName: nil, isReadOnly: true, durability: .full, backend: oldBackend)
        let newBackend = InMemoryStore(model: mapping.destination, identifier: oldBackend.identifier, type: type)
        let newStore = PersistentStore(type: type, url: url, configurationName: nil, isReadOnly: false, durability: .full, backend: newBackend)

        var rows: [StoreRow] = []
        for root in mapping.source.entitiesByCode where root.superentity == nil {
            rows += try oldBackend.fetch(StoreFetchRequest(entity: root), store: oldStore)
        }
        let request = try MigrationRowTransfer.request(mapping: mapping, url: url, rows: rows, newStore: newStore) { relationship, ids in
            try oldBackend.destinations(of: relationship, for: ids, store: oldStore)
        }
        _ = try newBackend.save(request, store: newStore)
        let keys = MigrationRowTransfer.maxKeys(mapping: mapping, old: oldBackend.allocatedKeys)
        newBackend.withState { state in
            for (code, key) in keys { state.maxKeys[code] = max(state.maxKeys[code] ?? 0, key) }
        }
        // The file records its new model, as every atomic store does.
        let modelCache: Data
        do { modelCache = try CompiledModelWriter.modelCacheContent(mapping.destination) } catch {
            throw ObjectGraphError(.invalidModel, "Cannot record the new model in the \(type) store at \(url.path): \(error); it was left as it was", url: url)
        }
        try AtomicFile(identifier: oldBackend.identifier, modelHash: mapping.destination.versionHash, state: newBackend.currentState).write(
            recording: mapping.destination.entityVersionHashesByName, modelCache: modelCache, format: format, to: url,
            otherwise: "it was left as it was")
    }
}
