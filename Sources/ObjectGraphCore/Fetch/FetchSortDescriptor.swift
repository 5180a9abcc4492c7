import Foundation

/// How to order fetched objects by one key (`NSSortDescriptor`).
///
/// ```swift
/// request.sortDescriptors = [
///     FetchSortDescriptor(key: "folder.name"),
///     FetchSortDescriptor(key: "rank", ascending: false),
///     FetchSortDescriptor(key: "title", ascending: true, caseInsensitive: true),
/// ]
/// ```
///
/// The key may be a key path through to-one relationships. Ordering is the same on every store:
/// nil first when ascending (last when descending), numbers numerically (decimals included),
/// dates by time, strings by Unicode code point (SQLite's BINARY order) or, when
/// `caseInsensitive`, by their case-folded form; a relationship orders by its destination's row.
/// A key that is unknown to the fetched entity, or that crosses a to-many relationship, makes the
/// fetch throw ``ObjectGraphError/invalidFetchRequest``.
public struct FetchSortDescriptor: Sendable, Hashable, CustomStringConvertible {
    /// The key path to order by, such as `"rank"` or `"folder.name"`.
    public let key: String
    /// Whether smaller values come first.
    public let ascending: Bool
    /// Whether strings are compared without regard to case (Core Data's `caseInsensitiveCompare:`).
    public let caseInsensitive: Bool

    /// Orders by `key`, smallest first unless `ascending` is false.
    ///
    /// ```swift
    /// FetchSortDescriptor(key: "rank", ascending: false)
    /// ```
    public init(key: String, ascending: Bool = true) {
        self.init(key: key, ascending: ascending, caseInsensitive: false)
    }

    /// Orders by `key`, comparing strings without regard to case when `caseInsensitive`.
    ///
    /// ```swift
    /// FetchSortDescriptor(key: "title", ascending: true, caseInsensitive: true)
    /// ```
    public init(key: String, ascending: Bool, caseInsensitive: Bool) {
        self.key = key
        self.ascending = ascending
        self.caseInsensitive = caseInsensitive
    }

    /// The same descriptor in the opposite direction.
    ///
    /// ```swift
    /// FetchSortDescriptor(key: "rank").reversedSortDescriptor.ascending   // false
    /// ```
    public var reversedSortDescriptor: FetchSortDescriptor {
        FetchSortDescriptor(key: key, ascending: !ascending, caseInsensitive: caseInsensitive)
    }

    public var description: String {
        "(\(key), \(ascending ? "ascending" : "descending")\(caseInsensitive ? ", caseInsensitiveCompare:" : ""))"
    }

    /// The key path's components.
    var keyPathComponents: [String] {
        key.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
    }

    /// Checks the key path against `entity`: it must exist and go through to-one relationships only.
    ///
    /// - Throws: ``ObjectGraphError/invalidFetchRequest`` naming the entity and the key.
    func analyzedKeyPath(from entity: EntityDescription) throws -> AnalyzedKeyPath {
        let components = keyPathComponents
        if key.isEmpty || components.contains(where: \.isEmpty) {
            throw ObjectGraphError(
                .invalidFetchRequest, "Sort key '\(key)' of a fetch of '\(entity.name)' is not a key path",
                entityName: entity.name, key: key)
        }
        let path = try AnalyzedKeyPath(components, from: entity)
        if path.toManyIndex != nil {
            throw ObjectGraphError(
                .invalidFetchRequest,
                "Sort key '\(key)' of a fetch of '\(entity.name)' goes through a to-many relationship; only to-one relationships may be sorted by",
                entityName: entity.name, key: key)
        }
        return path
    }

    // MARK: - In memory

    /// The value `subject` sorts by.
    ///
    /// - Throws: ``ObjectGraphError/invalidFetchRequest`` when the key is unknown or to-many.
    func sortValue(of subject: any PredicateSubject) throws -> Value {
        let path = try analyzedKeyPath(from: subject.predicateEntity)
        guard case .scalar(let value) = try PredicateEvaluator.values(of: path, from: subject) else { return .null }
        return value
    }

    /// Compares two sort values as SQLite's ORDER BY does for this descriptor.
    func compare(_ x: Value, _ y: Value) -> ComparisonResult {
        let order: ComparisonResult
        switch (x, y) {
        case (.objectID(let a), .objectID(let b)):
            order = a == b ? .orderedSame : a < b ? .orderedAscending : .orderedDescending
        default:
            order = Value.compare(x, y, caseInsensitive: caseInsensitive) ?? .orderedSame
        }
        if ascending || order == .orderedSame { return order }
        return order == .orderedAscending ? .orderedDescending : .orderedAscending
    }

    /// Compares two subjects by a list of descriptors: the first that tells them apart decides.
    ///
    /// - Throws: ``ObjectGraphError/invalidFetchRequest`` when a key is unknown or to-many.
    static func compare(
        _ a: any PredicateSubject, _ b: any PredicateSubject, by descriptors: [FetchSortDescriptor]
    ) throws -> ComparisonResult {
        var reader = SortKeyReader(descriptors)
        let keys = try reader.values(of: b)
        return try reader.compare(a, keys)
    }

