import Foundation
import Synchronization

extension ManagedObjectContext {
    /// What one save did, as a `Sendable` value: object IDs and changed keys only, safe to hand to
    /// any queue.
    ///
    /// ```swift
    /// for await changes in background.saves {
    ///     main.perform { main.mergeChanges(changes) }
    /// }
    /// ```
    public struct SaveChanges: Sendable, CustomStringConvertible {
        /// Objects inserted by the save (permanent IDs).
        public let insertedObjectIDs: Set<ManagedObjectID>
        /// Objects updated by the save.
        public let updatedObjectIDs: Set<ManagedObjectID>
        /// Objects deleted by the save.
        public let deletedObjectIDs: Set<ManagedObjectID>
        /// For each updated object, the keys that changed.
        public let changedKeys: [ManagedObjectID: Set<String>]
        /// The saved objects as `snapshotSource` (a coordinator or a context) has them, so a merge
        /// into a context whose parent store that is need not read them again (absent for remote changes).
        let snapshots: [ManagedObjectID: Snapshot]
        let snapshotSource: ObjectIdentifier?

        /// Changes described by IDs, for example from another process or a batch operation.
        public init(
            insertedObjectIDs: Set<ManagedObjectID> = [], updatedObjectIDs: Set<ManagedObjectID> = [],
            deletedObjectIDs: Set<ManagedObjectID> = [], changedKeys: [ManagedObjectID: Set<String>] = [:]
        ) {
            self.init(
                inserted: insertedObjectIDs, updated: updatedObjectIDs, deleted: deletedObjectIDs, changedKeys: changedKeys, snapshots: [:],
                source: nil)
        }

        init(inserted: Set<ManagedObjectID>, updated: Set<ManagedObjectID>, deleted: Set<ManagedObjectID>,
             changedKeys: [ManagedObjectID: Set<String>], snapshots: [ManagedObjectID: Snapshot], source: (any ParentStore)?) {
            self.insertedObjectIDs = inserted
            self.updatedObjectIDs = updated
            self.deletedObjectIDs = deleted
            self.changedKeys = changedKeys
            self.snapshots = source == nil ? [:] : snapshots
            self.snapshotSource = source.map { ObjectIdentifier($0) }
        }

        /// The changes carried by a `didSaveObjectsNotification` or `didSaveObjectIDsNotification`.
        public init?(_ notification: Notification) {
            guard let changes = notification.userInfo?[Self.userInfoKey] as? SaveChanges else { return nil }
            self = changes
        }

        static let userInfoKey = "ObjectGraphSaveChanges"

        public var isEmpty: Bool { insertedObjectIDs.isEmpty && updatedObjectIDs.isEmpty && deletedObjectIDs.isEmpty }

        public var description: String {
            "SaveChanges(inserted: \(insertedObjectIDs.count), updated: \(updatedObjectIDs.count), deleted: \(deletedObjectIDs.count))"
        }
    }

    /// The context's saves, as they happen, for `for await` (one stream per access).
    public var saves: AsyncStream<SaveChanges> {
        let (stream, continuation) = AsyncStream<SaveChanges>.makeStream(bufferingPolicy: .unbounded)
        let key = Self.streamCounter.add(1, ordering: .relaxed).newValue
        saveStreams.withLock { $0[key] = continuation }
        continuation.onTermination = { [weak self] _ in
            _ = self?.saveStreams.withLock { $0.removeValue(forKey: key) }
        }
        return stream
    }

    static let streamCounter = Atomic<Int>(0)

    /// Hands a save's changes to `saves` streams and to contexts that merge automatically.
    func publish(_ changes: SaveChanges) {
        for continuation in saveStreams.withLock({ Array($0.values) }) { continuation.yield(changes) }
        // A save into the stores: the contexts on the coordinator that follow its saves hear it.
        configuredParentStore?.announceSave(changes, from: storeRequester)
    }

