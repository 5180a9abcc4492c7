import Foundation

/// A fetched results controller's results and how they follow the context: shared by the typed
/// controller and the untyped view its delegate receives. Used on the context's queue only, except
/// the snapshot streams' continuations, which are behind a lock.
final class ResultsState {
    weak var delegate: (any FetchedResultsControllerDelegate)? {
        didSet {
            let type = delegate.map { ObjectIdentifier(Swift.type(of: $0)) }
            delegateLacksDifferences = type.map { type in Self.typesLackingDifferences.withLock { $0.contains(type) } } ?? false
        }
    }
    /// Learned at the first change told to the current delegate, or from an earlier delegate of
    /// the same class: it does not implement `controller(_:didChangeContentWith:)`, so no
    /// difference is computed for it again.
    private var delegateLacksDifferences = false
    /// The delegate classes known not to implement `controller(_:didChangeContentWith:)` (a class's
    /// witness for it cannot change), so that a new controller need not compute a difference to
    /// find out.
    private static let typesLackingDifferences = Protected(Set<ObjectIdentifier>())
    /// The controller that owns the state (a view does not stop it when it goes away).
    var owner: ObjectIdentifier?
    private(set) var objects: [ManagedObject]?
    private(set) var sections: [ResultsSection]?

    private var entity: EntityDescription?
    private var includesSubentities = true
    private var predicate: FetchPredicate?
    private var sortDescriptors: [FetchSortDescriptor] = []
    private var fetchLimit = 0
    private var section: FetchSortDescriptor?
    /// Whether the predicate, a sort or the section key path reads other objects (`folder.name`):
    /// then a change to any other object may move or filter the results.
    private var readsRelatedObjects = false
    /// Whether the delegate implements `controller(_:didChangeContentWith:)`: set before each call
    /// of it, cleared by the protocol's default implementation.
    var delegateTakesDifferences = false
    private weak var context: ManagedObjectContext?
    private var observers: [any NSObjectProtocol] = []
    private var view: () -> FetchedResultsController<ManagedObject> = { fatalError("ObjectGraph: a FetchedResultsController was used before performFetch()") }
    private var refetch: () throws -> [ManagedObject] = { [] }
    private let streams = Protected(SnapshotStreams())

    func configure(
        entity: EntityDescription, includesSubentities: Bool, predicate: FetchPredicate?,
        sortDescriptors: [FetchSortDescriptor], fetchLimit: Int, sectionNameKeyPath: String?
    ) {
        self.entity = entity
        self.includesSubentities = includesSubentities
        self.predicate = predicate
        self.sortDescriptors = sortDescriptors
        self.fetchLimit = fetchLimit
        self.section = sectionNameKeyPath.map { FetchSortDescriptor(key: $0) }
        let keys = sortDescriptors.map(\.key) + (sectionNameKeyPath.map { [$0] } ?? [])
        let format = predicate?.predicateFormat ?? ""
        readsRelatedObjects = keys.contains { $0.contains(".") }
            || ["." , "@", "ANY", "ALL", "NONE", "SUBQUERY"].contains { format.localizedCaseInsensitiveContains($0) }
    }

    /// Takes the results of a fetch, without telling the delegate (``FetchedResultsController/performFetch()``).
    func replace(with objects: [ManagedObject]) {
        self.objects = objects
        sections = makeSections(objects)
        publish()
    }

    /// Starts following the context's changes (once).
    func follow(_ context: ManagedObjectContext, view: @escaping () -> FetchedResultsController<ManagedObject>, refetch: @escaping () throws -> [ManagedObject]) {
        self.view = view
        self.refetch = refetch
        guard observers.isEmpty else { return }
        self.context = context
        let reference = StateReference(self)
        observers = [
            NotificationCenter.default.addObserver(forName: ManagedObjectContext.objectsDidChangeNotification, object: context, queue: nil) { note in
                reference.state?.contextDidChange(note.userInfo ?? [:])
            },
            NotificationCenter.default.addObserver(forName: ManagedObjectContext.didSaveObjectsNotification, object: context, queue: nil) { _ in
                // Inserted objects have permanent IDs now: the snapshots say so.
                reference.state?.publish()
            },
        ]
    }

    /// Stops following the context and ends the snapshot streams (the controller went away).
    func stop() {
        for observer in observers { NotificationCenter.default.removeObserver(observer) }
        observers = []
        let continuations = streams.withLock { streams in
            defer { streams.entries = [:] }
            return streams.entries.values.map(\.continuation)
        }
        for continuation in continuations { continuation.finish() }
    }

