import Foundation

extension ManagedObjectContext {
    /// Passes a request to the stores (`NSManagedObjectContext.execute(_:)`): a ``BatchInsertRequest``,
    /// ``BatchUpdateRequest``, ``BatchDeleteRequest`` or ``AsynchronousFetchRequest``.
    ///
    /// ```swift
    /// let update = BatchUpdateRequest(entityName: "Note")
    /// update.propertiesToUpdate = ["rank": Int64(0)]
    /// try context.execute(update)
    /// ```
    ///
    /// Batch requests write the stores directly, in one transaction per store, as Core Data's do:
    /// this context's unsaved changes are untouched and its objects are not updated. Merge the
    /// result's IDs with ``mergeChanges(fromRemoteContextSave:into:)``, or set the request's
    /// `mergesChangesIntoContexts` to have every context that merges automatically do it. A child
    /// context's batch request goes to the coordinator too. See <doc:BatchOperations>.
    ///
    /// - Returns: the request's result: cast it to ``BatchInsertResult``, ``BatchUpdateResult``,
    ///   ``BatchDeleteResult`` or ``AsynchronousFetchResult``.
    /// - Throws: ``ObjectGraphError/validation`` for a bad value (the request names the row, entity
    ///   and attribute) or a delete a deny rule refuses; ``ObjectGraphError/constraintConflict``;
    ///   ``ObjectGraphError/readOnly``; ``ObjectGraphError/invalidFetchRequest`` for an unknown
    ///   entity or key; ``ObjectGraphError/unsupported`` for a request the context cannot run (an
    ///   asynchronous fetch on a confinement context); store errors. Nothing is written when it throws.
    @discardableResult
    public func execute(_ request: PersistentStoreRequest) throws -> PersistentStoreResult {
        assertOnQueue("execute(_:)")
        freezeConfiguration()
        return try request.execute(in: self)
    }

    /// Deletes every object of a model type a predicate matches, in the stores, without fetching
    /// them (SwiftData's `ModelContext.delete(model:where:includeSubclasses:)`).
    ///
    /// ```swift
    /// try context.delete(model: Note.self, where: #Predicate { $0.rank < 0 })
    /// ```
    ///
    /// It is a ``BatchDeleteRequest``: delete rules are honoured (deny refuses the whole delete),
    /// and its deletions are then merged into this context (registered objects among them become
    /// deleted objects; its other unsaved changes stay) and into every context on the coordinator
    /// that merges automatically.
    ///
    /// - Throws: ``ObjectGraphError/unsupported`` for a predicate that cannot be translated; as ``execute(_:)``.
    public func delete<T: ManagedObject>(model: T.Type, where predicate: Predicate<T>? = nil, includeSubclasses: Bool = true) throws {
        assertOnQueue("delete(model:where:includeSubclasses:)")
        let request = FetchRequest<ManagedObject>(entityName: try entityName(for: T.self))
        if let predicate { request.predicate = try FetchPredicate(translating: predicate) }
        request.includesSubentities = includeSubclasses
        let delete = BatchDeleteRequest(fetchRequest: request)
        delete.mergesChangesIntoContexts = true
        delete.mergesIntoExecutingContext = true
        try execute(delete)
    }
}