    /// Merges another context's save (Core Data's form). Call it on this context's queue.
    public func mergeChanges(fromContextDidSave notification: Notification) {
        assertOnQueue("mergeChanges(fromContextDidSave:)")
        guard let changes = SaveChanges(notification) else { return }
        mergeChanges(changes)
    }

    /// Merges changes made elsewhere (a save of another coordinator, a batch operation) into
    /// contexts, on each context's queue (Core Data's `mergeChanges(fromRemoteContextSave:into:)`).
    ///
    /// The dictionary's keys are ``NotificationKey`` values or their raw values (`.insertedObjectIDs`,
    /// `.updatedObjectIDs`, `.deletedObjectIDs`, and the `…Objects` keys alike); its values are arrays or
    /// sets of `ManagedObjectID`s or of their URIs.
    ///
    /// ```swift
    /// ManagedObjectContext.mergeChanges(
    ///     fromRemoteContextSave: [ManagedObjectContext.NotificationKey.deletedObjects.rawValue: deletedIDs], into: [main])
    /// ```
    public static func mergeChanges(fromRemoteContextSave changes: [AnyHashable: Any], into contexts: [ManagedObjectContext]) {
        for context in contexts {
            let coordinator = context.persistentStoreCoordinator
            func ids(_ keys: NotificationKey...) -> Set<ManagedObjectID> {
                var result: Set<ManagedObjectID> = []
                for key in keys {
                    guard let value = changes[AnyHashable(key.rawValue)] ?? changes[AnyHashable(key)] else { continue }
                    guard let items = value as? any Sequence else { continue }
                    for item in items {
                        if let id = item as? ManagedObjectID {
                            result.insert(id)
                        } else if let url = item as? URL, let id = coordinator?.managedObjectID(forURIRepresentation: url) {
                            result.insert(id)
                        }
                    }
                }
                return result
            }
            let merged = SaveChanges(
                insertedObjectIDs: ids(.insertedObjectIDs, .insertedObjects),
                updatedObjectIDs: ids(.updatedObjectIDs, .updatedObjects),
                deletedObjectIDs: ids(.deletedObjectIDs, .deletedObjects))
            context.performAndWait { context.mergeChanges(merged) }
        }
    }

    /// Merges a save made by another context: registered objects take the saved values (keeping
    /// this context's unsaved changes as its merge policy says), deleted objects leave every
    /// relationship and become invalid, inserted objects become fetchable. Posts
    /// `objectsDidChangeNotification` and `didMergeChangesObjectIDsNotification`.
    public func mergeChanges(_ changes: SaveChanges) {
        assertOnQueue("mergeChanges(_:)")
        recordMerge(changes)
        processPendingChanges()
        // A pinned context moves to the generation that has the changes it merges.
        advanceQueryGeneration()
        let deleted = mergeDeletes(changes.deletedObjectIDs)
        let read = withParentStoreRows(changes)
        let refreshed = mergeUpdates(read)
        // Objects whose to-many relationships the save touched through foreign keys (the inserted
        // and updated objects' to-one destinations) reload those relationships when next used.
        refaultToManyRelationships(touchedBy: read)
        let inserted = mergeInserts(read.insertedObjectIDs)
        postMergeNotifications(read, inserted: inserted, refreshed: refreshed, deleted: deleted)
        didMergeForNesting(changes)
    }

    /// Counts the merge in the coordinator's metrics and logs it at debug level.
    private func recordMerge(_ changes: SaveChanges) {
        guard let coordinator = persistentStoreCoordinator else { return }
        coordinator.instrumentation.metrics?.merges.increment()
        coordinator.logger.debug(
            "merge into '\(debugName)': \(changes.insertedObjectIDs.count) inserted, \(changes.updatedObjectIDs.count) updated, \(changes.deletedObjectIDs.count) deleted",
            metadata: ["coordinator": "\(coordinator.name ?? "unnamed")"])
    }