    func indexPath(of object: ManagedObject) -> IndexPath? {
        guard let sections else { return nil }
        for (s, section) in sections.enumerated() {
            if let item = section.managedObjects.firstIndex(where: { $0 === object }) { return IndexPath(item: item, section: s) }
        }
        return nil
    }

    // MARK: - Following changes

    private func contextDidChange(_ info: [AnyHashable: Any]) {
        guard let current = objects, let entity, let context else { return }
        var next: [ManagedObject]
        var changed = Set<ObjectIdentifier>()
        if info[ManagedObjectContext.NotificationKey.invalidatedAllObjects.rawValue] != nil {
            // reset(): every object is gone; the results are read again.
            next = (try? refetch()) ?? []
        } else {
            var relevant: [ManagedObject] = []
            var othersChanged = false
            let keys: [ManagedObjectContext.NotificationKey] = [.insertedObjects, .updatedObjects, .deletedObjects, .refreshedObjects, .invalidatedObjects]
            for key in keys {
                for object in info[key.rawValue] as? Set<ManagedObject> ?? [] {
                    guard includesSubentities ? object.entity.isKindOf(entity: entity) : object.entity === entity else {
                        othersChanged = true
                        continue
                    }
                    if changed.insert(ObjectIdentifier(object)).inserted { relevant.append(object) }
                }
            }
            if othersChanged && readsRelatedObjects {
                // A related object changed (a folder's name the notes sort or are sectioned by): the
                // results are read again, and an object that took another place is a move. Core Data
                // misses these.
                // In memory too: the store sorts by the related objects' saved values.
                let fetched = (try? refetch()) ?? current
                let next = (try? FetchSortDescriptor.sorted(fetched, by: sortDescriptors) { $0 }) ?? fetched
                return apply(next, changed: changed, movesAreChanges: true)
            }
            guard !relevant.isEmpty else { return }
            if fetchLimit > 0 {
                // Objects past the limit may move in: only a fetch knows.
                next = (try? refetch()) ?? current.filter { !changed.contains(ObjectIdentifier($0)) }
            } else {
                // Objects merged from another context's save are faults: one read of the store
                // fills them all, rather than one each as the predicate and the sort read them.
                context.fulfillFaults(relevant.filter { $0.isFault && $0.managedObjectContext === context && !$0.isDeleted })
                let merge = merging(relevant.filter { belongs($0, to: context) }, changed: changed, into: current)
                if section == nil { return apply(merge, from: current) }
                next = merge.objects
            }
        }
        apply(next, changed: changed)
    }

    /// Whether a changed object is in the results: alive in the context, not deleted, matching.
    private func belongs(_ object: ManagedObject, to context: ManagedObjectContext) -> Bool {
        guard object.managedObjectContext === context, !object.isDeleted else { return false }
        guard let predicate else { return true }
        return (try? object.matches(predicate)) ?? false
    }

    /// The results after changes to some of their objects, found without reading the store or
    /// looking at every object twice: the unchanged objects keep their order, and the changed
    /// ones that still belong (`members`) are sorted once and merged in, each after every object
    /// that sorts before it or the same (so equal objects keep their order).
    private func merging(_ members: [ManagedObject], changed: Set<ObjectIdentifier>, into current: [ManagedObject]) -> Merge {
        var merge = Merge()
        // The unchanged objects, as their indices in `current` (not the objects themselves: copying
        // 100,000 references retains and releases each, touching every object's memory).
        var kept: [Int] = []
        kept.reserveCapacity(current.count)
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
        for index in current.indices {
            let id = ObjectIdentifier(current[index])
            let b = bit(id)
            if maybeChanged[b >> 6] & (1 << UInt64(b & 63)) != 0, changed.contains(id) {
                merge.removed.append((index, current[index]))
            } else {
                kept.append(index)
            }
        }
        var reader = SortKeyReader(sortDescriptors)
        let keys = members.map { (try? reader.values(of: $0)) ?? [] }
        let order = members.indices.sorted { i, j in
            switch reader.compare(keys[i], keys[j]) {
            case .orderedAscending: true
            case .orderedDescending: false
            case .orderedSame: i < j
            }
        }
        merge.objects.reserveCapacity(kept.count + members.count)
        var start = 0
        for i in order {
            // The first unchanged object after `start` that sorts after this one (binary search).
            var low = start, high = kept.count
            while low < high {
                let middle = (low + high) / 2
                let order = (try? reader.compare(current[kept[middle]], keys[i])) ?? .orderedSame
                if order == .orderedDescending { high = middle } else { low = middle + 1 }
            }
            for index in kept[start..<low] { merge.objects.append(current[index]) }
            start = low
            merge.inserted.append((merge.objects.count, members[i]))
            merge.objects.append(members[i])
        }
        for index in kept[start...] { merge.objects.append(current[index]) }
        return merge
    }

