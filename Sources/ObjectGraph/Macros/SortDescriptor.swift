import Foundation

/// How to order fetched objects by one key path of a `@Managed` class, SwiftData style.
///
/// ```swift
/// let descriptor = FetchDescriptor<Note>(sortBy: [SortDescriptor(\.rank, order: .reverse), SortDescriptor(\.title)])
/// ```
///
/// Foundation's `SortDescriptor` needs `NSObject` subclasses on Linux (and on Apple's systems its
/// key-path initializers do too), so ObjectGraph has its own, with the same spelling. Written as
/// an element of `sortBy:` it needs no qualification; a declaration that names the type where
/// Foundation is also imported writes `ObjectGraph.SortDescriptor<Note>`.
///
/// The key path names a stored property of the class (an attribute, or a to-one relationship,
/// which orders by the destination's row). To sort by a key path through a to-one relationship,
/// use ``FetchSortDescriptor`` with a dotted key (`"folder.name"`), which ``FetchDescriptor``
/// also takes.
public struct SortDescriptor<Compared>: @unchecked Sendable {  // key paths without captures are immutable values
    /// The key path to order by.
    public let keyPath: PartialKeyPath<Compared>
    /// Smallest first (`.forward`) or largest first (`.reverse`).
    public var order: SortOrder
    /// Whether strings compare without regard to case.
    let caseInsensitive: Bool

    /// Orders by a comparable property.
    ///
    /// ```swift
    /// SortDescriptor(\Note.rank, order: .reverse)
    /// ```
    public init<Value: Comparable>(_ keyPath: KeyPath<Compared, Value>, order: SortOrder = .forward) where Compared: ManagedObject {
        self.keyPath = keyPath
        self.order = order
        self.caseInsensitive = false
    }

    /// Orders by an optional comparable property; nil comes first in `.forward` order.
    ///
    /// ```swift
    /// SortDescriptor(\Note.created)
    /// ```
    public init<Value: Comparable>(_ keyPath: KeyPath<Compared, Value?>, order: SortOrder = .forward) where Compared: ManagedObject {
        self.keyPath = keyPath
        self.order = order
        self.caseInsensitive = false
    }

    /// Orders by a string property with a standard string comparator: `.lexical` compares code
    /// points, `.localized` (and `.localizedStandard` where Foundation has it) compare the case-folded strings (the closest a
    /// store's `ORDER BY` comes to them).
    ///
    /// ```swift
    /// SortDescriptor(\Note.title, comparator: .localized)
    /// ```
    public init(_ keyPath: KeyPath<Compared, String>, comparator: String.StandardComparator, order: SortOrder = .forward)
    where Compared: ManagedObject {
        self.keyPath = keyPath
        self.order = order
        self.caseInsensitive = comparator != .lexical
    }

    /// Orders by a to-one relationship: by the destination's row, nil first in `.forward` order.
    public init<Destination: ManagedObject>(_ keyPath: KeyPath<Compared, Destination?>, order: SortOrder = .forward)
    where Compared: ManagedObject {
        self.keyPath = keyPath
        self.order = order
        self.caseInsensitive = false
    }

    /// The same ordering as a ``FetchSortDescriptor``, whose key is the property's name.
    ///
    /// - Throws: ``ObjectGraphError/invalidFetchRequest`` when the key path is not a stored
    ///   property of a `@Managed` class (a computed or `@Transient` property, or a key path of
    ///   several components).
    public func fetchSortDescriptor() throws -> FetchSortDescriptor {
        guard let model = Compared.self as? any ManagedModel.Type, let name = model._managedPropertyName(for: keyPath) else {
            throw ObjectGraphError(
                .invalidFetchRequest,
                "Sort key path \(keyPath) is not a stored property of a @Managed class; sort through relationships with FetchSortDescriptor(key: \"relationship.property\")",
                entityName: String(describing: Compared.self))
        }
        return FetchSortDescriptor(key: name, ascending: order == .forward, caseInsensitive: caseInsensitive)
    }
}
