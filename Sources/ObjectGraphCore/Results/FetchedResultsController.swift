import Foundation

/// The results of a fetch request that follow the context's changes, in sections
/// (`NSFetchedResultsController`).
///
/// ```swift
/// let request = FetchRequest<ManagedObject>(entityName: "Note")
/// request.sortDescriptors = [FetchSortDescriptor(key: "folder.name"), FetchSortDescriptor(key: "rank")]
/// let controller = FetchedResultsController(fetchRequest: request, managedObjectContext: context,
///                                           sectionNameKeyPath: "folder.name")
/// controller.delegate = tableUpdater
/// try controller.performFetch()
/// let first = controller.object(at: IndexPath(item: 0, section: 0))
/// ```
///
/// After ``performFetch()``, every change the context reports — its own changes at
/// `processPendingChanges()`, merges of other contexts' saves, refreshes — updates ``fetchedObjects``
/// and ``sections`` and reaches the ``delegate`` as inserts, deletes, moves and updates, and each of
/// ``snapshots`` as a new ``ResultsSnapshot``. See <doc:FetchedResults>.
///
/// Like its context's objects, a controller belongs to the context's queue: create it, fetch and
/// read it there. It is a programmer error to use it elsewhere.
public final class FetchedResultsController<ResultType: ManagedObject> {
    /// The request whose results the controller keeps: it needs a list of sort descriptors (the
    /// first one by the section key path when there are sections), which may be empty.
    public let fetchRequest: FetchRequest<ResultType>
    /// The context the results belong to.
    public let managedObjectContext: ManagedObjectContext
    /// The key path (dotted through to-one relationships) whose value names each object's section;
    /// nil for one section.
    public let sectionNameKeyPath: String?
    /// Core Data's cache name. ObjectGraph keeps no cache on disk; the name is kept for source
    /// compatibility.
    public let cacheName: String?
    /// Receives the changes of the results.
    public weak var delegate: (any FetchedResultsControllerDelegate)? {
        get { state.delegate }
        set { state.delegate = newValue }
    }

    /// The results, shared with the untyped view a delegate receives.
    let state: ResultsState
    /// For `results(for:)`: without sort descriptors (nil or empty) the fetch's order is kept, and
    /// objects that enter the results go last.
    var allowsUnsortedResults = false

    /// Creates a controller; nothing is fetched until ``performFetch()``.
    public init(
        fetchRequest: FetchRequest<ResultType>, managedObjectContext: ManagedObjectContext,
        sectionNameKeyPath: String? = nil, cacheName: String? = nil
    ) {
        self.fetchRequest = fetchRequest
        self.managedObjectContext = managedObjectContext
        self.sectionNameKeyPath = sectionNameKeyPath
        self.cacheName = cacheName
        self.state = ResultsState()
    }

    /// The untyped view of a controller: the same request, context and results.
    init(viewOf state: ResultsState, request: FetchRequest<ResultType>, context: ManagedObjectContext, sectionNameKeyPath: String?, cacheName: String?) {
        self.fetchRequest = request
        self.managedObjectContext = context
        self.sectionNameKeyPath = sectionNameKeyPath
        self.cacheName = cacheName
        self.state = state
    }

    deinit {
        if state.owner == ObjectIdentifier(self) { state.stop() }
    }

    // MARK: - Fetching