    /// Takes the results of `merging(_:changed:into:)` without sections: what changed is
    /// read from the merge (work in proportion to the changed objects, plus copying the list).
    private func apply(_ merge: Merge, from oldObjects: [ManagedObject]) {
        guard sections != nil else { return }
        var oldIndex: [ObjectIdentifier: (rank: Int, index: Int)] = [:]
        for (rank, (index, object)) in merge.removed.enumerated() { oldIndex[ObjectIdentifier(object)] = (rank, index) }
        var newIndex: [ObjectIdentifier: (rank: Int, index: Int)] = [:]
        for (rank, (index, object)) in merge.inserted.enumerated() { newIndex[ObjectIdentifier(object)] = (rank, index) }

        var changes = Changes()
        if oldObjects.isEmpty != merge.objects.isEmpty {
            let sections = makeSections(oldObjects.isEmpty ? merge.objects : oldObjects)
            changes.sections = [(sections[0], 0, oldObjects.isEmpty ? .insert : .delete)]
        }
        for (index, object) in merge.removed {
            if let new = newIndex[ObjectIdentifier(object)] {
                let old = IndexPath(item: index, section: 0)
                changes.objects.append(new.index == index ? (object, old, .update, nil) : (object, old, .move, IndexPath(item: new.index, section: 0)))
            } else {
                changes.objects.append((object, IndexPath(item: index, section: 0), .delete, nil))
            }
        }
        for (index, object) in merge.inserted where oldIndex[ObjectIdentifier(object)] == nil {
            changes.objects.append((object, nil, .insert, IndexPath(item: index, section: 0)))
        }
        guard !changes.sections.isEmpty || !changes.objects.isEmpty else { return }
        changes.difference = {
            // Removed: the deleted objects and those that took another place among the unchanged
            // ones; inserted: the new ones and those. A changed object at the same index with as
            // many unchanged objects before it stays put, so an update is no change at all.
            func stays(_ old: (rank: Int, index: Int)?, _ new: (rank: Int, index: Int)?) -> Bool {
                guard let old, let new else { return false }
                return old.index == new.index && old.index - old.rank == new.index - new.rank
            }
            var steps: [CollectionDifference<ManagedObjectID>.Change] = []
            for (index, object) in merge.removed where !stays(oldIndex[ObjectIdentifier(object)], newIndex[ObjectIdentifier(object)]) {
                steps.append(.remove(offset: index, element: object.objectID, associatedWith: nil))
            }
            for (index, object) in merge.inserted where !stays(oldIndex[ObjectIdentifier(object)], newIndex[ObjectIdentifier(object)]) {
                steps.append(.insert(offset: index, element: object.objectID, associatedWith: nil))
            }
            return CollectionDifference(steps) ?? merge.objects.map(\.objectID).difference(from: oldObjects.map(\.objectID))
        }
        tell(changes, next: merge.objects, sections: makeSections(merge.objects))
    }