    /// Deleted elsewhere: out of every relationship; a registered object becomes a deleted object
    /// here (in `deletedObjects`, as in Core Data) until this context saves or resets. Returns the
    /// deleted objects in use here, which the merge reports.
    private func mergeDeletes(_ gone: Set<ManagedObjectID>) -> Set<ManagedObject> {
        guard !gone.isEmpty else { return [] }
        if relationshipsMayReach(gone, toManyOnly: false) {
            for object in liveObjects where !gone.contains(object.objectID) {
                forgetDestinations(gone, in: object)
            }
        }
        var deleted: Set<ManagedObject> = []
        for id in gone {
            guard let object = registered[canonical(id)]?.object, !object.state.isDeletedElsewhere else { continue }
            if object.isInserted {
                invalidate(object)
                continue
            }
            // A fault without changes is not in use here: it is deleted as well, but not
            // reported, as in Core Data, whose merges report the deletes of objects in use only.
            // Its ID is in `didMergeChangesObjectIDsNotification`'s deleted IDs all the same.
            let inUse = !object.isFault || object.hasChanges
            markDeletedElsewhere(object)
            if inUse { deleted.insert(object) }
        }
        return deleted
    }

    /// The changes with the changed objects as the parent store has them now (a child sees the
    /// world through its parent), where the changes do not carry them: the registered ones, and,
    /// when a loaded to-many relationship may need to list or drop one, all of them.
    private func withParentStoreRows(_ changes: SaveChanges) -> SaveChanges {
        let store = parentStore
        var changes = changes
        if changes.snapshotSource != ObjectIdentifier(store) {
            // Rows as another store or context had them: not this context's parent store's view.
            changes = SaveChanges(
                inserted: changes.insertedObjectIDs, updated: changes.updatedObjectIDs, deleted: changes.deletedObjectIDs,
                changedKeys: changes.changedKeys, snapshots: [:], source: nil)
        }
        let changed = changes.insertedObjectIDs.union(changes.updatedObjectIDs)
        guard !changed.isEmpty else { return changes }
        let listsObjects = relationshipsMayReach(changed, toManyOnly: true) && liveObjects.contains { object in
            !object.isFault && object.toMany.values.contains(where: \.isLoaded)
        }
        let wanted = changed.filter { id in
            changes.snapshots[id] == nil
                && (listsObjects || registered[canonical(id)]?.object.map { !$0.isFault } == true)
        }
        guard !wanted.isEmpty else { return changes }
        let found = readForMerge(wanted, from: store)
        return SaveChanges(
            inserted: changes.insertedObjectIDs, updated: changes.updatedObjectIDs, deleted: changes.deletedObjectIDs,
            changedKeys: changes.changedKeys, snapshots: changes.snapshots.merging(found) { mine, _ in mine }, source: store)
    }

    /// Reads changed objects from the parent store now, not from the row cache: another
    /// coordinator or process may have written them. A failed read gives no rows: the merge goes
    /// on, the objects keep the values they had, and the app is told (a refresh or the next merge
    /// reads them again).
    private func readForMerge(_ wanted: Set<ManagedObjectID>, from store: any ParentStore) -> [ManagedObjectID: Snapshot] {
        do {
            return try store.snapshots(for: Array(wanted), maximumAge: 0, leasing: false, requester: storeRequester).snapshots
        } catch {
            persistentStoreCoordinator?.logger.warning(
                "merge into '\(debugName)': the changed objects could not be read (\(error)); \(wanted.count) keep their previous values",
                metadata: ["coordinator": "\(persistentStoreCoordinator?.name ?? "unnamed")"])
            return [:]
        }
    }

    /// Updated elsewhere: registered objects with values take the saved ones. Returns them, the
    /// objects the merge refreshed.
    private func mergeUpdates(_ changes: SaveChanges) -> Set<ManagedObject> {
        var refreshed: Set<ManagedObject> = []
        for id in changes.updatedObjectIDs {
            guard let object = registered[canonical(id)]?.object, !object.isFault,
                  let snapshot = changes.snapshots[id] else { continue }
            let keys = changes.changedKeys[id] ?? Set(object.entity.properties.map(\.name))
            adopt(snapshot, into: object, changedElsewhere: keys)
            refreshed.insert(object)
        }
        return refreshed
    }

