import Foundation

// A child context's save: its changes go into its parent, on the parent's queue, all or nothing
// (see ManagedObjectContext+Nesting.swift for the chain as a whole).

extension ManagedObjectContext {
    // MARK: - Saving into the parent

    /// One to-many relationship of a pushed object: the destinations added and removed (all of
    /// them, added, for an inserted object), and the whole order of an ordered one that changed.
    struct PushedRelationship: Sendable {
        var index: Int
        var added: [ManagedObjectID]
        var removed: [ManagedObjectID]
        var order: [ManagedObjectID]?
    }

    /// One object of a child's save, as values the parent can take.
    struct PushedObject: Sendable {
        var id: ManagedObjectID
        var entity: EntityDescription
        /// Every value (transformables encoded, IDs permanent where known); empty for a delete.
        var values: [Value]
        /// For an update, the attributes and to-one relationships that changed.
        var changedIndices: [Int]
        var relationships: [PushedRelationship]
        /// For an update or a delete, the object as the child last read it from the parent.
        var base: Snapshot?
    }

    /// A child's save, as sent to its parent.
    struct Push: Sendable {
        var inserted: [PushedObject] = []
        var updated: [PushedObject] = []
        var deleted: [PushedObject] = []
    }

    /// What the parent did with a push.
    enum PushOutcome: Sendable {
        /// Applied: the parent's view of each inserted and updated object, for the child's snapshots.
        case applied([ManagedObjectID: Snapshot])
        /// Refused, nothing changed: objects the parent changed or deleted since the child read them.
        case conflicts([VersionConflict])
    }

    /// Saves a child: its changes go into its parent (on the parent's queue), which then has them
    /// unsaved. Conflicts with the parent's own changes go to the merge policy, as at the store.
    func pushChangesToParent() throws {
        guard let parent else { return }
        var attempt = 0
        while true {
            attempt += 1
            let (push, saved) = try makePush()
            let outcome = try withParent(parent) { try parent.receivePush(push, from: self) }
            switch outcome {
            case .applied(let snapshots):
                didSave(saved, result: StoreSaveResult(permanentIDs: [:], snapshots: snapshots))
                return
            case .conflicts(let conflicts):
                if attempt > 8 { throw parentConflictError(conflicts) }
                try resolveParentConflicts(conflicts)
            }
        }
    }

    /// The push of the context's changes, and the objects it saves.
    func makePush() throws -> (Push, SavedObjects) {
        var push = Push()
        var saved = SavedObjects()
        func pushedRelationships(_ object: ManagedObject, whole: Bool) -> [PushedRelationship] {
            var result: [PushedRelationship] = []
            for (index, value) in object.toMany where whole || value.hasChanges {
                guard let relationship = object.entity.properties[index] as? RelationshipDescription else { continue }
                if whole {
                    let ids = value.ids.map(canonical)
                    result.append(PushedRelationship(index: index, added: ids, removed: [], order: relationship.isOrdered ? ids : nil))
                } else {
                    let order = relationship.isOrdered && value.isLoaded && value.orderChanged ? value.ids.map(canonical) : nil
                    result.append(PushedRelationship(
                        index: index, added: value.added.map(canonical), removed: value.removed.map(canonical), order: order))
                }
            }
            return result
        }
        for object in insertedObjects where !object.isDeleted {
            push.inserted.append(PushedObject(
                id: object.objectID, entity: object.entity, values: try writtenValues(of: object, encodingChangedOnly: true), changedIndices: [],
                relationships: pushedRelationships(object, whole: true), base: nil))
            saved.inserted.append(object)
        }
        for object in updatedObjects where !object.isDeleted && !object.isInserted && object.hasChanges {
            let columns = object.changedIndices.filter(object.entity.isStoredInRow)
            push.updated.append(PushedObject(
                id: object.objectID, entity: object.entity, values: try writtenValues(of: object, encodingChangedOnly: true), changedIndices: columns.sorted(),
                relationships: pushedRelationships(object, whole: false), base: object.snapshot))
            saved.updated.append(object)
        }
        for object in deletedObjects where !object.isInserted {
            push.deleted.append(PushedObject(
                id: object.objectID, entity: object.entity, values: [], changedIndices: [], relationships: [], base: object.snapshot))
            saved.deleted.append(object)
        }
        return (push, saved)
    }