    /// Takes new results, telling the delegate what changed.
    private func apply(_ next: [ManagedObject], changed: Set<ObjectIdentifier>, movesAreChanges: Bool = false) {
        guard let oldObjects = objects, let oldSections = sections else { return }
        let newSections = makeSections(next)
        let oldPaths = paths(oldSections), newPaths = paths(newSections)
        let moved = movesAreChanges ? Self.moved(from: oldObjects, to: next, except: changed) { id in
            guard let old = oldPaths[id], let new = newPaths[id] else { return false }
            return oldSections[old.section].name != newSections[new.section].name
        } : nil

        var changes = Changes()
        let oldNames = Set(oldSections.map(\.name)), newNames = Set(newSections.map(\.name))
        for (index, section) in oldSections.enumerated() where !newNames.contains(section.name) { changes.sections.append((section, index, .delete)) }
        for (index, section) in newSections.enumerated() where !oldNames.contains(section.name) { changes.sections.append((section, index, .insert)) }

        for object in oldObjects {
            let id = ObjectIdentifier(object)
            guard let old = oldPaths[id] else { continue }
            if let new = newPaths[id] {
                guard changed.contains(id) || (moved?.contains(id) ?? false) else { continue }
                changes.objects.append(old == new ? (object, old, .update, nil) : (object, old, .move, new))
            } else {
                changes.objects.append((object, old, .delete, nil))
            }
        }
        for object in next where oldPaths[ObjectIdentifier(object)] == nil {
            changes.objects.append((object, nil, .insert, newPaths[ObjectIdentifier(object)]))
        }
        guard !changes.sections.isEmpty || !changes.objects.isEmpty else { return }
        changes.difference = { next.map(\.objectID).difference(from: oldObjects.map(\.objectID)) }
        tell(changes, next: next, sections: newSections)
    }

    /// Takes new results and tells the delegate and the snapshot streams what changed.
    private func tell(_ changes: Changes, next: [ManagedObject], sections newSections: [ResultsSection]) {
        guard let oldObjects = objects, let oldSections = sections else { return }
        let controller = view()
        let delegate = self.delegate
        if let delegate, section == nil, !delegateLacksDifferences {
            // Core Data sends only the difference to a delegate that implements it; the default
            // implementation clears `delegateTakesDifferences`, and then the other calls follow.
            objects = next
            sections = newSections
            delegateTakesDifferences = true
            let difference = changes.difference()
            delegate.controller(controller, didChangeContentWith: difference)
            if delegateTakesDifferences {
                publish({ difference }, from: oldObjects)
                return
            }
            delegateLacksDifferences = true
            let type = ObjectIdentifier(Swift.type(of: delegate))
            _ = Self.typesLackingDifferences.withLock { $0.insert(type) }
            objects = oldObjects
            sections = oldSections
        }
        delegate?.controllerWillChangeContent(controller)
        objects = next
        sections = newSections
        for (section, index, type) in changes.sections {
            delegate?.controller(controller, didChange: section, atSectionIndex: index, for: type)
        }
        for (object, old, type, new) in changes.objects {
            delegate?.controller(controller, didChange: object, at: old, for: type, newIndexPath: new)
        }
        delegate?.controllerDidChangeContent(controller)
        publish(changes.difference, from: oldObjects)
    }

    /// The objects that took another place by themselves: those outside the longest run of objects
    /// that kept their relative order, and those that changed section. The others only shifted.
    /// Objects in `except` changed themselves and are reported by their own rule.
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

    private func paths(_ sections: [ResultsSection]) -> [ObjectIdentifier: IndexPath] {
        var result: [ObjectIdentifier: IndexPath] = [:]
        for (s, section) in sections.enumerated() {
            for (item, object) in section.managedObjects.enumerated() { result[ObjectIdentifier(object)] = IndexPath(item: item, section: s) }
        }
        return result
    }

    /// Groups sorted objects into sections by their section name (one unnamed section without a key path).
    private func makeSections(_ objects: [ManagedObject]) -> [ResultsSection] {
        guard let section else {
            return objects.isEmpty ? [] : [ResultsSection(name: "", indexTitle: nil, managedObjects: objects)]
        }
        var result: [ResultsSection] = []
        for object in objects {
            let name = Self.sectionName((try? section.sortValue(of: object)) ?? .null)
            if result.last?.name == name {
                result[result.count - 1].managedObjects.append(object)
            } else {
                result.append(ResultsSection(name: name, indexTitle: name.first.map { String($0).uppercased() }, managedObjects: [object]))
            }
        }
        return result
    }

    /// A section's name from the section key path's value (an empty name for nil, as in Core Data).
    static func sectionName(_ value: Value) -> String {
        switch value {
        case .null: ""
        case .string(let text): text
        case .int(let number): String(number)
        case .bool(let flag): flag ? "1" : "0"
        case .double(let number): String(number)
        case .decimal(let number): "\(number)"
        case .date(let date): date.description
        case .uuid(let uuid): uuid.uuidString
        case .url(let url): url.absoluteString
        case .objectID(let id): id.uriRepresentation().absoluteString
        case .data(let data): data.base64EncodedString()
        }
    }

    // MARK: - Snapshots