    /// Sorts `elements` by `descriptors`, keeping the given order of elements that compare the
    /// same. Each element's sort values are read once, and each key path is checked once per entity.
    ///
    /// - Parameter subject: the subject each element is evaluated as.
    /// - Throws: ``ObjectGraphError/invalidFetchRequest`` when a key is unknown or to-many.
    static func sorted<Element>(
        _ elements: [Element], by descriptors: [FetchSortDescriptor], subject: (Element) -> any PredicateSubject
    ) throws -> [Element] {
        if descriptors.isEmpty || elements.count < 2 { return elements }
        var reader = SortKeyReader(descriptors)
        let keys: [[Value]] = try elements.map { try reader.values(of: subject($0)) }
        let order = keys.indices.sorted { i, j in
            switch reader.compare(keys[i], keys[j]) {
            case .orderedAscending: true
            case .orderedDescending: false
            case .orderedSame: i < j
            }
        }
        return order.map { elements[$0] }
    }
}

/// Reads and compares objects' sort values for a list of descriptors, checking each key path
/// against an entity once rather than at every comparison (a controller's merge compares the
/// changed objects with thousands of others).
struct SortKeyReader {
    let descriptors: [FetchSortDescriptor]
    /// The analyzed key paths, one per descriptor, by the entity they start from.
    private var paths: [ObjectIdentifier: [AnalyzedKeyPath]] = [:]
    /// The last entity looked up and its paths (the results are usually of one entity).
    private var last: (entity: ObjectIdentifier, paths: [AnalyzedKeyPath])?
    /// For the last entity, the index of each descriptor's attribute when the key is an attribute
    /// of the object itself (the usual sort key), read in place by `value(_:of:)`.
    private var ownAttributes: [Int?] = []
    private var ownAttributesEntity: ObjectIdentifier?

    init(_ descriptors: [FetchSortDescriptor]) {
        self.descriptors = descriptors
    }

    private mutating func paths(for entity: EntityDescription) throws -> [AnalyzedKeyPath] {
        let key = ObjectIdentifier(entity)
        if let last, last.entity == key { return last.paths }
        let found = try paths[key] ?? descriptors.map { try $0.analyzedKeyPath(from: entity) }
        paths[key] = found
        last = (key, found)
        ownAttributesEntity = key
        ownAttributes = found.map { path in
            guard path.steps.count == 1, case .attribute(let attribute) = path.steps[0],
                  attribute.attributeType != .transformable else { return nil }
            return attribute.index
        }
        return found
    }

    /// The value `object` sorts by for the descriptor at `index`: an attribute of its own is read
    /// in place, without copying the analyzed key path or looking the key up by name.
    ///
    /// - Throws: ``ObjectGraphError/invalidFetchRequest`` when the key is unknown or to-many.
    mutating func value(_ index: Int, of object: ManagedObject) throws -> Value {
        if ownAttributesEntity == ObjectIdentifier(object.entity), let attribute = ownAttributes[index] {
            object.fireFaultIfNeeded()
            if attribute < object.values.count { return object.values[attribute] }
        }
        return try value(index, of: object as any PredicateSubject)
    }

    /// Compares `object` with an object whose sort values are `keys`, reading only the values it
    /// needs.
    ///
    /// - Throws: ``ObjectGraphError/invalidFetchRequest`` when a key is unknown or to-many.
    mutating func compare(_ object: ManagedObject, _ keys: [Value]) throws -> ComparisonResult {
        for (index, descriptor) in descriptors.enumerated() where index < keys.count {
            let order = descriptor.compare(try value(index, of: object), keys[index])
            if order != .orderedSame { return order }
        }
        return .orderedSame
    }

    /// The value `subject` sorts by for the descriptor at `index`.
    ///
    /// - Throws: ``ObjectGraphError/invalidFetchRequest`` when the key is unknown or to-many.
    mutating func value(_ index: Int, of subject: any PredicateSubject) throws -> Value {
        let path = try paths(for: subject.predicateEntity)[index]
        if path.steps.count == 1, case .attribute(let attribute) = path.steps[0], attribute.attributeType != .transformable,
           let object = subject as? ManagedObject {
            // An object's own attribute (the usual sort key): read in place, without the key's lookup by name.
            object.fireFaultIfNeeded()
            if attribute.index < object.values.count { return object.values[attribute.index] }
        }
        guard case .scalar(let value) = try PredicateEvaluator.values(of: path, from: subject) else { return .null }
        return value
    }

    /// The values `subject` sorts by, one per descriptor.
    ///
    /// - Throws: ``ObjectGraphError/invalidFetchRequest`` when a key is unknown or to-many.
    mutating func values(of subject: any PredicateSubject) throws -> [Value] {
        try descriptors.indices.map { try value($0, of: subject) }
    }

    /// Compares `subject` with an object whose sort values are `keys`, reading only the values
    /// it needs.
    ///
    /// - Throws: ``ObjectGraphError/invalidFetchRequest`` when a key is unknown or to-many.
    mutating func compare(_ subject: any PredicateSubject, _ keys: [Value]) throws -> ComparisonResult {
        for (index, descriptor) in descriptors.enumerated() where index < keys.count {
            let order = descriptor.compare(try value(index, of: subject), keys[index])
            if order != .orderedSame { return order }
        }
        return .orderedSame
    }

    /// Compares two lists of sort values: the first descriptor that tells them apart decides.
    func compare(_ a: [Value], _ b: [Value]) -> ComparisonResult {
        for (index, descriptor) in descriptors.enumerated() where index < a.count && index < b.count {
            let order = descriptor.compare(a[index], b[index])
            if order != .orderedSame { return order }
        }
        return .orderedSame
    }
}
