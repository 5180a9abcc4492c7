import Foundation

/// A condition on objects, written in Core Data's predicate format language (`NSPredicate`).
///
/// ```swift
/// let request = FetchRequest<ManagedObject>(entityName: "Note")
/// request.predicate = FetchPredicate(format: "title BEGINSWITH[c] %@ AND rank > %d", "h", 3)
/// ```
///
/// The language: comparisons `==` (`=`), `!=` (`<>`), `<`, `<=` (`=<`), `>`, `>=` (`=>`),
/// `BETWEEN {lo, hi}`, `IN`, `BEGINSWITH`, `ENDSWITH`, `CONTAINS`, `LIKE` (wildcards `*` and `?`)
/// and `MATCHES` (a regular expression matching the whole string), each optionally followed by
/// `[c]` (case-insensitive), `[d]` (diacritic-insensitive) or `[cd]`; `AND` (`&&`), `OR` (`||`),
/// `NOT` (`!`) and parentheses; string literals in `'…'` or `"…"`, numbers, `TRUE`/`YES`,
/// `FALSE`/`NO`, `nil`/`NULL`, `SELF`, `TRUEPREDICATE`, `FALSEPREDICATE`; key paths through
/// to-one relationships (`folder.name`); `ANY`/`SOME`, `ALL` and `NONE` over to-many key paths
/// (`ANY tags.name == "x"`), `@count` (`notes.@count > 2`), and membership (`%@ IN tags`,
/// `tags CONTAINS %@`). Arguments are substituted for `%@` (any value, an array or set for `IN`),
/// `%K` (a key path), `%d`/`%i`/`%ld`/`%lld`/`%u` (integers), `%f`/`%g` (numbers) and `%s`.
///
/// Semantics are Core Data's, and the same on every store: `x == nil` is true only when `x` is
/// nil, `x != v` is true when `x` is nil, ordering with nil is false, numbers compare across
/// types, strings compare by Unicode code point unless `[c]`/`[d]` is given, and `%` and `_` are
/// ordinary characters.
///
/// Making a predicate never fails: a malformed format is recorded, ``validate()`` throws it, and
/// so does every fetch that uses the predicate. Use ``parse(format:_:)`` to fail at once.
/// Key names are checked when the predicate is used against an entity.
///
/// A predicate nests at most `maximumDepth` (24) levels deep and compares with
/// at most 32,766 values outside long lists, whatever made it, so that no predicate can exhaust a
/// thread's stack and every store answers it (see "Limits" in the Fetching article).
public final class FetchPredicate: Sendable, Hashable, CustomStringConvertible {
    /// The parsed predicate (`FALSEPREDICATE` when the format was malformed).
    let node: PredicateNode
    /// The mistake in the format, if any.
    let syntaxError: ObjectGraphError?
    /// The format as given, kept to describe a malformed predicate.
    private let malformedFormat: String?
    /// The node's ``PredicateNode/depth`` and ``PredicateNode/boundValueBound``, so compounds need
    /// not measure their subpredicates again.
    private let depth: Int
    private let boundValues: Int

    /// A predicate for a tree made in code (a `#Predicate` translation, a constant): a tree too
    /// deep or too large is recorded as an ``ObjectGraphError/invalidFetchRequest`` error.
    init(node: PredicateNode) {
        let checked = PredicateLimits.checked(node)
        self.node = checked.error == nil ? checked.node : .constant(false)
        self.syntaxError = checked.error
        self.malformedFormat = nil
        self.depth = checked.error == nil ? checked.depth : 1
        self.boundValues = checked.error == nil ? checked.boundValues : 0
    }

    init(node: PredicateNode, syntaxError: ObjectGraphError?, malformedFormat: String?) {
        self.node = node
        self.syntaxError = syntaxError
        self.malformedFormat = malformedFormat
        self.depth = 1
        self.boundValues = 0
    }

    /// A well-formed predicate whose tree is known to be within the limits.
    private init(checkedNode node: PredicateNode, depth: Int, boundValues: Int) {
        self.node = node
        self.syntaxError = nil
        self.malformedFormat = nil
        self.depth = depth
        self.boundValues = boundValues
    }

    /// Creates a predicate from a format string and its arguments.
    ///
    /// ```swift
    /// FetchPredicate(format: "folder.name == %@ AND rank BETWEEN {1, 5}", "Inbox")
    /// FetchPredicate(format: "%K IN %@", "rank", [1, 2, 3])
    /// ```
    ///
    /// A malformed format does not stop the program: the predicate records the mistake, which
    /// ``validate()`` and every fetch using the predicate throw.
    public convenience init(format: String, _ arguments: Any...) {
        self.init(format: format, argumentArray: arguments)
    }

