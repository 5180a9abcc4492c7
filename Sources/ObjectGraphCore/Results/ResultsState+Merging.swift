import Foundation

/// Where changed objects go in a controller's results, and which of them moved.
///
/// Core Data's rule: a changed object is reported as moved only when what it is sorted by changed
/// (so that it no longer sits between its neighbours); otherwise it is updated in place, even when
/// inserts and deletes around it shift its index path. A changed object stays in place when it
/// still sorts after the last object that stays and before the next unchanged one; only the others
/// are merged in again.
extension ResultsState {
    /// The results after changes to some of their objects, found without reading the store or
    /// looking at every object twice: the unchanged objects, and the changed ones that still belong
    /// and stay in place, keep their order; the changed ones that belong and moved (or are new) are
    /// sorted once and merged in, each after every object that sorts before it or the same (so equal
    /// objects keep their order).
    ///
    /// - Parameter members: the changed objects that are in the new results.
    func merging(_ members: [ManagedObject], changed: Set<ObjectIdentifier>, into current: [ManagedObject]) -> ResultsMerge {
        var merge = ResultsMerge()
        var order = self.order
        let keys = members.map { order.values(of: $0) }
        var memberIndex: [ObjectIdentifier: Int] = [:]
        for (index, member) in members.enumerated() { memberIndex[ObjectIdentifier(member)] = index }
        var staying = [Bool](repeating: false, count: members.count)
        // The objects that stay in place, as their indices in `current` (not the objects themselves:
        // copying 100,000 references retains and releases each, touching every object's memory).
        var kept: [Int] = []
        kept.reserveCapacity(current.count)
        // The positions in `kept` of the changed objects that stay in place, in order.
        var updatedPositions: [Int] = []
        // A bit per hash of an object's address, set for the changed objects: most objects are
        // passed over by one bit test, without hashing them for the set.
        var maybeChanged = [UInt64](repeating: 0, count: 1024)
        func bit(_ id: ObjectIdentifier) -> Int {
            let address = UInt(bitPattern: id)
            return Int(truncatingIfNeeded: (address >> 4) ^ (address >> 20)) & 0xFFFF
        }
        for id in changed {
            let b = bit(id)
            maybeChanged[b >> 6] |= 1 << UInt64(b & 63)
        }
        func isChanged(_ index: Int) -> Bool {
            let id = ObjectIdentifier(current[index])
            let b = bit(id)
            return maybeChanged[b >> 6] & (1 << UInt64(b & 63)) != 0 && changed.contains(id)
        }
        // The index of the first unchanged object after the one looked at (found once for a run of
        // changed objects).
        var nextUnchanged = 0
        for index in current.indices {
            guard isChanged(index) else {
                kept.append(index)
                continue
            }
            let object = current[index]
            guard let member = memberIndex[ObjectIdentifier(object)] else {
                merge.removed.append((index, object))
                continue
            }
            if nextUnchanged <= index {
                nextUnchanged = index + 1
                while nextUnchanged < current.count && isChanged(nextUnchanged) { nextUnchanged += 1 }
            }
            let after = kept.last.map { current[$0] }
            let before = nextUnchanged < current.count ? current[nextUnchanged] : nil
            if Self.sorts(keys[member], after: after, before: before, &order) {
                staying[member] = true
                updatedPositions.append(kept.count)
                merge.updated.append((index, 0, object))
                kept.append(index)
            } else {
                merge.removed.append((index, object))
                merge.placedAgain.insert(ObjectIdentifier(object))
            }
        }
        let placed = members.indices.filter { !staying[$0] }.sorted { i, j in
            switch order.compare(keys[i], keys[j]) {
            case .orderedAscending: true
            case .orderedDescending: false
            case .orderedSame: i < j
            }
        }
        merge.objects.reserveCapacity(kept.count + placed.count)
        var nextUpdate = 0
        func appendKept(_ positions: Range<Int>) {
            for position in positions {
                if nextUpdate < updatedPositions.count && updatedPositions[nextUpdate] == position {
                    merge.updated[nextUpdate].new = merge.objects.count
                    nextUpdate += 1
                }
                merge.objects.append(current[kept[position]])
            }
        }
        var start = 0
        for i in placed {
            // The first object that stays after `start` and sorts after this one (binary search).
            var low = start, high = kept.count
            while low < high {
                let middle = (low + high) / 2
                if order.compare(current[kept[middle]], keys[i]) == .orderedDescending { high = middle } else { low = middle + 1 }
            }
            appendKept(start..<low)
            start = low
            merge.inserted.append((merge.objects.count, members[i]))
            merge.objects.append(members[i])
        }
        appendKept(start..<kept.count)
        return merge
    }

