import Foundation

// Batch requests on an in-memory store (and, through it, an atomic store): worked out against the
// rows under the store's lock, then applied as one `InMemorySave`, which checks everything before it
// changes anything, so a request is all or nothing.

extension InMemoryStore {
    func executeBatch(_ request: StoreBatchRequest, store: PersistentStore) throws -> StoreBatchResult {
        try executeBatchAndPersist(request, store: store) { _ in }
    }

    /// Runs a batch request, then `persist` with the new rows; when `persist` throws, the rows are
    /// put back as they were.
    func executeBatchAndPersist(_ request: StoreBatchRequest, store: PersistentStore, persist: (InMemoryState) throws -> Void) throws
        -> StoreBatchResult
    {
        try changingState { state in
            let before = state
            let result = try InMemoryBatch(store: store, model: model).run(request, on: &state)
            do { try persist(state) } catch {
                state = before
                throw error
            }
            return result
        }
    }
}

/// One batch request applied to an in-memory store's rows.
struct InMemoryBatch {
    let store: PersistentStore
    let model: ManagedObjectModel

    func run(_ request: StoreBatchRequest, on state: inout InMemoryState) throws -> StoreBatchResult {
        switch request {
        case .insert(let entity, let rows):
            let plan = try BatchInsertPlan(entity: entity, rows: rows) { key, owner, _, values in
                guard let pk = state.uniqueness[key]?[values]?.min(), let row = state.tables[owner.rootEntity.entityCode]?[pk] else { return nil }
                return ManagedObjectID(entity: row.entity, store: store, primaryKey: pk)
            }
            let saved = try save(plan.save, &state)
            return plan.result(permanentIDs: saved.permanentIDs)

        case .update(let fetch, let values, _):
            let matches = try view(state).matching(fetch)
            let ids = matches.map(\.id)
            guard !values.isEmpty else { return StoreBatchResult(affected: ids) }
            var request = StoreSaveRequest()
            for subject in matches {
                let entity = subject.snapshot.entity
                var row = subject.snapshot.values
                var changed: [Int] = []
                for (name, value) in values {
                    guard let attribute = entity.attributesByName[name] else { continue }
                    row[attribute.index] = value
                    changed.append(attribute.index)
                }
                request.updated.append(SavedObject(id: subject.id, entity: entity, values: row, changedIndices: changed, expectedVersion: nil))
            }
            _ = try save(request, &state)
            return StoreBatchResult(affected: ids, updated: ids)

        case .delete(let fetch, _):
            var subjects = try view(state).matching(fetch)
            if !fetch.sortDescriptors.isEmpty {
                subjects = try FetchSortDescriptor.sorted(subjects, by: fetch.sortDescriptors, subject: { $0 })
            }
            var slice = subjects[...]
            if fetch.fetchOffset > 0 { slice = slice.dropFirst(fetch.fetchOffset) }
            if fetch.fetchLimit > 0 { slice = slice.prefix(fetch.fetchLimit) }
            return try delete(slice.map(\.id), &state)

        case .deleteObjects(let ids):
            let view = view(state)
            var seen: Set<ManagedObjectID> = []
            let existing = ids.compactMap { view.subject(for: $0)?.id }.filter { seen.insert($0).inserted }
            return try delete(existing, &state)
        }
    }

    private func view(_ state: InMemoryState) -> InMemoryView {
        InMemoryView(state: state, store: store, model: model)
    }

    private func save(_ request: StoreSaveRequest, _ state: inout InMemoryState) throws -> StoreSaveResult {
        try InMemorySave(request: request, store: store, model: model).apply(to: &state)
    }

    private func delete(_ initial: [ManagedObjectID], _ state: inout InMemoryState) throws -> StoreBatchResult {
        let view = view(state)
        let all = try BatchDeleteClosure.closure(of: initial) { relationship, sources in
            var result: [ManagedObjectID: [ManagedObjectID]] = [:]
            for source in sources {
                if relationship.isToMany {
                    result[source] = view.destinations(of: relationship, from: source)
                } else if let subject = view.subject(for: source), relationship.index < subject.snapshot.values.count,
                          case .objectID(let destination) = subject.snapshot.values[relationship.index],
                          let found = view.subject(for: destination) {
                    result[source] = [found.id]
                }
            }
            return result
        }
        var result = StoreBatchResult(affected: initial, deleted: all)
        guard !all.isEmpty else { return result }
        var deletedKeys: [Int: Set<Int64>] = [:]
        for id in all { if let pk = id.primaryKey { deletedKeys[id.entity.rootEntity.entityCode, default: []].insert(pk) } }
        var request = StoreSaveRequest()
        request.deleted = all.map { SavedObject(id: $0, entity: $0.entity, values: [], changedIndices: [], expectedVersion: nil) }
        // Surviving rows whose to-one pointed at a deleted row: cleared, with a new version.
        for (rootCode, table) in state.tables {
            let gone = deletedKeys[rootCode] ?? []
            for (pk, snapshot) in table where !gone.contains(pk) {
                var values = snapshot.values
                var changed: [Int] = []
                for relationship in snapshot.entity.relationships where !relationship.isToMany {
                    guard case .objectID(let destination) = values[relationship.index], let key = destination.primaryKey,
                          deletedKeys[destination.entity.rootEntity.entityCode]?.contains(key) == true else { continue }
                    values[relationship.index] = .null
                    changed.append(relationship.index)
                }
                guard !changed.isEmpty else { continue }
                let id = ManagedObjectID(entity: snapshot.entity, store: store, primaryKey: pk)
                request.updated.append(SavedObject(id: id, entity: snapshot.entity, values: values, changedIndices: changed, expectedVersion: nil))
                result.updated.append(id)
            }
        }
        // Join-table rows naming a deleted destination (the save drops those of the deleted rows' own
        // relationships; a to-many without inverse is only seen from its source).
        let entities = model.entitiesByCode
        for entity in entities {
            for relationship in entity.declaredProperties.compactMap({ $0 as? RelationshipDescription }) where relationship.usesJoinTable {
                guard let destination = relationship.destinationEntity, let gone = deletedKeys[destination.rootEntity.entityCode],
                      case .pairs(let table, let forward) = RelationalLayout.toMany(relationship) else { continue }
                for (sourceKey, entries) in (forward ? state.joinForward[table] : state.joinBackward[table]) ?? [:] {
                    for (destinationKey, entry) in entries where gone.contains(destinationKey) {
                        let (sourceCode, destinationCode) = forward
                            ? (entry.sourceEntity, entry.destinationEntity) : (entry.destinationEntity, entry.sourceEntity)
                        guard sourceCode < entities.count, destinationCode < entities.count else { continue }
                        request.joinDeletes.append(JoinChange(
                            relationship: relationship,
                            source: ManagedObjectID(entity: entities[sourceCode], store: store, primaryKey: sourceKey),
                            destination: ManagedObjectID(entity: entities[destinationCode], store: store, primaryKey: destinationKey)))
                    }
                }
            }
        }
        _ = try save(request, &state)
        return result
    }
}
