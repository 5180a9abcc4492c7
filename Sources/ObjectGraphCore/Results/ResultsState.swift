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

    private(set) var entity: EntityDescription?
    private(set) var includesSubentities = true
    private(set) var predicate: FetchPredicate?
    /// The order of the results: the sort descriptors, or object IDs for an empty list.
    private(set) var order = ResultsOrder([], byObjectID: false)
    private(set) var fetchLimit = 0
    private var section: FetchSortDescriptor?
    /// Whether the predicate, a sort or the section key path reads other objects (`folder.name`):
    /// then a change to any other object may move or filter the results.
    private var readsRelatedObjects = false
    /// Whether the delegate implements `controller(_:didChangeContentWith:)`: set before each call
    /// of it, cleared by the protocol's default implementation.
    var delegateTakesDifferences = false
    /// What a merge's `objectsDidChangeNotification` reported (the changed objects of the results'
    /// entity, and their identities), kept for its `didMergeChangesObjectIDsNotification`, which
    /// follows at once: the delegate hears the merge as one change.
    var pendingMerge: (relevant: [ManagedObject], changed: Set<ObjectIdentifier>)?
    private(set) weak var context: ManagedObjectContext?
    private var observers: [any NSObjectProtocol] = []
    private var view: () -> FetchedResultsController<ManagedObject> = { fatalError("ObjectGraph: a FetchedResultsController was used before performFetch()") }
    private var refetch: () throws -> [ManagedObject] = { [] }
    private let streams = Protected(SnapshotStreams())

    /// Sets what the results are; `ordersByObjectID` orders them by object ID when
    /// `sortDescriptors` is empty (see ``ResultsOrder``), rather than keeping the fetch's order.
    func configure(
        entity: EntityDescription, includesSubentities: Bool, predicate: FetchPredicate?,
        sortDescriptors: [FetchSortDescriptor], ordersByObjectID: Bool, fetchLimit: Int, sectionNameKeyPath: String?
    ) {
        self.entity = entity
        self.includesSubentities = includesSubentities
        self.predicate = predicate
        self.order = ResultsOrder(sortDescriptors, byObjectID: ordersByObjectID)
        self.fetchLimit = fetchLimit
        self.section = sectionNameKeyPath.map { FetchSortDescriptor(key: $0) }
        let keys = sortDescriptors.map(\.key) + (sectionNameKeyPath.map { [$0] } ?? [])
        let format = predicate?.predicateFormat ?? ""
        readsRelatedObjects = keys.contains { $0.contains(".") }
            || ["." , "@", "ANY", "ALL", "NONE", "SUBQUERY"].contains { format.localizedCaseInsensitiveContains($0) }
    }

    /// Takes the results of a fetch, without telling the delegate (``FetchedResultsController/performFetch()``).
    func replace(with objects: [ManagedObject]) {
        let objects = ordered(objects)
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
            NotificationCenter.default.addObserver(forName: ManagedObjectContext.didMergeChangesObjectIDsNotification, object: context, queue: nil) { note in
                reference.state?.contextDidMerge(note.userInfo ?? [:])
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
        if info[ManagedObjectContext.NotificationKey.invalidatedAllObjects.rawValue] != nil {
            // reset(): every object is gone; the results are read again.
            return apply(ordered((try? refetch()) ?? []), changed: [], placedAgain: [])
        }
        var relevant: [ManagedObject] = []
        var changed = Set<ObjectIdentifier>()
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
            var order = self.order
            let next = order.sorted((try? refetch()) ?? current)
            return apply(next, changed: changed, movesAreChanges: true)
        }
        guard !relevant.isEmpty else { return }
        if context.isPostingMergeChanges {
            // A merge's report: its ID notification follows at once, and the two are one change.
            pendingMerge = (relevant, changed)
            return
        }
        take(relevant, changed: changed, into: current, context: context)
    }

    /// Takes changed objects into the results and tells the delegate: `relevant` are the changed
    /// objects of the results' entity, `changed` their identities, and `leaving` those whose rows
    /// are gone (deleted by a merged save), which leave the results whatever their state.
    func take(
        _ relevant: [ManagedObject], changed: Set<ObjectIdentifier>, leaving: Set<ObjectIdentifier> = [],
        into current: [ManagedObject], context: ManagedObjectContext
    ) {
        if fetchLimit > 0 {
            // Objects past the limit may move in: only a fetch knows.
            let next = (try? refetch()).map { self.ordered($0) } ?? current.filter { !changed.contains(ObjectIdentifier($0)) }
            return apply(next.filter { !leaving.contains(ObjectIdentifier($0)) }, changed: changed)
        }
        // Objects merged from another context's save are faults: one read of the store fills them
        // all, rather than one each as the predicate and the sort read them.
        context.fulfillFaults(relevant.filter {
            $0.isFault && $0.managedObjectContext === context && !$0.isDeleted && !leaving.contains(ObjectIdentifier($0))
        })
        let members = relevant.filter { !leaving.contains(ObjectIdentifier($0)) && belongs($0, to: context) }
        let merge = merging(members, changed: changed, into: current)
        if section == nil { return apply(merge, from: current) }
        apply(merge.objects, changed: changed, placedAgain: merge.placedAgain)
    }

    /// Whether a changed object is in the results: alive in the context, not deleted, matching.
    private func belongs(_ object: ManagedObject, to context: ManagedObjectContext) -> Bool {
        guard object.managedObjectContext === context, !object.isDeleted else { return false }
        guard let predicate else { return true }
        return (try? object.matches(predicate)) ?? false
    }

    /// The results of a fetch in the controller's order: as fetched, unless they are ordered by
    /// object ID (then sorted here, whatever order the store returned them in).
    func ordered(_ fetched: [ManagedObject]) -> [ManagedObject] {
        guard order.byObjectID else { return fetched }
        var order = self.order
        return order.sorted(fetched)
    }

    /// Takes the results of `merging(_:changed:into:)` without sections: what changed is
    /// read from the merge (work in proportion to the changed objects, plus copying the list).
    ///
    /// Changed objects that stayed in place are updates, at their old index path and their new one;
    /// those merged in again are moves; they and the deleted and inserted objects make the difference.
    private func apply(_ merge: ResultsMerge, from oldObjects: [ManagedObject]) {
        guard sections != nil else { return }
        var newIndex: [ObjectIdentifier: Int] = [:]
        for (index, object) in merge.inserted { newIndex[ObjectIdentifier(object)] = index }

        var changes = Changes()
        if oldObjects.isEmpty != merge.objects.isEmpty {
            changes.sections = oldObjects.isEmpty
                ? [(makeSections(merge.objects)[0], 0, .insert)]
                : [(ResultsSection(name: "", indexTitle: nil, managedObjects: []), 0, .delete)]
        }
        func path(_ item: Int) -> IndexPath { IndexPath(item: item, section: 0) }
        // In the old order: the objects that left or took another place, and those updated in place.
        var removed = merge.removed[...], updated = merge.updated[...]
        while let next = removed.first.map({ $0.index }) ?? updated.first.map({ $0.old }) {
            if let update = updated.first, update.old <= next {
                changes.objects.append((update.object, path(update.old), .update, path(update.new)))
                updated.removeFirst()
            } else if let gone = removed.popFirst() {
                let new = newIndex[ObjectIdentifier(gone.object)]
                changes.objects.append((gone.object, path(gone.index), new == nil ? .delete : .move, new.map(path)))
            }
        }
        for (index, object) in merge.inserted where !merge.placedAgain.contains(ObjectIdentifier(object)) {
            changes.objects.append((object, nil, .insert, path(index)))
        }
        guard !changes.sections.isEmpty || !changes.objects.isEmpty else { return }
        changes.difference = {
            // Removed: the deleted objects and those merged in again; inserted: the new ones and
            // those. An object updated in place is no change of the list.
            var steps: [CollectionDifference<ManagedObjectID>.Change] = []
            for (index, object) in merge.removed {
                steps.append(.remove(offset: index, element: object.objectID, associatedWith: nil))
            }
            for (index, object) in merge.inserted {
                steps.append(.insert(offset: index, element: object.objectID, associatedWith: nil))
            }
            return CollectionDifference(steps) ?? merge.objects.map(\.objectID).difference(from: oldObjects.map(\.objectID))
        }
        tell(changes, next: merge.objects, sections: makeSections(merge.objects))
    }

    /// Takes new results, telling the delegate what changed.
    ///
    /// A changed object that is in the old and the new results is a move when it took another
    /// place (`placedAgain`, or found by ``displaced(from:to:changed:sectionChanged:)`` when nil) or
    /// another section, and otherwise an update at its old and its new index path. With
    /// `movesAreChanges`, an unchanged object that took another place among the others is a move too.
    private func apply(
        _ next: [ManagedObject], changed: Set<ObjectIdentifier>, placedAgain: Set<ObjectIdentifier>? = nil, movesAreChanges: Bool = false
    ) {
        guard let oldObjects = objects, let oldSections = sections else { return }
        let newSections = makeSections(next)
        let oldPaths = paths(oldSections), newPaths = paths(newSections)
        func sectionChanged(_ id: ObjectIdentifier) -> Bool {
            guard let old = oldPaths[id], let new = newPaths[id] else { return false }
            return oldSections[old.section].name != newSections[new.section].name
        }
        let moves = placedAgain.map { (placedAgain: $0, shifted: Set<ObjectIdentifier>()) }
            ?? displaced(from: oldObjects, to: next, changed: changed, sectionChanged: sectionChanged)

        var changes = Changes()
        let oldNames = Set(oldSections.map(\.name)), newNames = Set(newSections.map(\.name))
        for (index, section) in oldSections.enumerated() where !newNames.contains(section.name) {
            // As in Core Data, a deleted section has no objects left.
            changes.sections.append((ResultsSection(name: section.name, indexTitle: section.indexTitle, managedObjects: []), index, .delete))
        }
        for (index, section) in newSections.enumerated() where !oldNames.contains(section.name) { changes.sections.append((section, index, .insert)) }

        for object in oldObjects {
            let id = ObjectIdentifier(object)
            guard let old = oldPaths[id] else { continue }
            guard let new = newPaths[id] else {
                changes.objects.append((object, old, .delete, nil))
                continue
            }
            if moves.placedAgain.contains(id) || (changed.contains(id) && sectionChanged(id)) || (movesAreChanges && moves.shifted.contains(id)) {
                changes.objects.append((object, old, .move, new))
            } else if changed.contains(id) {
                changes.objects.append((object, old, .update, new))
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
