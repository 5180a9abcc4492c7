import Foundation

/// The destinations of one to-many relationship of one object: loaded from the store on first
/// use, with the changes made since the last save kept as additions and removals (which also
/// apply on top of the store's destinations when loaded later).
final class RelationshipValue {
    private(set) var isLoaded: Bool
    let isOrdered: Bool
    private var order: [ManagedObjectID] = []
    private var members: Set<ManagedObjectID> = []
    private(set) var added: Set<ManagedObjectID> = []
    private(set) var removed: Set<ManagedObjectID> = []
    /// Whether an ordered relationship's order changed since the last save.
    private(set) var orderChanged = false

    init(isOrdered: Bool, loaded: Bool) {
        self.isOrdered = isOrdered
        self.isLoaded = loaded
    }

    var ids: [ManagedObjectID] { isOrdered ? order : Array(members) }
    var count: Int { members.count }
    func contains(_ id: ManagedObjectID) -> Bool { members.contains(id) }
    var hasChanges: Bool { !added.isEmpty || !removed.isEmpty || orderChanged }

    /// Fills the relationship from the store's destinations, applying pending changes on top.
    func load(_ stored: [ManagedObjectID]) {
        var seen: Set<ManagedObjectID> = []
        var result: [ManagedObjectID] = []
        for id in stored where !removed.contains(id) && seen.insert(id).inserted { result.append(id) }
        if isOrdered {
            // Additions made before loading keep the order they were made in, at the end.
            for id in order where !seen.contains(id) && seen.insert(id).inserted { result.append(id) }
        }
        for id in added where !seen.contains(id) && seen.insert(id).inserted { result.append(id) }
        members = seen
        if isOrdered { order = result }
        isLoaded = true
    }


    @discardableResult
    func add(_ id: ManagedObjectID) -> Bool {
        if members.contains(id) { return false }
        if !isLoaded && added.contains(id) { return false }
        members.insert(id)
        if isOrdered { order.append(id); orderChanged = true }
        if removed.remove(id) == nil { added.insert(id) }
        return true
    }

    @discardableResult
    func remove(_ id: ManagedObjectID) -> Bool {
        if isLoaded && !members.contains(id) { return false }
        members.remove(id)
        if isOrdered, let i = order.firstIndex(of: id) { order.remove(at: i); orderChanged = true }
        if added.remove(id) == nil { removed.insert(id) }
        return true
    }

    func replace(with ids: [ManagedObjectID]) {
        let newSet = Set(ids)
        for id in members where !newSet.contains(id) { remove(id) }
        for id in ids where !members.contains(id) { add(id) }
        if isOrdered && order != ids {
            order = ids
            orderChanged = true
        }
    }

    /// Rewrites IDs after a save gave inserted objects permanent IDs.
    func remap(_ permanentID: (ManagedObjectID) -> ManagedObjectID?) {
        func m(_ id: ManagedObjectID) -> ManagedObjectID { permanentID(id) ?? id }
        order = order.map(m)
        members = Set(members.map(m))
        added = Set(added.map(m))
        removed = Set(removed.map(m))
    }

    /// Removes an ID from the pending additions and removals.
    func dropPending(_ id: ManagedObjectID) {
        added.remove(id)
        removed.remove(id)
    }

    /// Forgets pending changes once saved.
    func commit() {
        added = []
        removed = []
        orderChanged = false
    }
}
