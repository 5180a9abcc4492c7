import Foundation

/// A typed description of a fetch of a `@Managed` class, SwiftData style.
///
/// ```swift
/// let top: [Note] = try context.fetch(FetchDescriptor<Note>(
///     predicate: #Predicate { $0.rank > 3 && $0.folder?.name == "Inbox" },
///     sortBy: [SortDescriptor(\.rank, order: .reverse)]))
/// ```
///
/// The predicate is translated to the same conditions as a ``FetchPredicate`` format, so it runs
/// as SQL on an SQLite store and in memory on the other stores and over unsaved changes, with
/// Swift's semantics on every store.
///
/// `sortBy` takes Foundation's `SortDescriptor<T>` (ObjectGraph declares no type of that name,
/// so `[SortDescriptor<Note>]` needs no qualification where Foundation is imported). Each orders
/// by the key its key path names, as ``FetchSortDescriptor`` does: an attribute, or one reached
/// through to-one relationships (`SortDescriptor(\.folder?.name)` is the key `"folder.name"`); see
/// `SortDescriptor/fetchSortDescriptor()`. To order by a to-one relationship itself (by its
/// destination's row), which Foundation's initializers cannot name, use
/// `FetchSortDescriptor(key: "folder")`, in ``sortDescriptors`` or as the `sortBy:` of the
/// initializer that takes ``FetchSortDescriptor``s.
///
/// A descriptor is a value that may cross queues (build it on one, fetch with it on another).
public struct FetchDescriptor<T: ManagedObject>: @unchecked Sendable {  // immutable key paths of stored properties; Predicate is Sendable
    /// Which objects to fetch; nil for all.
    public var predicate: Predicate<T>?
    /// The order of the results: Foundation's sort descriptors, each by a key path of a stored
    /// property or through to-one relationships to one.
    public var sortBy: [SortDescriptor<T>]
    /// Orderings by key, applied after ``sortBy``; keys may go through to-one relationships (`"folder.name"`).
    public var sortDescriptors: [FetchSortDescriptor]
    /// The most objects to return; nil for no limit.
    public var fetchLimit: Int?
    /// How many matching objects to skip.
    public var fetchOffset: Int?
    /// Whether unsaved inserts, updates and deletes of the context are reflected.
    public var includePendingChanges: Bool = true
    /// The properties to load with the objects (all when empty). ObjectGraph loads whole rows, so
    /// this only checks that the key paths are stored properties, or key paths through to-one
    /// relationships to them.
    public var propertiesToFetch: [PartialKeyPath<T>] = []
    /// Relationships whose destinations are fetched with the results, one query per relationship;
    /// a key path through to-one relationships (`\Note.folder?.parent`) fetches each level.
    public var relationshipKeyPathsForPrefetching: [PartialKeyPath<T>] = []

    /// A fetch of the objects of `T` that match `predicate`, in the order of `sortBy`.
    ///
    /// ```swift
    /// let sorts: [SortDescriptor<Note>] = [SortDescriptor(\.rank, order: .reverse), SortDescriptor(\.title, comparator: .lexical)]
    /// let descriptor = FetchDescriptor<Note>(predicate: #Predicate { $0.rank > 3 }, sortBy: sorts)
    /// ```
    public init(predicate: Predicate<T>? = nil, sortBy: [SortDescriptor<T>] = []) {
        self.predicate = predicate
        self.sortBy = sortBy
        self.sortDescriptors = []
    }

    /// A fetch of the objects of `T` that match `predicate`, ordered by keys (which may go
    /// through to-one relationships).
    ///
    /// ```swift
    /// FetchDescriptor<Note>(sortBy: [FetchSortDescriptor(key: "folder.name"), FetchSortDescriptor(key: "rank", ascending: false)])
    /// ```
    public init(predicate: Predicate<T>? = nil, sortBy: [FetchSortDescriptor]) {
        self.predicate = predicate
        self.sortBy = []
        self.sortDescriptors = sortBy
    }