    /// The current results as a value.
    private var currentSnapshotSections: [ResultsSnapshot.Section] {
        (sections ?? []).map { ResultsSnapshot.Section(name: $0.name, indexTitle: $0.indexTitle, objectIDs: $0.managedObjects.map(\.objectID)) }
    }

    func makeSnapshotStream() -> AsyncStream<ResultsSnapshot> {
        let (stream, continuation) = AsyncStream<ResultsSnapshot>.makeStream(bufferingPolicy: .unbounded)
        let sections = objects == nil ? nil : currentSnapshotSections
        let key = streams.withLock { streams -> UInt64 in
            streams.nextKey += 1
            streams.entries[streams.nextKey] = SnapshotStreams.Entry(continuation: continuation, last: [])
            return streams.nextKey
        }
        continuation.onTermination = { [streams] _ in _ = streams.withLock { $0.entries.removeValue(forKey: key) } }
        if let sections { yield(sections, to: key) }
        return stream
    }

    /// Sends the current results to every stream whose last snapshot differs.
    private func publish() {
        publish({ nil }, from: nil)
    }

    /// Sends the current results to every stream whose last snapshot differs; `difference` leads
    /// from `previous` (the results before a change) to them, for a stream whose last snapshot
    /// was `previous`, so that it need not be computed again by comparing every ID.
    private func publish(_ difference: () -> CollectionDifference<ManagedObjectID>?, from previous: [ManagedObject]?) {
        guard objects != nil else { return }
        let keys = streams.withLock { Array($0.entries.keys) }
        guard !keys.isEmpty else { return }
        let sections = currentSnapshotSections
        let previousIDs = previous?.map(\.objectID)
        var known: CollectionDifference<ManagedObjectID>??
        for key in keys {
            yield(sections, to: key) { last in
                guard let previousIDs, last == previousIDs else { return nil }
                if known == nil { known = .some(difference()) }
                return known ?? nil
            }
        }
    }

    private func yield(
        _ sections: [ResultsSnapshot.Section], to key: UInt64,
        difference known: (_ last: [ManagedObjectID]) -> CollectionDifference<ManagedObjectID>? = { _ in nil }
    ) {
        let ids = sections.flatMap(\.objectIDs)
        let target = streams.withLock { streams -> (AsyncStream<ResultsSnapshot>.Continuation, [ManagedObjectID])? in
            guard let entry = streams.entries[key], entry.last != ids || entry.sent == 0 else { return nil }
            streams.entries[key]?.last = ids
            streams.entries[key]?.sent += 1
            return (entry.continuation, entry.last)
        }
        guard let (continuation, previous) = target else { return }
        let difference = (previous.isEmpty ? nil : known(previous)) ?? ids.difference(from: previous)
        continuation.yield(ResultsSnapshot(sections: sections, difference: difference))
    }
}

/// A change of a controller's results: what its delegate is told.
private struct Changes {
    var sections: [(ResultsSection, Int, FetchedResultsChangeType)] = []
    var objects: [(ManagedObject, IndexPath?, FetchedResultsChangeType, IndexPath?)] = []
    /// The difference from the old results' IDs to the new ones (computed only when needed).
    var difference: () -> CollectionDifference<ManagedObjectID> = { CollectionDifference([])! }
}

/// The results after some of their objects changed (`ResultsState.merging(_:changed:into:)`).
private struct Merge {
    /// The new results.
    var objects: [ManagedObject] = []
    /// The changed objects that were in the old results, with their index there, in order.
    var removed: [(index: Int, object: ManagedObject)] = []
    /// The changed objects that are in the new results, with their index there, in order.
    var inserted: [(index: Int, object: ManagedObject)] = []
}

/// The snapshot streams of a controller, behind a lock (a stream may end on any thread).
struct SnapshotStreams {
    struct Entry {
        var continuation: AsyncStream<ResultsSnapshot>.Continuation
        /// The IDs of the last snapshot sent.
        var last: [ManagedObjectID]
        var sent = 0
    }
    var nextKey: UInt64 = 0
    var entries: [UInt64: Entry] = [:]
}

/// A weak reference to a controller's state for notification blocks, which run on the posting
/// thread: the context's queue, where the state lives.
private final class StateReference: @unchecked Sendable {  // read only on the context's queue
    weak var state: ResultsState?
    init(_ state: ResultsState) { self.state = state }
}
