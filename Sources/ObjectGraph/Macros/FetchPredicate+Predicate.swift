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
            self.init(node: Self.failing(error))
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

    /// A node that makes every use of the predicate throw, naming `error`'s message.
    ///
    /// (FetchPredicate keeps a syntax error only through its file-private initializer; until it
    /// takes any error, an untranslatable `#Predicate` is recorded as a key no entity has, whose
    /// name is the message.)
    private static func failing(_ error: any Error) -> PredicateNode {
        let message = (error as? ObjectGraphError)?.message ?? "\(error)"
        return .comparison(PredicateComparison(modifier: .direct, lhs: .keyPath([message]), op: .equalTo, options: [], rhs: .constant(.null)))
    }
}
