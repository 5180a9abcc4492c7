import Foundation

/// How a controller follows the saves its context merges, beyond what the merge reports in
/// `objectsDidChangeNotification` (which lists only objects the context has in use).
extension ResultsState {
    /// Takes what `didMergeChangesObjectIDsNotification` lists and the context did not report:
    ///
    /// - Objects whose rows the save deleted leave the results, whether or not the context reported
    ///   them; those it reported have left already, so no delete is told twice.
    /// - Objects the save updated that the context had not loaded (not registered, or faults, whose
    ///   new values the merge does not read) are read again: one that now matches the predicate
    ///   enters the results, and one in the results is updated, moves or leaves. Registered objects
    ///   that are not faults took the saved values in the merge, which reported them.
    func contextDidMerge(_ info: [AnyHashable: Any]) {
        let reported = pendingMerge
        pendingMerge = nil
        guard objects != nil, let entity, let context else { return }
        let includesSubentities = self.includesSubentities
        func isResult(_ id: ManagedObjectID) -> Bool {
            includesSubentities ? id.entity.isKindOf(entity: entity) : id.entity === entity
        }
        let deleted = (info[ManagedObjectContext.NotificationKey.deletedObjectIDs.rawValue] as? Set<ManagedObjectID> ?? []).filter(isResult)
        let updated = (info[ManagedObjectContext.NotificationKey.updatedObjectIDs.rawValue] as? Set<ManagedObjectID> ?? []).filter { id in
            isResult(id) && context.registeredObject(for: id)?.isFault != false
        }
        guard !deleted.isEmpty || !updated.isEmpty || reported != nil else { return }
        // The updated faults (in the results or not) are filled with the other changed objects; the
        // objects not registered are fetched if they match now. A fetch may process pending
        // changes first, which the results take: the results are read after it.
        let faults = updated.compactMap { context.registeredObject(for: $0) }
        let unregistered = updated.filter { context.registeredObject(for: $0) == nil }
        let found = fetchLimit > 0 ? [] : matching(unregistered, entity: entity, context: context)
        guard let current = objects else { return }

        var relevant: [ManagedObject] = reported?.relevant ?? []
        var changed = reported?.changed ?? [], leaving = Set<ObjectIdentifier>()
        func add(_ object: ManagedObject) {
            if changed.insert(ObjectIdentifier(object)).inserted { relevant.append(object) }
        }
        for object in faults + found { add(object) }
        // The deleted objects: registered ones directly; the results are searched for the others
        // (the merge may have let them go).
        var missing = Set<ManagedObjectID>()
        for id in deleted {
            if let object = context.registeredObject(for: id) {
                leaving.insert(ObjectIdentifier(object))
                add(object)
            } else {
                missing.insert(id)
            }
        }
        if !missing.isEmpty {
            for object in current where missing.contains(object.objectID) {
                leaving.insert(ObjectIdentifier(object))
                add(object)
            }
        }
        guard !relevant.isEmpty || (fetchLimit > 0 && !updated.isEmpty) else { return }
        take(relevant, changed: changed, leaving: leaving, into: current, context: context)
    }

    /// The objects with these IDs that match the request's predicate now, read from the store (in
    /// one fetch, or a few for very many IDs) with their values.
    private func matching(_ ids: Set<ManagedObjectID>, entity: EntityDescription, context: ManagedObjectContext) -> [ManagedObject] {
        let all = Array(ids)
        var found: [ManagedObject] = []
        for start in stride(from: 0, to: all.count, by: Self.idsPerFetch) {
            let chunk = Array(all[start..<min(start + Self.idsPerFetch, all.count)])
            let request = FetchRequest<ManagedObject>()
            request.entity = entity
            request.includesSubentities = includesSubentities
            request.returnsObjectsAsFaults = false
            let within = FetchPredicate(format: "SELF IN %@", chunk)
            request.predicate = predicate.map { FetchPredicate.and([within, $0]) } ?? within
            // Should the store refuse the fetch, the objects are read one by one and evaluated here.
            found += (try? context.fetch(request)) ?? chunk.map { context.object(with: $0) }
        }
        return found
    }

    /// How many IDs one fetch of ``matching(_:entity:context:)`` asks for (well under a
    /// predicate's limit of bound values).
    private static let idsPerFetch = 10_000
}