    /// Inserted elsewhere: registered here (as faults), so that they are reported and resolve.
    /// Returns the objects registered in this context.
    private func mergeInserts(_ ids: Set<ManagedObjectID>) -> Set<ManagedObject> {
        var inserted: Set<ManagedObject> = []
        for id in ids where !id.isTemporaryID {
            let object = object(with: id)
            if object.managedObjectContext === self { inserted.insert(object) }
        }
        return inserted
    }

    /// Posts a merge's `objectsDidChangeNotification` (when it changed objects in use here) and
    /// its `didMergeChangesObjectIDsNotification`.
    private func postMergeNotifications(
        _ changes: SaveChanges, inserted: Set<ManagedObject>, refreshed: Set<ManagedObject>, deleted: Set<ManagedObject>
    ) {
        if !(inserted.isEmpty && refreshed.isEmpty && deleted.isEmpty) {
            isPostingMergeChanges = true
            NotificationCenter.default.post(name: Self.objectsDidChangeNotification, object: self, userInfo: [
                NotificationKey.insertedObjects.rawValue: inserted,
                NotificationKey.refreshedObjects.rawValue: refreshed,
                NotificationKey.deletedObjects.rawValue: deleted,
            ])
            isPostingMergeChanges = false
        }
        NotificationCenter.default.post(name: Self.didMergeChangesObjectIDsNotification, object: self, userInfo: [
            NotificationKey.insertedObjectIDs.rawValue: changes.insertedObjectIDs,
            NotificationKey.updatedObjectIDs.rawValue: changes.updatedObjectIDs,
            NotificationKey.deletedObjectIDs.rawValue: changes.deletedObjectIDs,
            NotificationKey.refreshedObjectIDs.rawValue: Set(refreshed.map(\.objectID)),
        ])
    }

    /// Makes a registered object deleted because another context's save deleted its row: deleted
    /// here too, its own changes dropped, nothing to write when this context saves.
    private func markDeletedElsewhere(_ object: ManagedObject) {
        guard let action = object.state.deleteElsewhere() else { return }
        if action.fillDefaults {
            // Its row is gone: it keeps default values, as an inaccessible fault that is deleted.
            object.fillWithDefaults()
        }
        if action.releaseRowCache { coordinator.rowCache.release([object.objectID]) }
        object.forgetSnapshotAndChanges()
        changes.recordDeletedElsewhere(object)
        retained.insert(object)
    }

    /// Gives an object a newer snapshot, keeping its own changes as the merge policy says.
    func adopt(_ snapshot: Snapshot, into object: ManagedObject, changedElsewhere keys: Set<String>) {
        let previous = object.snapshot
        if !object.hasChanges {
            object.takeNewer(snapshot)
            return
        }
        applyMergePolicy(to: object, newer: snapshot, atSave: false) { index in
            keys.contains(object.entity.properties[index].name) && (previous.map { $0.values[index] != snapshot.values[index] } ?? true)
        }
        object.forgetUnchangedToManyRelationships()
    }

    /// Whether some relationship of the model (a to-many one, when `toManyOnly`) can hold one of
    /// `ids`' objects. When none can, a merge has no relationship to correct for them and need not
    /// look at every registered object: its work stays in proportion to the changes.
    private func relationshipsMayReach(_ ids: Set<ManagedObjectID>, toManyOnly: Bool) -> Bool {
        guard !ids.isEmpty else { return false }
        guard let model else { return true }
        var targets: [EntityDescription] = []
        for id in ids where !targets.contains(where: { $0 === id.entity }) { targets.append(id.entity) }
        // IDs of another model's entities (another coordinator's): no shortcut.
        guard targets.allSatisfy({ target in model.entities.contains { $0 === target } }) else { return true }
        for entity in model.entities {
            for relationship in entity.relationships where !toManyOnly || relationship.isToMany {
                guard let destination = relationship.destinationEntity else { return true }
                if targets.contains(where: { $0.isKindOf(entity: destination) }) { return true }
            }
        }
        return false
    }

