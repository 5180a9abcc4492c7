import Foundation

extension FetchPredicate {
    /// A predicate from a Swift `#Predicate` over a `@Managed` class.
    ///
    /// ```swift
    /// let request = Note.fetchRequest()
    /// request.predicate = FetchPredicate(#Predicate<Note> { $0.title.starts(with: "H") })
    /// ```
    ///
    /// The predicate becomes the same conditions a format string gives, and runs as SQL on an
    /// SQLite store and in memory elsewhere, with Swift's semantics. Supported: `==`, `!=`, `<`,
    /// `<=`, `>`, `>=`, `&&`, `||`, `!`, optional chaining, `flatMap`, `??`, `!`, comparisons with
    /// `nil`, `contains`, `starts(with:)`, `localizedStandardContains`, `caseInsensitiveCompare`,
    /// `contains(_:)` of a constant collection or a range, and, on to-many relationships,
    /// `contains(_:)`, `contains(where:)`, `allSatisfy`, `count` and `isEmpty`; integer arithmetic
    /// of a property and a constant; any sub-expression that does not read the object (evaluated once).
    ///
    /// Making the predicate never fails: a node that cannot be translated makes every fetch and
    /// evaluation that uses the predicate throw an error that names it. Use
    /// ``init(translating:)`` to fail at once.
    public convenience init<T: ManagedObject>(_ predicate: Predicate<T>) {
        do {
            self.init(node: try PredicateTranslator.translate(predicate))
        } catch {
            let failure = (error as? ObjectGraphError) ?? ObjectGraphError(.unsupported, "\(error)")
            self.init(node: .constant(false), syntaxError: failure, malformedFormat: nil)
        }
    }

    /// A predicate from a Swift `#Predicate`, throwing when a node cannot be translated.
    ///
    /// ```swift
    /// let predicate = try FetchPredicate(translating: #Predicate<Note> { $0.rank > 3 })
    /// ```
    ///
    /// - Throws: ``ObjectGraphError/unsupported`` naming the node.
    public convenience init<T: ManagedObject>(translating predicate: Predicate<T>) throws {
        self.init(node: try PredicateTranslator.translate(predicate))
    }
}
