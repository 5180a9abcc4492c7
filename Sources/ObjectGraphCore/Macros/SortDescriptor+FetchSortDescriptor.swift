import Foundation

// Foundation's `SortDescriptor` orders the fetches of a `@Managed` class; ObjectGraph declares no
// type of that name. The documentation is on the method, which DocC shows under Foundation's type.
extension SortDescriptor where Compared: ManagedObject {
    /// The same ordering as a ``FetchSortDescriptor``, whose key is the property's name, or the
    /// dotted path to it through to-one relationships: what a ``FetchDescriptor`` orders by.
    ///
    /// ```swift
    /// let sorts: [SortDescriptor<Note>] = [SortDescriptor(\.rank, order: .reverse), SortDescriptor(\.folder?.name)]
    /// let notes = try context.fetch(FetchDescriptor(sortBy: sorts))
    /// try SortDescriptor(\Note.folder?.name).fetchSortDescriptor().key   // "folder.name"
    /// ```
    ///
    /// `SortDescriptor` is Foundation's `SortDescriptor<Compared>`, whose key-path initializers take
    /// any class on Linux; ObjectGraph reads its public `keyPath` and `order` (and, for strings,
    /// its `stringComparator`). The key path names a comparable stored property of the class (an
    /// attribute), or goes through to-one relationships, optional or required, up to four of them,
    /// to one:
    ///
    /// ```swift
    /// SortDescriptor(\Note.folder?.name)            // FetchSortDescriptor(key: "folder.name")
    /// SortDescriptor(\Note.folder?.parent?.name)    // "folder.parent.name"
    /// SortDescriptor(\Ticket.owner.name)            // "owner.name", through a required to-one
    /// ```
    ///
    /// A note without a folder sorts as if the folder's name were nil: first in `.forward` order.
    /// To-many relationships cannot be sorted through, and neither can a required to-one reached
    /// through an optional one (`\Note.folder?.owner.name`); ``FetchSortDescriptor`` takes that one
    /// as the key `"folder.owner.name"`. Foundation has no initializer for a key path to a to-one
    /// relationship itself (`\Note.folder`: its destination is not `Comparable`); order by the
    /// destination's row with `FetchSortDescriptor(key: "folder")`.
    ///
    /// Strings compare by Unicode code point with Foundation's default (`SortDescriptor(\Note.title)`)
    /// and with `comparator: .lexical`. `.localized` and `.localizedStandard`, where Foundation has
    /// them (Apple's systems; swift-foundation on Linux has only `.lexical`), compare the
    /// case-folded strings, the closest a store's `ORDER BY` comes to them. On every platform,
    /// `FetchSortDescriptor(key: "title", ascending: true, caseInsensitive: true)` asks for the
    /// case-folded order.
    ///
    /// - Throws: ``ObjectGraphError/invalidFetchRequest`` when the descriptor has no key path (one
    ///   that compares with a comparator only), or when the key path is neither a stored property
    ///   of a `@Managed` class nor a key path through its to-one relationships to one (a computed or
    ///   `@Transient` property, `objectID`, or a key path through a to-many relationship).
    public func fetchSortDescriptor() throws -> FetchSortDescriptor {
        guard let keyPath else {
            throw ObjectGraphError(
                .invalidFetchRequest,
                "Sort descriptor \(self) of \(Compared.self) has no key path; a fetch orders only by key paths to stored properties, "
                    + "so make it with SortDescriptor(\\\(Compared.self).property) or use FetchSortDescriptor(key:)",
                entityName: String(describing: Compared.self))
        }
        guard let model = Compared.self as? any ManagedModel.Type, let key = ManagedSchema.key(for: keyPath, in: model) else {
            throw ObjectGraphError(
                .invalidFetchRequest,
                "Sort key path \(keyPath) is neither a stored property of @Managed class \(Compared.self) nor a key path through at most "
                    + "\(ManagedSchema.maximumRelationshipHops) to-one relationships to one; to-many relationships and computed or "
                    + "@Transient properties cannot be sorted by, and a to-one relationship itself or a required to-one reached "
                    + "through an optional one only with FetchSortDescriptor(key: \"relationship\") or "
                    + "FetchSortDescriptor(key: \"relationship.relationship.property\")",
                entityName: String(describing: Compared.self))
        }
        return FetchSortDescriptor(key: key, ascending: order == .forward, caseInsensitive: Self.isCaseInsensitive(stringComparator))
    }

    /// Whether a string comparator compares case-folded strings: every standard comparator but
    /// `.lexical` (`.localized` and `.localizedStandard`), whatever its own order.
    private static func isCaseInsensitive(_ comparator: String.StandardComparator?) -> Bool {
        guard let comparator else { return false }
        var lexical = String.StandardComparator.lexical
        lexical.order = comparator.order
        return comparator != lexical
    }
}