    /// Whether an object whose values are `keys` sorts after `after` (or the same) and before
    /// `before` (or the same): then it stays where it is.
    static func sorts(_ keys: [Value], after: ManagedObject?, before: ManagedObject?, _ order: inout ResultsOrder) -> Bool {
        if let after, order.compare(after, keys) == .orderedDescending { return false }
        if let before, order.compare(before, keys) == .orderedAscending { return false }
        return true
    }

    /// For results read again by a fetch: the changed objects in both lists that took another
    /// place (`placedAgain`: they no longer sort between the objects that stay, or the fetch put
    /// them elsewhere among them), and the unchanged objects that took another place among the
    /// others or another section (`shifted`).
    func displaced(
        from old: [ManagedObject], to new: [ManagedObject], changed: Set<ObjectIdentifier>,
        sectionChanged: (ObjectIdentifier) -> Bool
    ) -> (placedAgain: Set<ObjectIdentifier>, shifted: Set<ObjectIdentifier>) {
        var order = self.order
        let survivors = Set(new.map(ObjectIdentifier.init))
        var placedAgain = Set<ObjectIdentifier>()
        var lastKept: ManagedObject?
        var nextUnchanged = 0
        func isUnchangedSurvivor(_ index: Int) -> Bool {
            let id = ObjectIdentifier(old[index])
            return survivors.contains(id) && !changed.contains(id)
        }
        for (index, object) in old.enumerated() {
            let id = ObjectIdentifier(object)
            guard survivors.contains(id) else { continue }
            guard changed.contains(id) else {
                lastKept = object
                continue
            }
            if nextUnchanged <= index {
                nextUnchanged = index + 1
                while nextUnchanged < old.count && !isUnchangedSurvivor(nextUnchanged) { nextUnchanged += 1 }
            }
            let before = nextUnchanged < old.count ? old[nextUnchanged] : nil
            let keys = order.values(of: object)
            if Self.sorts(keys, after: lastKept, before: before, &order) {
                lastKept = object
            } else {
                placedAgain.insert(id)
            }
        }
        let moved = Self.moved(from: old, to: new, except: placedAgain, sectionsChanged: sectionChanged)
        return (placedAgain.union(moved.intersection(changed)), moved.subtracting(changed))
    }

    /// The objects that took another place by themselves: those outside the longest run of objects
    /// that kept their relative order, and those that changed section. The others only shifted.
    /// Objects in `except` are left out.
    static func moved(
        from old: [ManagedObject], to new: [ManagedObject], except: Set<ObjectIdentifier>, sectionsChanged: (ObjectIdentifier) -> Bool
    ) -> Set<ObjectIdentifier> {
        var newIndex: [ObjectIdentifier: Int] = [:]
        for (index, object) in new.enumerated() { newIndex[ObjectIdentifier(object)] = index }
        let surviving = old.map(ObjectIdentifier.init).filter { newIndex[$0] != nil && !except.contains($0) }
        // Those that changed section moved; the others moved only if they left the longest run.
        let changedSection = Set(surviving.filter(sectionsChanged))
        let kept = surviving.filter { !changedSection.contains($0) }
        let positions = kept.map { newIndex[$0]! }
        // Longest increasing subsequence of the new positions, in the old order (patience sorting).
        var tails: [Int] = [], tailIndex: [Int] = [], previous = [Int](repeating: -1, count: positions.count)
        for (i, position) in positions.enumerated() {
            var low = 0, high = tails.count
            while low < high {
                let middle = (low + high) / 2
                if tails[middle] < position { low = middle + 1 } else { high = middle }
            }
            if low > 0 { previous[i] = tailIndex[low - 1] }
            if low == tails.count { tails.append(position); tailIndex.append(i) } else { tails[low] = position; tailIndex[low] = i }
        }
        var stable = Set<ObjectIdentifier>()
        var index = tailIndex.last ?? -1
        while index >= 0 {
            stable.insert(kept[index])
            index = previous[index]
        }
        return changedSection.union(kept.filter { !stable.contains($0) })
    }
}

/// The results after some of their objects changed (`ResultsState.merging(_:changed:into:)`).
struct ResultsMerge {
    /// The new results.
    var objects: [ManagedObject] = []
    /// The changed objects that were in the old results and left them or took another place,
    /// with their index there, in order.
    var removed: [(index: Int, object: ManagedObject)] = []
    /// The changed objects that stayed in place, with their old and new index, in order.
    var updated: [(old: Int, new: Int, object: ManagedObject)] = []
    /// The objects merged in (new ones, and changed ones that took another place), with their
    /// index in the new results, in order.
    var inserted: [(index: Int, object: ManagedObject)] = []
    /// The changed objects that were in the old results and took another place.
    var placedAgain = Set<ObjectIdentifier>()
}
