import Foundation

/// The parsed form of a ``FetchPredicate``: what in-memory evaluation and SQL generation walk.
///
/// Arguments are already substituted: the tree holds only constants, key paths and operators, so
/// it is `Sendable` and may be shared by every queue.
indirect enum PredicateNode: Sendable, Hashable {
    /// `TRUEPREDICATE` or `FALSEPREDICATE`.
    case constant(Bool)
    case not(PredicateNode)
    /// True when every subpredicate is (true when empty).
    case and([PredicateNode])
    /// True when some subpredicate is (false when empty).
    case or([PredicateNode])
    case comparison(PredicateComparison)
}

/// One comparison: `[modifier] lhs operator[options] rhs`.
struct PredicateComparison: Sendable, Hashable {
    /// The quantifier applied to a left-hand side that goes through a to-many relationship.
    enum Modifier: Sendable, Hashable {
        /// No quantifier.
        case direct
        /// `ANY` (or `SOME`): true when some destination satisfies the comparison.
        case any
        /// `ALL`: true when every destination does (true when there are none).
        case all
        /// `NONE`: true when no destination does (true when there are none).
        case none
    }

    enum Operator: Sendable, Hashable {
        case equalTo, notEqualTo, lessThan, lessThanOrEqualTo, greaterThan, greaterThanOrEqualTo
        case beginsWith, endsWith, contains, like, matches
        case `in`, between

        /// Whether the operator orders its operands (`<`, `<=`, `>`, `>=`).
        var isOrdering: Bool {
            switch self {
            case .lessThan, .lessThanOrEqualTo, .greaterThan, .greaterThanOrEqualTo: true
            default: false
            }
        }

        /// Whether the operator works on strings only.
        var isStringOperator: Bool {
            switch self {
            case .beginsWith, .endsWith, .contains, .like, .matches: true
            default: false
            }
        }

        /// The operator's spelling in a format string.
        var symbol: String {
            switch self {
            case .equalTo: "=="
            case .notEqualTo: "!="
            case .lessThan: "<"
            case .lessThanOrEqualTo: "<="
            case .greaterThan: ">"
            case .greaterThanOrEqualTo: ">="
            case .beginsWith: "BEGINSWITH"
            case .endsWith: "ENDSWITH"
            case .contains: "CONTAINS"
            case .like: "LIKE"
            case .matches: "MATCHES"
            case .in: "IN"
            case .between: "BETWEEN"
            }
        }
    }

    /// `[c]` and `[d]`. The raw value is the `flags` argument of the SQL functions.
    struct Options: OptionSet, Sendable, Hashable {
        let rawValue: Int
        static let caseInsensitive = Options(rawValue: 1)
        static let diacriticInsensitive = Options(rawValue: 2)

        var isCaseInsensitive: Bool { contains(.caseInsensitive) }
        var isDiacriticInsensitive: Bool { contains(.diacriticInsensitive) }

        /// The options as written after an operator: `""`, `"[c]"`, `"[d]"` or `"[cd]"`.
        var format: String {
            if isEmpty { return "" }
            return "[" + (isCaseInsensitive ? "c" : "") + (isDiacriticInsensitive ? "d" : "") + "]"
        }
    }

    var modifier: Modifier
    var lhs: PredicateExpression
    var op: Operator
    var options: Options
    var rhs: PredicateExpression
}

/// An operand of a comparison.
indirect enum PredicateExpression: Sendable, Hashable {
    /// A value, such as `'abc'`, `3`, `nil` or an argument.
    case constant(Value)
    /// A collection of values, such as `{1, 2}` or an array argument.
    case list([Value])
    /// A key path from the evaluated object, one property per component; `@count` may end it.
    /// No components means `SELF`.
    case keyPath([String])
    /// A key path from the variable of an enclosing `SUBQUERY` (`$n.title`): its name without `$`,
    /// then the components. No components means the element itself.
    case variable(String, [String])
    /// `lhs op rhs` on numbers (`rank + 1`, `score * 2`).
    case arithmetic(PredicateArithmetic, PredicateExpression, PredicateExpression)
    /// `SUBQUERY(collection, $variable, predicate).@count`: how many elements of a to-many key
    /// path satisfy a predicate about one element.
    case subqueryCount(PredicateSubquery)
}

/// An arithmetic operator of the format language. Operands are numbers (integers, booleans,
/// doubles, decimals, dates as seconds since 2001); the result follows SQLite's rules, which
/// in-memory evaluation reproduces: integers give an integer (a real when it overflows), anything
/// else a real; division and remainder by zero give nil, as does a result that is not a number.
enum PredicateArithmetic: Sendable, Hashable {
    case add, subtract, multiply
    /// `/`: truncating division when both operands are integers (Swift's `Int` division), real
    /// division otherwise.
    case divide
    /// `modulus:by:(a, b)`: the remainder of truncating division, with the sign of `a` (Swift's `%`).
    /// Real operands are truncated to integers first, as SQLite's `%` does.
    case remainder