    /// Fetches the results and starts following the context's changes.
    ///
    /// With an empty list of sort descriptors (`request.sortDescriptors = []`), the results are in
    /// object ID order, the same on every store: saved objects in the order of their rows' primary
    /// keys (the order they were first saved in), then unsaved ones in the order they were
    /// inserted; an object that enters the results takes its place in that order.
    ///
    /// - Throws: ``ObjectGraphError/invalidFetchRequest`` when the request has no sort descriptors
    ///   (`sortDescriptors` is nil), and whatever the fetch throws.
    public func performFetch() throws {
        managedObjectContext.assertOnQueue("FetchedResultsController.performFetch()")
        let descriptors = fetchRequest.sortDescriptors ?? []
        guard fetchRequest.sortDescriptors != nil || allowsUnsortedResults else {
            throw ObjectGraphError(
                .invalidFetchRequest,
                "A FetchedResultsController needs a fetch request with sort descriptors (entity \(fetchRequest.entityName ?? fetchRequest.entity?.name ?? "unknown"))",
                entityName: fetchRequest.entityName ?? fetchRequest.entity?.name)
        }
        let objects: [ManagedObject] = try managedObjectContext.fetch(fetchRequest)
        let entity = try resolvedEntity()
        state.owner = ObjectIdentifier(self)
        state.configure(
            entity: entity, includesSubentities: fetchRequest.includesSubentities, predicate: fetchRequest.predicate,
            sortDescriptors: descriptors, ordersByObjectID: !allowsUnsortedResults, fetchLimit: fetchRequest.fetchLimit,
            sectionNameKeyPath: sectionNameKeyPath)
        state.replace(with: objects)
        state.follow(
            managedObjectContext, view: { [unowned self] in self.untypedView },
            refetch: { [unowned self] in try self.managedObjectContext.fetch(self.fetchRequest) })
    }

    private func resolvedEntity() throws -> EntityDescription {
        if let entity = fetchRequest.entity { return entity }
        guard let name = fetchRequest.entityName, let entity = managedObjectContext.model?.entitiesByName[name] else {
            throw ObjectGraphError(.invalidFetchRequest, "The fetch request names no entity of the context's model", entityName: fetchRequest.entityName)
        }
        return entity
    }

    /// This controller as its delegate sees it: `FetchedResultsController<ManagedObject>`.
    var untypedView: FetchedResultsController<ManagedObject> {
        if let untyped = self as? FetchedResultsController<ManagedObject> { return untyped }
        return FetchedResultsController<ManagedObject>(
            viewOf: state, request: fetchRequest.forObjects, context: managedObjectContext, sectionNameKeyPath: sectionNameKeyPath, cacheName: cacheName)
    }

    // MARK: - Results

    /// The objects, section after section; nil before ``performFetch()``.
    public var fetchedObjects: [ResultType]? {
        state.objects.map { $0.map { unsafeDowncast($0, to: ResultType.self) } }
    }

    /// The sections, in order; nil before ``performFetch()``.
    public var sections: [any FetchedResultsSectionInfo]? { state.sections }

    /// The object at an index path.
    ///
    /// It is a programmer error to pass an index path outside the results.
    public func object(at indexPath: IndexPath) -> ResultType {
        guard let sections = state.sections, sections.indices.contains(indexPath.section),
              sections[indexPath.section].managedObjects.indices.contains(indexPath.item) else {
            fatalError("FetchedResultsController: no object at \(indexPath) (\(state.sections?.count ?? 0) sections)")
        }
        return unsafeDowncast(sections[indexPath.section].managedObjects[indexPath.item], to: ResultType.self)
    }

    /// The index path of an object, or nil when it is not in the results.
    public func indexPath(forObject object: ResultType) -> IndexPath? {
        state.indexPath(of: object)
    }

    /// The index titles of the sections, without repeats, in order.
    public var sectionIndexTitles: [String] {
        var seen = Set<String>()
        return (state.sections ?? []).compactMap(\.indexTitle).filter { seen.insert($0).inserted }
    }

    /// The index title of a section name: its first letter, capitalized (Core Data's default).
    public func sectionIndexTitle(forSectionName sectionName: String) -> String? {
        sectionName.first.map { String($0).uppercased() }
    }

    /// The section of an index title: the first section with that title, or `sectionIndex` when
    /// none has it.
    public func section(forSectionIndexTitle title: String, at sectionIndex: Int) -> Int {
        (state.sections ?? []).firstIndex { $0.indexTitle == title } ?? sectionIndex
    }

    /// Core Data deletes a controller's cache file; ObjectGraph keeps none, so there is nothing to do.
    public static func deleteCache(withName name: String?) {}

    // MARK: - Snapshots

    /// The results as values, now and after every change: a new stream on each access, whose first
    /// element is the current results (once fetched). It ends when the controller goes away.
    ///
    /// ```swift
    /// for await snapshot in controller.snapshots { render(snapshot.sections) }
    /// ```
    public var snapshots: AsyncStream<ResultsSnapshot> {
        state.makeSnapshotStream()
    }
}
