import Foundation

/// What a fetch returns (`NSFetchRequestResultType`).
public struct FetchRequestResultType: OptionSet, Sendable, Hashable {
    public let rawValue: UInt
    public init(rawValue: UInt) { self.rawValue = rawValue }
    /// Managed objects (the default for `FetchRequest<ManagedObject>` and subclasses).
    public static let managedObjectResultType = FetchRequestResultType([])
    /// Object IDs (the default for `FetchRequest<ManagedObjectID>`).
    public static let managedObjectIDResultType = FetchRequestResultType(rawValue: 1)
    /// Dictionaries of property values (the default for `FetchRequest<[String: Any]>`).
    public static let dictionaryResultType = FetchRequestResultType(rawValue: 2)
    /// A count (as `[Int]` with one element).
    public static let countResultType = FetchRequestResultType(rawValue: 4)
}

/// A description of what to fetch (`NSFetchRequest`). The generic parameter is the type of the
/// results: `ManagedObject` or a subclass, `ManagedObjectID`, or `[String: Any]`.
///
/// ```swift
/// let request = FetchRequest<ManagedObject>(entityName: "Note")
/// request.predicate = FetchPredicate(format: "title BEGINSWITH[c] %@ AND rank > %d", "h", 3)
/// request.sortDescriptors = [FetchSortDescriptor(key: "rank", ascending: false)]
/// request.fetchLimit = 20
/// let notes = try context.fetch(request)
/// ```
public final class FetchRequest<ResultType>: CustomStringConvertible {
    /// The name of the entity to fetch.
    public var entityName: String?
    /// The entity to fetch (takes precedence over `entityName`).
    public var entity: EntityDescription?
    /// Which objects to fetch; nil for all.
    public var predicate: FetchPredicate?
    /// The order of the results; nil or empty for no particular order.
    public var sortDescriptors: [FetchSortDescriptor]?
    /// The most results to return; 0 for no limit.
    public var fetchLimit: Int = 0
    /// How many matching results to skip.
    public var fetchOffset: Int = 0
    /// With a value above 0, the IDs of all matches are read and the objects are returned as faults
    /// whose rows are loaded one batch of this many at a time, when the first of a batch is used.
    public var fetchBatchSize: Int = 0
    /// What to return; derived from `ResultType` unless set. A value that does not fit `ResultType`
    /// makes the fetch throw ``ObjectGraphError/invalidFetchRequest``.
    public var resultType: FetchRequestResultType
    /// Whether objects of sub-entities are fetched too.
    public var includesSubentities = true
    /// Whether row values are read along with the IDs (filling the row cache for ID results).
    public var includesPropertyValues = true
    /// Whether the context's unsaved inserts, updates and deletes are reflected in the results.
    public var includesPendingChanges = true
    /// Whether objects are returned as faults (their values wait in the row cache until used).
    public var returnsObjectsAsFaults = true
    /// Relationship key paths (`"folder"`, `"notes"`, `"folder.owner"`) whose destinations are fetched
    /// with the results, in one query per key path, rather than one fault at a time.
    public var relationshipKeyPathsForPrefetching: [String]?
    /// For dictionary results: the properties to include (names or `PropertyDescription`s); nil for all attributes.
    public var propertiesToFetch: [Any]?
    /// For dictionary results: whether duplicate dictionaries are dropped.
    public var returnsDistinctResults = false

    /// A request for the named entity.
    public init(entityName: String) {
        self.entityName = entityName
        self.resultType = Self.defaultResultType
    }

    /// A request with no entity yet (set `entityName` or `entity` before fetching).
    public init() {
        self.resultType = Self.defaultResultType
    }

    static var defaultResultType: FetchRequestResultType {
        if ResultType.self == ManagedObjectID.self { return .managedObjectIDResultType }
        if ResultType.self == [String: Any].self || ResultType.self == NSDictionary.self { return .dictionaryResultType }
        if ResultType.self == Int.self || ResultType.self == NSNumber.self { return .countResultType }
        return .managedObjectResultType
    }

    /// The same request for objects (what it matches and in what order: entity, predicate, sort
    /// descriptors, limit, offset, sub-entities), whatever this one's result type.
    var forObjects: FetchRequest<ManagedObject> {
        let request = FetchRequest<ManagedObject>()
        request.entityName = entityName
        request.entity = entity
        request.predicate = predicate
        request.sortDescriptors = sortDescriptors
        request.fetchLimit = fetchLimit
        request.fetchOffset = fetchOffset
        request.includesSubentities = includesSubentities
        return request
    }

    public var description: String {
        var text = "FetchRequest<\(ResultType.self)>(\(entity?.name ?? entityName ?? "no entity")"
        if let predicate { text += ", predicate: \(predicate)" }
        if let sortDescriptors, !sortDescriptors.isEmpty { text += ", sort: \(sortDescriptors.map { "\($0.key) \($0.ascending ? "asc" : "desc")" })" }
        if fetchLimit > 0 { text += ", limit: \(fetchLimit)" }
        return text + ")"
    }
}