    /// The operator's spelling in a format string (`remainder` is written as a function).
    var symbol: String {
        switch self {
        case .add: "+"
        case .subtract: "-"
        case .multiply: "*"
        case .divide: "/"
        case .remainder: "modulus:by:"
        }
    }

    /// 1 for `+` and `-`, 2 for `*` and `/` (which bind tighter).
    var precedence: Int {
        switch self {
        case .add, .subtract: 1
        case .multiply, .divide, .remainder: 2
        }
    }
}

/// `SUBQUERY(collection, $variable, predicate)`: the elements of a to-many key path for which
/// `predicate` holds, where the predicate reads one element through `$variable`. Plain key paths
/// in the predicate still start from the evaluated object.
struct PredicateSubquery: Sendable, Hashable {
    /// A key path (``PredicateExpression/keyPath(_:)`` or ``PredicateExpression/variable(_:_:)``)
    /// that ends with a to-many relationship.
    var collection: PredicateExpression
    /// The variable's name, without `$`.
    var variable: String
    var predicate: PredicateNode
}

// MARK: - Rendering as a format string

extension PredicateNode {
    /// The node as a format string that parses back to an equal node (except object IDs, which
    /// have no literal form).
    var format: String { format(nested: false) }

    /// Core Data's rendering: a compound (`AND`, `OR`, `NOT`) inside another compound is
    /// parenthesized, as `NSCompoundPredicate` prints it: `(a == 1 AND b == 2) OR NOT (c == 3 OR d == 4)`.
    private func format(nested: Bool) -> String {
        switch self {
        case .constant(let value):
            return value ? "TRUEPREDICATE" : "FALSEPREDICATE"
        case .not(let node):
            let text = "NOT " + node.format(nested: true)
            return nested ? "(" + text + ")" : text
        case .and(let nodes), .or(let nodes):
            if nodes.isEmpty { return isAnd ? "TRUEPREDICATE" : "FALSEPREDICATE" }
            if nodes.count == 1 { return nodes[0].format(nested: nested) }
            let text = nodes.map { $0.format(nested: true) }.joined(separator: isAnd ? " AND " : " OR ")
            return nested ? "(" + text + ")" : text
        case .comparison(let comparison):
            return comparison.format
        }
    }

    private var isAnd: Bool { if case .and = self { true } else { false } }
}

extension PredicateComparison {
    var format: String {
        let prefix: String
        switch modifier {
        case .direct: prefix = ""
        case .any: prefix = "ANY "
        case .all: prefix = "ALL "
        case .none: prefix = "NONE "
        }
        return prefix + lhs.format + " " + op.symbol + options.format + " " + rhs.format
    }
}

extension PredicateExpression {
    var format: String { format(precedence: 0) }

    /// The expression as a format string, parenthesized when it is arithmetic that binds looser
    /// than `precedence` (1: an operand of `+` or `-`; 2: of `*` or `/`; 3: the right-hand
    /// operand of `*` or `/`, or of `-` when written 2).
    private func format(precedence: Int) -> String {
        switch self {
        case .constant(let value): return value.predicateLiteral
        case .list(let values): return "{" + values.map(\.predicateLiteral).joined(separator: ", ") + "}"
        case .keyPath(let components):
            return components.isEmpty ? "SELF" : components.map(PredicateLexicon.keyPathComponentFormat).joined(separator: ".")
        case .variable(let name, let components):
            return (["$" + name] + components.map(PredicateLexicon.keyPathComponentFormat)).joined(separator: ".")
        case .arithmetic(.remainder, let lhs, let rhs):
            return "modulus:by:(\(lhs.format), \(rhs.format))"
        case .arithmetic(let op, let lhs, let rhs):
            // Left-associative: the right-hand operand of the same precedence needs parentheses.
            let text = lhs.format(precedence: op.precedence) + " " + op.symbol + " " + rhs.format(precedence: op.precedence + 1)
            return precedence > op.precedence ? "(" + text + ")" : text
        case .subqueryCount(let subquery):
            return "SUBQUERY(\(subquery.collection.format), $\(subquery.variable), \(subquery.predicate.format)).@count"
        }
    }
}