    /// Takes a child's push, on this (the parent's) queue: checks that the objects it updates or
    /// deletes are as the child read them, then applies it all, or nothing.
    func receivePush(_ push: Push, from child: ManagedObjectContext) throws -> PushOutcome {
        // Every object updated or deleted must still exist here, and look as the child read it.
        let checked = push.updated + push.deleted
        if !checked.isEmpty {
            let views = try viewSnapshots(for: checked.map(\.id), maximumAge: nil, retainingRows: false)
            var conflicts: [VersionConflict] = []
            for pushed in checked {
                let local = registered[canonical(pushed.id)]?.takeUnretainedValue()
                guard let view = views[pushed.id]?.snapshot, local?.isDeleted != true else {
                    conflicts.append(VersionConflict(id: pushed.id, expectedVersion: pushed.base?.version ?? 0, persisted: nil))
                    continue
                }
                if let base = pushed.base, !storesSameValues(base, view) {
                    conflicts.append(VersionConflict(id: pushed.id, expectedVersion: base.version, persisted: view))
                }
            }
            if !conflicts.isEmpty { return .conflicts(conflicts) }
        }

        var touched: [ManagedObject] = []
        for pushed in push.inserted { touched.append(applyInsert(pushed)) }
        for pushed in push.updated { touched.append(applyUpdate(pushed)) }
        for pushed in push.deleted {
            let object = object(with: pushed.id)
            if !object.isDeleted { delete(object) }
        }
        processPendingChanges()

        var snapshots: [ManagedObjectID: Snapshot] = [:]
        for (pushed, object) in zip(push.inserted + push.updated, touched) where !object.isFault && object.managedObjectContext === self {
            snapshots[pushed.id] = viewSnapshot(of: object)
        }
        var changedKeys: [ManagedObjectID: Set<String>] = [:]
        for pushed in push.updated {
            changedKeys[canonical(pushed.id)] = Set((pushed.changedIndices + pushed.relationships.map(\.index)).map { pushed.entity.properties[$0].name })
        }
        let changes = SaveChanges(
            inserted: Set(push.inserted.map { canonical($0.id) }), updated: Set(push.updated.map { canonical($0.id) }),
            deleted: Set(push.deleted.map { canonical($0.id) }), changedKeys: changedKeys, snapshots: [:])
        forwardToAutomaticallyMergingChildren(changes, except: child)
        return .applied(snapshots)
    }

    /// Registers an object a child inserted, under the child's ID, as inserted here.
    private func applyInsert(_ pushed: PushedObject) -> ManagedObject {
        let object: ManagedObject
        if let existing = registered[canonical(pushed.id)]?.takeUnretainedValue() {
            // Known here already (resolved by ID before the push): it becomes the inserted object.
            guard existing.isFault else { return applyWhole(pushed, to: existing) }
            object = existing
        } else {
            object = pushed.entity.managedObjectClass.init(entity: pushed.entity, insertInto: nil)
            object.objectID = pushed.id
            register(object)
        }
        object.values = pushed.values
        object.boxed = [:]
        object.toMany = [:]
        object.snapshot = nil
        object.batch = nil
        object.flags = [.inserted]
        for relationship in pushed.entity.relationships where relationship.isToMany {
            let value = RelationshipValue(isOrdered: relationship.isOrdered, loaded: true)
            object.toMany[relationship.index] = value
        }
        for pushedRelationship in pushed.relationships {
            let value = object.toMany[pushedRelationship.index]
            for id in pushedRelationship.order ?? pushedRelationship.added { value?.add(id) }
        }
        insertedObjects.insert(object)
        retained.insert(object)
        noteUnreportedChange(object)
        return object
    }

