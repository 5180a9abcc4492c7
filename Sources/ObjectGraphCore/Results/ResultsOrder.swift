import Foundation

/// How a fetched results controller orders its objects: by the request's sort descriptors, or, for
/// a request whose list of sort descriptors is empty, by object ID.
///
/// Ordering by object ID puts saved objects in the order of their rows' primary keys (the order
/// they were first saved in) and unsaved objects after them, in the order they were inserted: the
/// same order on every store, where a fetch without sort descriptors may return rows in any order.
struct ResultsOrder {
    private var reader: SortKeyReader
    /// Whether the objects are ordered by object ID (an empty list of sort descriptors).
    let byObjectID: Bool

    init(_ descriptors: [FetchSortDescriptor], byObjectID: Bool) {
        self.reader = SortKeyReader(descriptors)
        self.byObjectID = byObjectID && descriptors.isEmpty
    }

    /// The values `object` is ordered by (none when a key cannot be read: it then orders with
    /// everything the same).
    mutating func values(of object: ManagedObject) -> [Value] {
        if byObjectID { return [.objectID(object.objectID)] }
        return (try? reader.values(of: object)) ?? []
    }

    /// Compares two lists of values from ``values(of:)``.
    func compare(_ a: [Value], _ b: [Value]) -> ComparisonResult {
        guard byObjectID else { return reader.compare(a, b) }
        guard case .objectID(let x)? = a.first, case .objectID(let y)? = b.first else { return .orderedSame }
        return x < y ? .orderedAscending : y < x ? .orderedDescending : .orderedSame
    }

    /// Compares `object` with an object whose values are `keys`, reading only the values it needs.
    mutating func compare(_ object: ManagedObject, _ keys: [Value]) -> ComparisonResult {
        if byObjectID { return compare([.objectID(object.objectID)], keys) }
        return (try? reader.compare(object, keys)) ?? .orderedSame
    }

    /// `objects` in order, objects that compare the same keeping their given order; unchanged
    /// when there is nothing to order by.
    mutating func sorted(_ objects: [ManagedObject]) -> [ManagedObject] {
        if (!byObjectID && reader.descriptors.isEmpty) || objects.count < 2 { return objects }
        let keys = objects.map { values(of: $0) }
        let order = keys.indices.sorted { i, j in
            switch compare(keys[i], keys[j]) {
            case .orderedAscending: true
            case .orderedDescending: false
            case .orderedSame: i < j
            }
        }
        return order.map { objects[$0] }
    }
}