extension Value {
    /// The value as a format-string literal.
    var predicateLiteral: String {
        switch self {
        case .null: "nil"
        case .int(let v): String(v)
        case .bool(let v): v ? "TRUE" : "FALSE"
        case .double(let v): PredicateLexicon.doubleLiteral(v)
        case .decimal(let v): "CAST(\(PredicateLexicon.quote(v.description)), \"NSDecimalNumber\")"
        case .string(let v): PredicateLexicon.quote(v)
        case .date(let v): "CAST(\(PredicateLexicon.doubleLiteral(v.timeIntervalSinceReferenceDate)), \"NSDate\")"
        case .data(let v): "CAST(\(PredicateLexicon.quote(v.base64EncodedString())), \"NSData\")"
        case .uuid(let v): "CAST(\(PredicateLexicon.quote(v.uuidString)), \"NSUUID\")"
        case .url(let v): "CAST(\(PredicateLexicon.quote(v.absoluteString)), \"NSURL\")"
        case .objectID(let v): "<\(v.uriRepresentation().absoluteString)>"
        }
    }
}

/// The words and spellings of the format language, shared by the parser and the renderer.
enum PredicateLexicon {
    /// Reserved words (upper-cased). A key with one of these names is written `#name`.
    static let reservedWords: Set<String> = [
        "AND", "OR", "NOT", "ANY", "SOME", "ALL", "NONE", "IN", "BETWEEN", "BEGINSWITH", "ENDSWITH",
        "CONTAINS", "LIKE", "MATCHES", "TRUEPREDICATE", "FALSEPREDICATE", "TRUE", "YES", "FALSE", "NO",
        "NIL", "NULL", "SELF", "CAST", "SUBQUERY", "FUNCTION", "FIRST", "LAST", "SIZE",
    ]

    static func keyPathComponentFormat(_ component: String) -> String {
        if component.hasPrefix("@") { return component }
        let isPlain = component.first.map { $0.isLetter || $0 == "_" } ?? false
            && component.allSatisfy { $0.isLetter || $0.isNumber || $0 == "_" }
        return isPlain && !reservedWords.contains(component.uppercased()) ? component : "#" + component
    }

    /// A string literal in double quotes, with `\`, `"` and control characters escaped.
    static func quote(_ string: String) -> String {
        var text = "\""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\\": text += "\\\\"
            case "\"": text += "\\\""
            case "\n": text += "\\n"
            case "\r": text += "\\r"
            case "\t": text += "\\t"
            case "\0": text += "\\0"
            default:
                if scalar.value < 0x20 || scalar.value == 0x7F {
                    text += String(format: "\\u%04X", scalar.value)
                } else {
                    text.unicodeScalars.append(scalar)
                }
            }
        }
        return text + "\""
    }

    /// A double as a literal the parser reads back exactly.
    static func doubleLiteral(_ value: Double) -> String {
        if value.isNaN || value.isInfinite { return "CAST(\(quote(String(value))), \"NSNumber\")" }
        let text = String(value)  // shortest representation that round-trips
        return text.contains(where: { $0 == "." || $0 == "e" || $0 == "E" }) ? text : text + ".0"
    }
}

// MARK: - Checking against a model

/// A key path checked against an entity: each step's property, whether (and where) it crosses a
/// to-many relationship, and whether it ends with `@count`. In-memory evaluation and SQL
/// generation both start from this, so both accept and refuse the same key paths.
struct AnalyzedKeyPath {
    enum Step {
        case attribute(AttributeDescription)
        case toOne(RelationshipDescription)
        case toMany(RelationshipDescription)
    }

    /// The entity the key path starts from.
    let entity: EntityDescription
    let components: [String]
    /// The properties, in order (without `@count`). Empty for `SELF`.
    let steps: [Step]
    /// The index in ``steps`` of the to-many relationship, if the key path crosses one.
    let toManyIndex: Int?
    /// Whether the key path ends with `@count` (right after its to-many relationship).
    let isCount: Bool

    /// Whether the key path gives a collection (it crosses a to-many relationship and does not
    /// count it).
    var isCollection: Bool { toManyIndex != nil && !isCount }

    /// The attribute the key path ends with, if any.
    var finalAttribute: AttributeDescription? {
        if isCount { return nil }
        if case .attribute(let attribute)? = steps.last { return attribute }
        return nil
    }