    /// Creates a predicate from a format string and an array of arguments.
    ///
    /// ```swift
    /// FetchPredicate(format: "title == %@ OR rank > %d", argumentArray: ["Hello", 3])
    /// ```
    public init(format: String, argumentArray arguments: [Any]) {
        let converted = arguments.map(PredicateArgument.init)
        do {
            let parsed = try PredicateParser.parse(format, arguments: converted)
            let count = parsed.boundValueBound
            if count > PredicateLimits.maximumBoundValues { throw PredicateLimits.tooManyBoundValues(count) }
            node = parsed
            syntaxError = nil
            malformedFormat = nil
            depth = parsed.depth
            boundValues = count
        } catch {
            node = .constant(false)
            syntaxError = error as? ObjectGraphError
                ?? ObjectGraphError(.predicateSyntax, "\(error) in \(PredicateLexicon.quote(format))")
            malformedFormat = format
            depth = 1
            boundValues = 0
        }
    }

    /// Parses a format string, throwing at once when it is malformed.
    ///
    /// ```swift
    /// let predicate = try FetchPredicate.parse(format: "rank > %d", 3)
    /// ```
    ///
    /// - Throws: ``ObjectGraphError/predicateSyntax`` whose `position` is the offset (in characters)
    ///   of the mistake and whose message quotes the format.
    public static func parse(format: String, _ arguments: Any...) throws -> FetchPredicate {
        let predicate = FetchPredicate(format: format, argumentArray: arguments)
        try predicate.validate()
        return predicate
    }

    /// A predicate that is always true (`TRUEPREDICATE`) or always false (`FALSEPREDICATE`).
    ///
    /// ```swift
    /// request.predicate = FetchPredicate(value: true)
    /// ```
    public convenience init(value: Bool) {
        self.init(node: .constant(value))
    }

    /// A predicate true when every one of `subpredicates` is (true when there are none), as
    /// `NSCompoundPredicate(andPredicateWithSubpredicates:)`.
    ///
    /// ```swift
    /// FetchPredicate.and([FetchPredicate(format: "rank > 3"), FetchPredicate(format: "folder != nil")])
    /// ```
    public static func and(_ subpredicates: [FetchPredicate]) -> FetchPredicate {
        compound(subpredicates, PredicateNode.and)
    }

    /// A predicate true when some one of `subpredicates` is (false when there are none), as
    /// `NSCompoundPredicate(orPredicateWithSubpredicates:)`.
    ///
    /// ```swift
    /// FetchPredicate.or([FetchPredicate(format: "rank > 3"), FetchPredicate(format: "title == 'x'")])
    /// ```
    public static func or(_ subpredicates: [FetchPredicate]) -> FetchPredicate {
        compound(subpredicates, PredicateNode.or)
    }

    /// A predicate true when `predicate` is false, as `NSCompoundPredicate(notPredicateWithSubpredicate:)`.
    ///
    /// ```swift
    /// FetchPredicate.not(FetchPredicate(format: "title BEGINSWITH 'draft'"))
    /// ```
    public static func not(_ predicate: FetchPredicate) -> FetchPredicate {
        if predicate.syntaxError != nil {
            return FetchPredicate(
                node: .constant(false), syntaxError: predicate.syntaxError,
                malformedFormat: predicate.malformedFormat.map { "NOT (\($0))" })
        }
        if predicate.depth < PredicateLimits.maximumDepth {
            return FetchPredicate(checkedNode: .not(predicate.node), depth: predicate.depth + 1, boundValues: predicate.boundValues)
        }
        return FetchPredicate(node: .not(predicate.node))
    }

    /// A compound of well-formed predicates, measured from its subpredicates' depths; only a
    /// compound that would be too deep is measured (and flattened) again.
    private static func compound(_ predicates: [FetchPredicate], _ make: ([PredicateNode]) -> PredicateNode) -> FetchPredicate {
        if let bad = predicates.first(where: { $0.syntaxError != nil }) {
            return FetchPredicate(node: .constant(false), syntaxError: bad.syntaxError, malformedFormat: bad.malformedFormat)
        }
        let nodes = predicates.map(\.node)
        let node = make(nodes)
        let depth = predicates.count == 1 ? predicates[0].depth : 1 + (predicates.lazy.map(\.depth).max() ?? 0)
        var boundValues = predicates.reduce(0) { $0 + $1.boundValues }
        if case .or = node {
            // The `key == value` subpredicates SQL joins into lists (each of them binds one value).
            for case .group(let group) in SQLEqualityGroups.split(nodes) {
                boundValues += PredicateExpression.listBound(group.values.count) - group.values.count
            }
        }
        if depth <= PredicateLimits.maximumDepth, boundValues <= PredicateLimits.maximumBoundValues {
            return FetchPredicate(checkedNode: node, depth: depth, boundValues: boundValues)
        }
        return FetchPredicate(node: node)
    }

