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
/// which orders by the destination's row), or goes through to-one relationships to one, optional
/// or required, up to four of them:
///
/// ```swift
/// SortDescriptor(\Note.folder?.name)            // FetchSortDescriptor(key: "folder.name")
/// SortDescriptor(\Note.folder?.parent?.name)    // "folder.parent.name"
/// ```
///
/// A note without a folder sorts as if the folder's name were nil: first in `.forward` order.
/// To-many relationships cannot be sorted through, and neither can a required to-one reached
/// through an optional one (`\Note.folder?.owner.name`); ``FetchSortDescriptor`` takes that one as
/// the key `"folder.owner.name"`.
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
    /// points; `.localized` and `.localizedStandard`, where Foundation has them (Apple's systems —
    /// swift-foundation on Linux has only `.lexical`), compare the case-folded strings, the closest
    /// a store's `ORDER BY` comes to them. On every platform,
    /// `FetchSortDescriptor(key: "title", ascending: true, caseInsensitive: true)` asks for the case-folded order.
    ///
    /// ```swift
    /// SortDescriptor(\Note.title, comparator: .lexical)
    /// ```
    public init(_ keyPath: KeyPath<Compared, String>, comparator: String.StandardComparator, order: SortOrder = .forward)
    where Compared: ManagedObject {
        self.keyPath = keyPath
        self.order = order
        self.caseInsensitive = comparator != .lexical
    }

    /// Orders by a to-one relationship: by the destination's row, nil first in `.forward` order.
    ///
    /// ```swift
    /// SortDescriptor(\Note.folder)
    /// ```
    public init<Destination: ManagedObject>(_ keyPath: KeyPath<Compared, Destination?>, order: SortOrder = .forward)
    where Compared: ManagedObject {
        self.keyPath = keyPath
        self.order = order
        self.caseInsensitive = false
    }

    /// Orders by a required to-one relationship: by the destination's row.
    ///
    /// ```swift
    /// SortDescriptor(\Ticket.owner)
    /// ```
    public init<Destination: ManagedObject>(_ keyPath: KeyPath<Compared, Destination>, order: SortOrder = .forward)
    where Compared: ManagedObject {
        self.keyPath = keyPath
        self.order = order
        self.caseInsensitive = false
    }

    /// The same ordering as a ``FetchSortDescriptor``, whose key is the property's name, or the
    /// dotted path to it through to-one relationships.
    ///
    /// ```swift
    /// try SortDescriptor(\Note.folder?.name).fetchSortDescriptor().key   // "folder.name"
    /// ```
    ///
    /// - Throws: ``ObjectGraphError/invalidFetchRequest`` when the key path is neither a stored
    ///   property of a `@Managed` class nor a key path through its to-one relationships to one (a
    ///   computed or `@Transient` property, or a key path through a to-many relationship).
    public func fetchSortDescriptor() throws -> FetchSortDescriptor {
        guard let model = Compared.self as? any ManagedModel.Type, let key = ManagedSchema.key(for: keyPath, in: model) else {
            throw ObjectGraphError(
                .invalidFetchRequest,
                "Sort key path \(keyPath) is neither a stored property of @Managed class \(Compared.self) nor a key path through at most "
                    + "\(ManagedSchema.maximumRelationshipHops) to-one relationships to one; to-many relationships and computed or "
                    + "@Transient properties cannot be sorted by, and a required to-one reached through an optional one only with "
                    + "FetchSortDescriptor(key: \"relationship.relationship.property\")",
                entityName: String(describing: Compared.self))
        }
        return FetchSortDescriptor(key: key, ascending: order == .forward, caseInsensitive: caseInsensitive)
    }
}
