import Foundation

// Batch requests from a context: routed to the stores that hold the entity (or the request's
// affected stores), run by each in one transaction, their rows evicted from the row cache, and, when
// asked, handed to the contexts that merge automatically.

extension PersistentStoreCoordinator {
    /// The entity a batch request names, as this coordinator's model has it.
    ///
    /// - Throws: ``ObjectGraphError/invalidFetchRequest`` for an entity the model does not have.
    func batchEntity(named name: String?, _ entity: EntityDescription?) throws -> EntityDescription {
        if let entity, let own = managedObjectModel.entitiesByName[entity.name] { return own }
        guard let name = name ?? entity?.name, let own = managedObjectModel.entitiesByName[name] else {
            let named = name ?? entity?.name ?? "(none)"
            throw ObjectGraphError(.invalidFetchRequest, "The model has no entity named '\(named)' for a batch request", entityName: named)
        }
        return own
    }

    /// The stores a batch request on `entity` runs against: those of `affectedStores` (or of the
    /// coordinator) whose configuration includes the entity.
    ///
    /// - Throws: ``ObjectGraphError/noPersistentStore`` when there is none.
    func batchStores(for entity: EntityDescription, affectedStores: [PersistentStore]?) throws -> [PersistentStore] {
        let own = persistentStores
        let candidates = (affectedStores ?? own).filter { store in
            own.contains(where: { $0 === store }) && holds(store, entity)
        }
        guard !candidates.isEmpty else {
            throw ObjectGraphError(
                .noPersistentStore, "The coordinator has no store (among the request's affected stores) whose configuration includes entity '\(entity.name)'",
                entityName: entity.name)
        }
        return candidates
    }

    /// Runs a batch request against stores, each in one transaction, in the order given; evicts
    /// every row it changed from the row cache; with `merging`, hands the changes to every context
    /// on the coordinator that merges automatically (but `excluded`, which merges them itself).
    ///
    /// A request on several stores is one transaction per store, as a save is: when a later store
    /// fails, what the earlier ones wrote stands.
    ///
    /// - Throws: ``ObjectGraphError/readOnly`` (before anything is written) when a store is
    ///   read-only; what the stores throw.
    func executeBatch(
        _ request: (PersistentStore) -> StoreBatchRequest?, on stores: [PersistentStore], merging: Bool, except excluded: ManagedObjectContext? = nil,
        by context: ManagedObjectContext? = nil
    ) throws -> StoreBatchResult {
        let info = TransactionInfo(author: context?.transactionAuthor, contextName: context?.name)
        for store in stores where store.isReadOnly {
            throw ObjectGraphError(.readOnly, "The store \(store.url?.path ?? store.identifier) is read-only; nothing was written", url: store.url)
        }
        var result = StoreBatchResult()
        defer {
            if merging && !(result.inserted.isEmpty && result.updated.isEmpty && result.deleted.isEmpty) {
                didWriteWithoutContext(ManagedObjectContext.SaveChanges(
                    insertedObjectIDs: Set(result.inserted), updatedObjectIDs: Set(result.updated), deletedObjectIDs: Set(result.deleted)),
                    except: excluded)
            }
        }
        try instrumentation.span("ObjectGraph batch request") { span in
            try measured(nil, describe: { (_: Void?) in "batch request: \(result.affectedCount) rows" }) {
                try access {
                    for store in stores {
                        guard let storeRequest = request(store) else { continue }
                        let done: StoreBatchResult
                        do {
                            done = try TransactionInfo.$current.withValue(info) { try store.backend.executeBatch(storeRequest, store: store) }
                        } catch let conflict as ConstraintConflictError {
                            // No context resolves a batch request's conflicts: the request is refused.
                            throw conflict.error
                        }
                        // The row cache never serves a row the request changed: those rows leave it.
                        // Inserted rows are new (an upsert's existing rows count as updated), so the
                        // cache cannot hold them.
                        if !done.updated.isEmpty || !done.deleted.isEmpty { rowCache.evict(done.updated, done.deleted) }
                        for entity in done.unlistedEntities { rowCache.evict(entityTreeOf: entity, in: store) }
                        result.append(done)
                    }
                }
            }
            span?.attributes["objectgraph.rows"] = result.affectedCount
        }
        if let metrics = instrumentation.metrics {
            metrics.batchRows.increment(by: result.inserted.count + result.updated.count + result.deleted.count + result.unlistedCount)
            if result.historyChanges > 0 { metrics.historyRows.increment(by: result.historyChanges) }
        }
        return result
    }
}