    /// Checks `components` against `entity`.
    ///
    /// - Throws: ``ObjectGraphError/invalidFetchRequest`` naming the entity and the key when a key
    ///   is unknown, follows an attribute, crosses a second to-many relationship, or `@count` does
    ///   not directly follow a to-many relationship.
    init(_ components: [String], from entity: EntityDescription) throws {
        self.entity = entity
        self.components = components
        var steps: [Step] = []
        var toManyIndex: Int?
        var isCount = false
        var current: EntityDescription? = entity
        var previousKey: String?
        let path = components.joined(separator: ".")
        for (index, key) in components.enumerated() {
            if key == "@count" {
                guard index == components.count - 1, let toMany = toManyIndex, toMany == steps.count - 1 else {
                    throw ObjectGraphError(
                        .invalidFetchRequest,
                        "In key path '\(path)' of entity '\(entity.name)', @count must come last, right after a to-many relationship",
                        entityName: entity.name, key: path)
                }
                isCount = true
                break
            }
            guard let owner = current else {
                throw ObjectGraphError(
                    .invalidFetchRequest,
                    "In key path '\(path)' of entity '\(entity.name)', '\(key)' follows attribute '\(previousKey ?? "")', which has no properties",
                    entityName: entity.name, key: path)
            }
            if let attribute = owner.attributesByName[key] {
                steps.append(.attribute(attribute))
                current = nil
            } else if let relationship = owner.relationshipsByName[key], let destination = relationship.destinationEntity {
                if relationship.isToMany {
                    if toManyIndex != nil {
                        throw ObjectGraphError(
                            .invalidFetchRequest,
                            "Key path '\(path)' of entity '\(entity.name)' crosses more than one to-many relationship",
                            entityName: entity.name, key: path)
                    }
                    toManyIndex = steps.count
                    steps.append(.toMany(relationship))
                } else {
                    steps.append(.toOne(relationship))
                }
                current = destination
            } else {
                let where_ = owner === entity ? "" : " (in key path '\(path)' of entity '\(entity.name)')"
                throw ObjectGraphError(
                    .invalidFetchRequest, "Entity '\(owner.name)' has no attribute or relationship named '\(key)'\(where_)",
                    entityName: owner.name, key: key)
            }
            previousKey = key
        }
        self.steps = steps
        self.toManyIndex = toManyIndex
        self.isCount = isCount
    }
}

extension PredicateExpression {
    /// Where a key path (or a variable's key path) starts — `root`, the evaluated object, or the
    /// element the variable stands for in `variables` — and the path checked against that start's
    /// entity. In-memory evaluation starts from objects, SQL generation from table aliases.
    ///
    /// - Throws: ``ObjectGraphError/invalidFetchRequest`` when the expression is not a key path, its
    ///   variable is not defined, or the path does not fit the entity.
    func analyzedKeyPath<Start>(
        root: Start, variables: [String: Start], entity: (Start) -> EntityDescription
    ) throws -> (Start, AnalyzedKeyPath) {
        switch self {
        case .keyPath(let components):
            return (root, try AnalyzedKeyPath(components, from: entity(root)))
        case .variable(let name, let components):
            guard let start = variables[name] else { throw PredicateArithmetic.undefinedVariable(name) }
            return (start, try AnalyzedKeyPath(components, from: entity(start)))
        default:
            throw ObjectGraphError(.invalidFetchRequest, "'\(format)' is not a key path")
        }
    }
}

/// How a comparison combines its operands, once its key paths are known.
enum ComparisonShape {
    /// A value compared with a value (or, for `IN` and `BETWEEN`, a list).
    case scalar
    /// `ANY`, `ALL` or `NONE`: each value of the left-hand collection compared with the right.
    case quantified
    /// `collection CONTAINS value`: whether the value is one of the collection's.
    case leftMembership
    /// `value IN collection` with a to-many key path on the right.
    case rightMembership

    /// Decides the shape of `comparison`, or throws when its operands do not fit its operator.
    ///
    /// - Parameters:
    ///   - lhs, rhs: for each side, whether it is a to-many key path's collection or a list constant.
    /// - Throws: ``ObjectGraphError/invalidFetchRequest``.
    init(_ comparison: PredicateComparison, lhs: (isCollection: Bool, isList: Bool), rhs: (isCollection: Bool, isList: Bool)) throws {
        func refuse(_ message: String) -> ObjectGraphError {
            ObjectGraphError(.invalidFetchRequest, "\(message), in '\(comparison.format)'")
        }
        let op = comparison.op
        if rhs.isList && op != .in && op != .between {
            throw refuse("A list on the right-hand side needs IN or BETWEEN")
        }
        if op == .between && !rhs.isList { throw refuse("BETWEEN needs a list of two values") }
        if comparison.modifier != .direct {
            guard lhs.isCollection else {
                throw refuse("ANY, ALL and NONE need a key path through a to-many relationship on the left-hand side")
            }
            guard !rhs.isCollection else { throw refuse("A to-many key path on the right-hand side needs IN, without ANY, ALL or NONE") }
            self = .quantified
            return
        }
        if lhs.isCollection || lhs.isList {
            guard op == .contains, !rhs.isCollection, !rhs.isList else {
                throw refuse(
                    lhs.isList ? "A list on the left-hand side needs CONTAINS and a value"
                        : "A to-many key path on the left-hand side needs ANY, ALL, NONE, @count, or CONTAINS and a value")
            }
            self = .leftMembership
            return
        }
        if rhs.isCollection {
            guard op == .in else { throw refuse("A to-many key path on the right-hand side needs IN") }
            self = .rightMembership
            return
        }
        self = .scalar
    }
}