    /// The equivalent ``FetchRequest``, for `entityName`.
    ///
    /// - Throws: ``ObjectGraphError/unsupported`` naming a predicate node that cannot be
    ///   translated; ``ObjectGraphError/invalidFetchRequest`` for a key path that is not a stored
    ///   property, or a sort descriptor without a key path.
    func fetchRequest<Result>(entityName: String, as _: Result.Type) throws -> FetchRequest<Result> {
        let request = FetchRequest<Result>(entityName: entityName)
        if let predicate { request.predicate = try FetchPredicate(translating: predicate) }
        let sorts = try sortBy.map { try $0.fetchSortDescriptor() } + sortDescriptors
        if !sorts.isEmpty { request.sortDescriptors = sorts }
        if let fetchLimit { request.fetchLimit = fetchLimit }
        if let fetchOffset { request.fetchOffset = fetchOffset }
        request.includesPendingChanges = includePendingChanges
        if !relationshipKeyPathsForPrefetching.isEmpty {
            request.relationshipKeyPathsForPrefetching = try relationshipKeyPathsForPrefetching.map { try Self.name(of: $0, role: "prefetch") }
        }
        if !propertiesToFetch.isEmpty {
            request.propertiesToFetch = try propertiesToFetch.map { try Self.name(of: $0, role: "fetch") }
        }
        return request
    }

    /// The key a key path of `T` names: a stored property's name, or the dotted path to one
    /// through to-one relationships (`\Note.folder?.parent` is `"folder.parent"`).
    ///
    /// - Throws: ``ObjectGraphError/invalidFetchRequest`` naming the class and `role` otherwise.
    static func name(of keyPath: PartialKeyPath<T>, role: String) throws -> String {
        guard let model = T.self as? any ManagedModel.Type, let key = ManagedSchema.key(for: keyPath, in: model) else {
            throw ObjectGraphError(
                .invalidFetchRequest,
                "Key path \(keyPath) to \(role) is neither a stored property of @Managed class \(T.self) nor a key path through at most "
                    + "\(ManagedSchema.maximumRelationshipHops) to-one relationships to one",
                entityName: String(describing: T.self))
        }
        return key
    }
}

extension ManagedObjectContext {
    /// Fetches the objects a descriptor describes.
    ///
    /// ```swift
    /// let notes = try context.fetch(FetchDescriptor<Note>(predicate: #Predicate { $0.rank > 3 }))
    /// ```
    ///
    /// - Throws: ``ObjectGraphError/unsupported`` naming a predicate node that cannot be
    ///   translated; otherwise as ``fetch(_:)-(FetchRequest<T>)``.
    public func fetch<T: ManagedObject>(_ descriptor: FetchDescriptor<T>) throws -> [T] {
        try fetch(descriptor.fetchRequest(entityName: try entityName(for: T.self), as: T.self))
    }

    /// The number of objects a descriptor would fetch (honouring its limit and offset).
    ///
    /// - Throws: as ``fetch(_:)-(FetchDescriptor<T>)``.
    public func fetchCount<T: ManagedObject>(_ descriptor: FetchDescriptor<T>) throws -> Int {
        try count(for: descriptor.fetchRequest(entityName: try entityName(for: T.self), as: T.self))
    }

    /// The IDs of the objects a descriptor would fetch, reading their rows into the row cache.
    ///
    /// - Throws: as ``fetch(_:)-(FetchDescriptor<T>)``.
    public func fetchIdentifiers<T: ManagedObject>(_ descriptor: FetchDescriptor<T>) throws -> [ManagedObjectID] {
        try fetch(descriptor.fetchRequest(entityName: try entityName(for: T.self), as: ManagedObjectID.self))
    }

    /// The entity whose class is `type` in this context's model.
    func entityName(for type: ManagedObject.Type) throws -> String {
        guard let model else { throw ObjectGraphError(.noPersistentStore, "Context '\(debugName)' has no coordinator") }
        if let managed = type as? any ManagedModel.Type, let entity = model.entitiesByName[managed._managedSchema.entityName],
           entity.managedObjectClass == type {
            return entity.name
        }
        guard let entity = model.entities.first(where: { $0.managedObjectClass == type }) else {
            throw ObjectGraphError(.invalidFetchRequest, "The model has no entity whose class is \(type)", entityName: String(describing: type))
        }
        return entity.name
    }
}