    /// The predicate as a format string, with its arguments written as literals; parsing it gives
    /// an equal predicate (objects and object IDs excepted). For a malformed predicate, the format
    /// as given.
    ///
    /// ```swift
    /// FetchPredicate(format: "rank > %d", 3).predicateFormat   // "rank > 3"
    /// ```
    public var predicateFormat: String { malformedFormat ?? node.format }

    /// The ``predicateFormat``.
    public var description: String { predicateFormat }

    /// Throws the mistake in the predicate's format, if there is one.
    ///
    /// ```swift
    /// try FetchPredicate(format: "rank >").validate()   // throws
    /// ```
    ///
    /// - Throws: ``ObjectGraphError/predicateSyntax``, whose `position` is the offset of the mistake
    ///   (a format nested more than `maximumDepth` levels deep is one);
    ///   ``ObjectGraphError/invalidFetchRequest`` for a predicate made in code that nests too deeply,
    ///   or one that compares with more values than SQLite binds in a statement.
    public func validate() throws {
        if let syntaxError { throw syntaxError }
    }

    /// Evaluates the predicate against an object or a row in memory.
    ///
    /// - Throws: the predicate's syntax error; ``ObjectGraphError/invalidFetchRequest`` when a key
    ///   is unknown to the subject's entity or a key path is used in a way the language forbids
    ///   (a to-many key without `ANY`, `ALL`, `NONE` or `@count`); an error from the subject.
    func evaluate(with subject: any PredicateSubject) throws -> Bool {
        if let syntaxError { throw syntaxError }
        return try PredicateEvaluator.evaluate(node, with: subject)
    }

    public static func == (lhs: FetchPredicate, rhs: FetchPredicate) -> Bool {
        lhs === rhs || (lhs.node == rhs.node && lhs.syntaxError?.message == rhs.syntaxError?.message)
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(node)
        hasher.combine(syntaxError?.message)
    }
}

// MARK: - Arguments

/// An argument of a predicate format, converted when the predicate is made so that the predicate
/// holds only `Sendable` constants.
enum PredicateArgument: Sendable, Hashable {
    case value(Value)
    /// An array or a set, for `IN` and `BETWEEN`.
    case list([Value])
    /// A value of a type predicates do not take; an error if a specifier uses it.
    case unsupported(typeName: String)

    /// Converts a value a user passes: strings, integers of every width, floating-point numbers,
    /// booleans, decimals, dates, data, UUIDs, URLs, `nil`/`NSNull`, managed objects (their IDs),
    /// object IDs, and arrays and sets of those.
    init(_ any: Any) {
        if let scalar = Self.scalar(any) {
            self = .value(scalar)
            return
        }
        var elements: [Any]?
        if let array = any as? [Any] {
            elements = array
        } else if let set = any as? Set<AnyHashable> {
            elements = set.map(\.base)
        }
        guard let elements else {
            self = .unsupported(typeName: String(describing: type(of: any)))
            return
        }
        var values: [Value] = []
        values.reserveCapacity(elements.count)
        for element in elements {
            guard let value = Self.scalar(element) else {
                self = .unsupported(typeName: String(describing: type(of: any)))
                return
            }
            values.append(value)
        }
        self = .list(values)
    }

    private static func scalar(_ any: Any) -> Value? {
        if let optional = any as? any _OptionalUnwrapping {
            guard let wrapped = optional.unwrapped else { return .null }
            return scalar(wrapped)
        }
        switch any {
        case is NSNull: return .null
        case let v as Value: return v
        case let v as String: return .string(v)
        case let v as Substring: return .string(String(v))
        case let v as Character: return .string(String(v))
        case let v as Bool: return .bool(v)
        case let v as Int: return .int(Int64(v))
        case let v as Int64: return .int(v)
        case let v as Int32: return .int(Int64(v))
        case let v as Int16: return .int(Int64(v))
        case let v as Int8: return .int(Int64(v))
        case let v as UInt: return Int64(exactly: v).map(Value.int) ?? .double(Double(v))
        case let v as UInt64: return Int64(exactly: v).map(Value.int) ?? .double(Double(v))
        case let v as UInt32: return .int(Int64(v))
        case let v as UInt16: return .int(Int64(v))
        case let v as UInt8: return .int(Int64(v))
        case let v as Double: return .double(v)
        case let v as Float: return .double(Double(v))
        case let v as Decimal: return .decimal(v)
        case let v as Date: return .date(v)
        case let v as Data: return .data(v)
        case let v as UUID: return .uuid(v)
        case let v as URL: return .url(v)
        case let v as ManagedObjectID: return .objectID(v)
        case let v as ManagedObject: return .objectID(v.objectID)
        case let v as NSDecimalNumber: return .decimal(v.decimalValue)
        case let v as NSNumber:
            let double = v.doubleValue
            if let int = Int64(exactly: double), double.rounded() == double { return .int(int) }
            return .double(double)
        default: return nil
        }
    }
}
