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
        for descriptor in descriptors {
            let order = descriptor.compare(try descriptor.sortValue(of: a), try descriptor.sortValue(of: b))
            if order != .orderedSame { return order }
        }
        return .orderedSame
    }

    /// Sorts `elements` by `descriptors`, keeping the given order of elements that compare the
    /// same. Each element's sort values are read once.
    ///
    /// - Parameter subject: the subject each element is evaluated as.
    /// - Throws: ``ObjectGraphError/invalidFetchRequest`` when a key is unknown or to-many.
    static func sorted<Element>(
        _ elements: [Element], by descriptors: [FetchSortDescriptor], subject: (Element) -> any PredicateSubject
    ) throws -> [Element] {
        if descriptors.isEmpty || elements.count < 2 { return elements }
        let keys: [[Value]] = try elements.map { element in
            let s = subject(element)
            return try descriptors.map { try $0.sortValue(of: s) }
        }
        let order = keys.indices.sorted { i, j in
            for (n, descriptor) in descriptors.enumerated() {
                switch descriptor.compare(keys[i][n], keys[j][n]) {
                case .orderedAscending: return true
                case .orderedDescending: return false
                case .orderedSame: continue
                }
            }
            return i < j
        }
        return order.map { elements[$0] }
    }
}