    /// An inserted object the parent already holds with values: every value is taken.
    private func applyWhole(_ pushed: PushedObject, to object: ManagedObject) -> ManagedObject {
        var whole = pushed
        whole.changedIndices = pushed.entity.properties.compactMap { property in
            if let attribute = property as? AttributeDescription { return attribute.isTransient ? nil : attribute.index }
            return (property as? RelationshipDescription)?.isToMany == false ? property.index : nil
        }
        whole.relationships = pushed.relationships.map { relationship in
            let current = Set(object.toMany[relationship.index]?.ids ?? [])
            let wanted = Set(relationship.added)
            return PushedRelationship(
                index: relationship.index, added: relationship.added, removed: Array(current.subtracting(wanted)), order: relationship.order)
        }
        return applyUpdate(whole)
    }

    /// Applies a child's changes to one object; the object here records them as its own.
    private func applyUpdate(_ pushed: PushedObject) -> ManagedObject {
        let object = object(with: pushed.id)
        object.fireFaultIfNeeded()
        for index in pushed.changedIndices {
            let value = pushed.values[index]
            if object.values[index] == value && object.boxed[index] == nil { continue }
            object.values[index] = value
            object.boxed[index] = nil
            object.markChanged(index)
        }
        for pushedRelationship in pushed.relationships {
            guard let relationship = pushed.entity.properties[pushedRelationship.index] as? RelationshipDescription else { continue }
            if let order = pushedRelationship.order {
                loadToMany(relationship, of: [object])
                let value = object.relationshipValue(relationship)
                if value.ids != order {
                    value.replace(with: order)
                    object.markChanged(relationship.index)
                }
                continue
            }
            let value = object.relationshipValue(relationship)
            var changed = false
            for id in pushedRelationship.removed where value.remove(id) { changed = true }
            for id in pushedRelationship.added where value.add(id) { changed = true }
            if changed { object.markChanged(relationship.index) }
        }
        return object
    }

    /// Whether two snapshots of an object hold the same stored values (transients and to-many
    /// slots aside; object IDs compared as the chain knows them).
    private func storesSameValues(_ base: Snapshot, _ view: Snapshot) -> Bool {
        var unresolved: [(ManagedObjectID, ManagedObjectID)] = []
        for property in base.entity.properties where property.index < base.values.count && property.index < view.values.count {
            if let attribute = property as? AttributeDescription, attribute.isTransient { continue }
            if let relationship = property as? RelationshipDescription, relationship.isToMany { continue }
            let a = base.values[property.index], b = view.values[property.index]
            if a == b { continue }
            guard case .objectID(let x) = a, case .objectID(let y) = b else { return false }
            let cx = canonical(x), cy = canonical(y)
            if cx == cy { continue }
            // A temporary ID against a permanent one: the root may have saved in between.
            guard cx.isTemporaryID != cy.isTemporaryID else { return false }
            unresolved.append((cx, cy))
        }
        return unresolved.allSatisfy { x, y in permanentIDKnownAbove(x) == permanentIDKnownAbove(y) }
    }

    /// Resolves conflicts with the parent by the merge policy, as conflicts with the store are:
    /// the parent's view plays the store. An object the parent deleted stays deleted.
    func resolveParentConflicts(_ conflicts: [VersionConflict]) throws {
        if mergePolicy.type == .error { throw parentConflictError(conflicts) }
        var remaining: [VersionConflict] = []
        for conflict in conflicts {
            guard conflict.persisted == nil else {
                remaining.append(conflict)
                continue
            }
            guard let object = registered[canonical(conflict.id)]?.takeUnretainedValue() else { continue }
            invalidate(object)
        }
        try resolve(remaining)
        restoreUnloadedToManyRelationships()
    }

    /// The error of a child's save refused because its parent changed the same objects.
    func parentConflictError(_ conflicts: [VersionConflict]) -> ObjectGraphError {
        let parentName = parent?.debugName ?? ""
        return conflictError(conflicts, summary: "conflicts with parent context '\(parentName)'") { conflict in
            let state = conflict.persisted == nil ? "deleted it" : "changed it"
            return "\(conflict.id) cannot be saved from context '\(debugName)' into its parent '\(parentName)': the parent \(state) since '\(debugName)' read it"
        }
    }
}