    /// Removes IDs from an object's relationships without recording a change (they were deleted
    /// and saved elsewhere).
    private func forgetDestinations(_ gone: Set<ManagedObjectID>, in object: ManagedObject) {
        guard !object.isFault else { return }
        for relationship in object.entity.relationships {
            if relationship.isToMany {
                guard let value = object.toMany[relationship.index] else { continue }
                if value.hasChanges {
                    for id in gone where value.contains(id) { value.forget(id) }
                } else if value.ids.contains(where: gone.contains) {
                    object.forgetToMany(at: relationship.index)
                }
            } else if case .objectID(let id) = object.values[relationship.index], gone.contains(id) {
                object.clearToOne(at: relationship.index)
            }
        }
    }

    /// Brings loaded to-many relationships in line with the saved foreign keys: each saved object
    /// (inserted or updated) is listed by its owner and by no other. Unchanged relationships that
    /// may hold it simply reload when next used; relationships with unsaved changes are corrected
    /// in place, without recording a change.
    private func refaultToManyRelationships(touchedBy changes: SaveChanges) {
        guard relationshipsMayReach(changes.insertedObjectIDs.union(changes.updatedObjectIDs), toManyOnly: true) else { return }
        if changes.snapshots.isEmpty {
            guard !(changes.insertedObjectIDs.isEmpty && changes.updatedObjectIDs.isEmpty) else { return }
            // Without rows, any loaded to-many may be stale.
            for object in liveObjects where !object.isFault { object.forgetUnchangedToManyRelationships() }
            return
        }
        // Loaded to-many relationships stored through foreign keys, by relationship.
        var loaded: [ObjectIdentifier: [(ManagedObject, RelationshipValue)]] = [:]
        for object in liveObjects where !object.isFault {
            for (index, value) in object.toMany where value.isLoaded {
                guard let relationship = object.entity.properties[index] as? RelationshipDescription,
                      relationship.isForeignKeyDerived else { continue }
                loaded[ObjectIdentifier(relationship), default: []].append((object, value))
            }
        }
        guard !loaded.isEmpty else { return }
        for (id, snapshot) in changes.snapshots {
            let local = registered[canonical(id)]?.object
            for relationship in snapshot.entity.relationships where !relationship.isToMany {
                guard let inverse = relationship.inverseRelationship, inverse.isToMany,
                      let owners = loaded[ObjectIdentifier(inverse)] else { continue }
                // The owner as this context sees it: its own unsaved value wins over the saved one.
                let owner: ManagedObjectID?
                if let local, local.managedObjectContext === self, local.isDeleted {
                    owner = nil  // deleted here, not saved yet: listed by no one
                } else if let local, !local.isFault, local.managedObjectContext === self {
                    owner = local.toOneID(relationship).map(canonical)
                } else if case .objectID(let saved) = snapshot.values[relationship.index] {
                    owner = canonical(saved)
                } else {
                    owner = nil
                }
                let member = canonical(id)
                for (object, value) in owners {
                    let isOwner = canonical(object.objectID) == owner
                    if value.contains(member) && !isOwner {
                        if value.hasChanges { value.forget(member) } else { object.forgetToMany(at: inverse.index) }
                    } else if !value.contains(member) && isOwner {
                        if value.hasChanges { value.insertSilently(member) } else { object.forgetToMany(at: inverse.index) }
                    }
                }
            }
        }
    }
}

extension RelationshipValue {
    /// Drops an ID without recording a change.
    func forget(_ id: ManagedObjectID) {
        _ = remove(id)
        dropPending(id)
    }

    /// Adds an ID without recording a change (it was added and saved elsewhere).
    func insertSilently(_ id: ManagedObjectID) {
        _ = add(id)
        dropPending(id)
    }
}
