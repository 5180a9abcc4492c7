import Foundation

/// Translates a Swift `Predicate` into the ``PredicateNode`` that SQL generation and in-memory
/// evaluation already walk, so a `#Predicate` runs on every store and over pending changes exactly
/// as a format predicate does.
///
/// Each `PredicateExpressions` node translates itself (one conformance per node, in
/// `PredicateExpressions+Translation.swift`) into a ``PredicateTranslation``: a condition, a
/// constant, a key path, or one of the intermediate shapes (`??`, `flatMap`, counts,
/// `caseInsensitiveCompare`) that the node above turns into a condition. A subtree that does not
/// translate but uses no variable is evaluated once, as a constant. Key paths become property names
/// through the tables `@Managed` generates.
///
/// Semantics are Swift's on every store: `x != v` is true when `x` is nil (optional chaining gives
/// nil), string comparisons are case-sensitive unless asked, `%` and `_` are literal characters.
struct PredicateTranslator {
    /// Where each variable of the predicate points: the evaluated object, a destination of a to-many
    /// relationship (inside `contains(where:)` and `allSatisfy`), or a to-one destination (inside `flatMap`).
    var bindings: [PredicateExpressions.VariableID: KeyPathValue] = [:]
    private var nextScope = 1

    /// Translates a predicate with one input.
    ///
    /// - Throws: ``ObjectGraphError/unsupported`` naming the first node that cannot be translated.
    static func translate<T>(_ predicate: Predicate<T>) throws -> PredicateNode {
        var translator = PredicateTranslator()
        translator.bindings[predicate.variable.key] = KeyPathValue(scope: 0, components: [])
        let condition = try translator.condition(predicate.expression)
        return try condition.lowered()
    }

    /// Translates a sub-expression.
    mutating func translate(_ expression: some SwiftPredicateExpression) throws -> PredicateTranslation {
        try expression.translation(&self)
    }

    /// Translates a sub-expression that must be a condition (a `Bool`).
    mutating func condition(_ expression: some SwiftPredicateExpression) throws -> TranslatedCondition {
        try condition(from: translate(expression), node: expression)
    }

    /// Opens a scope for the elements of a to-many relationship.
    mutating func makeScope() -> Int {
        defer { nextScope += 1 }
        return nextScope
    }

    func condition(from translation: PredicateTranslation, node: some SwiftPredicateExpression) throws -> TranslatedCondition {
        switch translation {
        case .condition(let condition): return condition
        case .constant(let value as Bool): return .constant(value)
        case .path(let path): return .comparison(.path(path), .equalTo, [], .value(.bool(true)))
        case .optionalCondition(let nonNil, let value): return .and([nonNil, value])  // used as a Bool: nil is false
        default: throw Self.unsupported(node, "it does not give a condition")
        }
    }

    static func unsupported(_ node: some SwiftPredicateExpression, _ reason: String) -> ObjectGraphError {
        ObjectGraphError(.unsupported, "#Predicate node \(Self.name(of: node)) cannot be translated to a fetch: \(reason)")
    }

    /// A short name for a node: its type without module prefixes.
    static func name(of node: some SwiftPredicateExpression) -> String {
        String(describing: type(of: node))
            .replacingOccurrences(of: "Foundation.", with: "")
            .replacingOccurrences(of: "FoundationEssentials.", with: "")
            .replacingOccurrences(of: "ObjectGraph.", with: "")
    }

    // MARK: - Constants

    /// A Swift value as a predicate value: scalars, managed objects (their IDs), enums (their raw values).
    static func value(of constant: Any?) -> Value? {
        guard let constant else { return .null }
        if let optional = constant as? any _OptionalUnwrapping {
            guard let wrapped = optional.unwrapped else { return .null }
            return value(of: wrapped)
        }
        if let raw = constant as? any RawRepresentable, !(constant is String) { return value(of: raw.rawValue) }
        if case .value(let value) = PredicateArgument(constant) { return value }
        return nil
    }

    /// A collection of Swift values as a list of predicate values.
    static func list(of constant: Any?) -> [Value]? {
        guard let sequence = constant as? any Sequence, !(constant is String) else { return nil }
        var values: [Value] = []
        for element in sequence as any Sequence {
            guard let value = value(of: element) else { return nil }
            values.append(value)
        }
        return values
    }

    // MARK: - Comparisons

    /// `lhs op rhs` for the operands two nodes gave.
    func compare(
        _ lhs: PredicateTranslation, _ op: PredicateComparison.Operator, _ rhs: PredicateTranslation,
        options: PredicateComparison.Options = [], node: some SwiftPredicateExpression
    ) throws -> TranslatedCondition {
        switch (lhs, rhs) {
        case (.constant(let x), .constant(let y)):
            guard let x = Self.value(of: x), let y = Self.value(of: y) else { throw Self.unsupported(node, "a constant is of a type predicates do not compare") }
            return .constant(try PredicateEvaluator.compare(x, op, .scalar(y), options: options))
        case (.constant, _):
            guard !op.isStringOperator, op != .in, op != .between else {
                throw Self.unsupported(node, "a constant on the left of \(op.symbol) needs a stored property on the right")
            }
            return try compare(rhs, op.flipped, lhs, options: options, node: node)
        case (.path(let path), .constant(let constant)):
            guard let value = Self.value(of: constant) else {
                throw Self.unsupported(node, "\(type(of: constant!)) values cannot be compared with a stored property")
            }
            return .comparison(.path(path), op, options, .value(value))
        case (.count(let path), .constant(let constant)):
            guard let value = Self.value(of: constant) else { throw Self.unsupported(node, "a count is compared with a number") }
            return .comparison(.count(path), op, options, .value(value))
        case (.coalesced(let path, let fallback), .constant):
            // `(x ?? c) op v`: x op v when x is not nil, c op v otherwise.
            let whenNil = try compare(.constant(fallback), op, rhs, options: options, node: node)
            return .or([
                .and([.comparison(.path(path), .notEqualTo, [], .value(.null)), try compare(.path(path), op, rhs, options: options, node: node)]),
                .and([.comparison(.path(path), .equalTo, [], .value(.null)), whenNil]),
            ])
        case (.condition(let condition), .constant(let constant as Bool)) where op == .equalTo || op == .notEqualTo:
            return (constant == (op == .equalTo)) ? condition : .not(condition)
        case (.condition(let a), .condition(let b)) where op == .equalTo || op == .notEqualTo:
            let same = TranslatedCondition.or([.and([a, b]), .and([.not(a), .not(b)])])
            return op == .equalTo ? same : .not(same)
        case (.optionalCondition(let nonNil, let value), .constant(let constant)) where op == .equalTo || op == .notEqualTo:
            let equal: TranslatedCondition
            switch constant {
            case nil: equal = .not(nonNil)
            case let flag as Bool: equal = .and([nonNil, flag ? value : .not(value)])
            default: throw Self.unsupported(node, "an optional Bool compares with true, false or nil")
            }
            return op == .equalTo ? equal : .not(equal)
        case (.caseInsensitiveOrder(let a, let b), .constant(let constant as ComparisonResult)) where op == .equalTo || op == .notEqualTo:
            let order: PredicateComparison.Operator = switch constant {
            case .orderedSame: .equalTo
            case .orderedAscending: .lessThan
            case .orderedDescending: .greaterThan
            }
            let condition = try compare(a, order, b, options: options.union(.caseInsensitive), node: node)
            return op == .equalTo ? condition : .not(condition)
        default:
            // Stored properties, counts and arithmetic compare with each other (and with constants
            // the cases above did not take).
            if let left = Self.operand(lhs), let right = Self.operand(rhs) {
                return .comparison(left, op, options, right)
            }
            throw Self.unsupported(node, "its operands (\(lhs.shapeName) and \(rhs.shapeName)) do not compare in a fetch")
        }
    }

    /// A translation as an operand of a comparison or of arithmetic, when it is one.
    static func operand(_ translation: PredicateTranslation) -> TranslatedCondition.Operand? {
        switch translation {
        case .path(let path): .path(path)
        case .count(let path): .count(path)
        case .number(let operand): operand
        case .constant(let constant): value(of: constant).map { .value($0) }
        default: nil
        }
    }
}

/// What a node translates to.
indirect enum PredicateTranslation {
    /// A condition (a `Bool` that depends on the object).
    case condition(TranslatedCondition)
    /// A value that does not depend on the object, evaluated once.
    case constant(Any?)
    /// A key path from a variable: an attribute's value, a relationship's destination(s), or the object itself.
    case path(KeyPathValue)
    /// The number of destinations of a to-many relationship.
    case count(KeyPathValue)
    /// A number computed from stored values: arithmetic on key paths, counts and constants.
    case number(TranslatedCondition.Operand)
    /// `keyPath ?? constant`.
    case coalesced(KeyPathValue, Any?)
    /// A `Bool?` from `flatMap`: nil unless `nonNil`, else `value`.
    case optionalCondition(nonNil: TranslatedCondition, value: TranslatedCondition)
    /// `a.caseInsensitiveCompare(b)`, a `ComparisonResult` compared with a constant above it.
    case caseInsensitiveOrder(PredicateTranslation, PredicateTranslation)

    var shapeName: String {
        switch self {
        case .condition: "a condition"
        case .constant(let value): "a constant \(value.map { "\(type(of: $0))" } ?? "nil")"
        case .path(let path): "key path '\(path.description)'"
        case .count(let path): "the count of '\(path.description)'"
        case .number: "arithmetic"
        case .coalesced(let path, _): "'\(path.description) ?? …'"
        case .optionalCondition: "an optional condition"
        case .caseInsensitiveOrder: "a caseInsensitiveCompare result"
        }
    }
}

/// A key path from a variable: scope 0 is the evaluated object, other scopes are the elements of a
/// to-many relationship being quantified over.
struct KeyPathValue: Hashable {
    var scope: Int
    var components: [String]

    func appending(_ name: String) -> KeyPathValue { KeyPathValue(scope: scope, components: components + [name]) }
    var description: String { components.isEmpty ? "SELF" : components.joined(separator: ".") }
}

/// A condition under translation: like ``PredicateNode``, but its key paths may still start from
/// the element of a to-many relationship, until the quantifier around it (`contains(where:)`,
/// `allSatisfy`) is applied.
indirect enum TranslatedCondition {
    indirect enum Operand {
        case path(KeyPathValue)
        case count(KeyPathValue)
        case value(Value)
        case list([Value])
        case arithmetic(PredicateArithmetic, Operand, Operand)
        /// How many elements of `collection` satisfy `condition`, which reads them through `scope`.
        case subqueryCount(collection: KeyPathValue, scope: Int, condition: TranslatedCondition)

        /// Whether the operand reads the elements of `scope`.
        func depends(on scope: Int) -> Bool {
            switch self {
            case .path(let path), .count(let path): path.scope == scope
            case .value, .list: false
            case .arithmetic(_, let lhs, let rhs): lhs.depends(on: scope) || rhs.depends(on: scope)
            case .subqueryCount(let collection, _, let condition): collection.scope == scope || condition.depends(on: scope)
            }
        }
    }

    case constant(Bool)
    case not(TranslatedCondition)
    case and([TranslatedCondition])
    case or([TranslatedCondition])
    case comparison(Operand, PredicateComparison.Operator, PredicateComparison.Options, Operand, PredicateComparison.Modifier = .direct)

    /// Whether the condition reads the elements of `scope`.
    func depends(on scope: Int) -> Bool {
        switch self {
        case .constant: false
        case .not(let c): c.depends(on: scope)
        case .and(let cs), .or(let cs): cs.contains { $0.depends(on: scope) }
        case .comparison(let l, _, _, let r, _): l.depends(on: scope) || r.depends(on: scope)
        }
    }

    enum Quantifier { case any, all }

    /// The condition "some element (or every element) of `collection` satisfies self", where self
    /// reads the elements through `scope`.
    ///
    /// Where it can, the quantifier moves inward (`any` over `||`, `all` over `&&`, swapping under
    /// `!`) down to comparisons, which take it as their `ANY`/`ALL` modifier. Where conditions on
    /// the element must hold together (`contains { $0.a == 1 && $0.b == 2 }`), or the element is
    /// used in arithmetic, counted, or compared with itself, it becomes a subquery:
    /// `SUBQUERY(collection, $v, self).@count > 0` (any) or `SUBQUERY(collection, $v, NOT self).@count == 0` (all).
    func quantified(_ quantifier: Quantifier, scope: Int, over collection: KeyPathValue) -> TranslatedCondition {
        guard depends(on: scope) else {
            // Independent of the element: any → self and there is an element; all → self or none.
            let nonEmpty = TranslatedCondition.comparison(.count(collection), .greaterThan, [], .value(.int(0)))
            return quantifier == .any ? .and([self, nonEmpty]) : .or([self, .not(nonEmpty)])
        }
        if let distributed = distributed(quantifier, scope: scope, over: collection) { return distributed }
        let matching = Operand.subqueryCount(collection: collection, scope: scope, condition: quantifier == .any ? self : .not(self))
        return quantifier == .any
            ? .comparison(matching, .greaterThan, [], .value(.int(0)))
            : .comparison(matching, .equalTo, [], .value(.int(0)))
    }

    /// The quantifier moved down to the comparisons, or nil when they cannot take it.
    private func distributed(_ quantifier: Quantifier, scope: Int, over collection: KeyPathValue) -> TranslatedCondition? {
        switch self {
        case .constant:
            return self  // unreachable: constants do not depend on a scope
        case .not(let inner):
            return inner.distributed(quantifier == .any ? .all : .any, scope: scope, over: collection).map { .not($0) }
        case .or(let parts), .and(let parts):
            let isOr: Bool
            if case .or = self { isOr = true } else { isOr = false }
            if isOr != (quantifier == .any), parts.filter({ $0.depends(on: scope) }).count != 1 {
                return nil  // && under any (|| under all) of two conditions on the element
            }
            var mapped: [TranslatedCondition] = []
            for part in parts {
                guard part.depends(on: scope) else {
                    mapped.append(part)
                    continue
                }
                guard let quantified = part.distributed(quantifier, scope: scope, over: collection) else { return nil }
                mapped.append(quantified)
            }
            return isOr ? .or(mapped) : .and(mapped)
        case .comparison(let lhs, let op, let options, let rhs, let modifier):
            guard modifier == .direct, lhs.depends(on: scope) != rhs.depends(on: scope) else { return nil }
            // Only a plain key path of the element can carry the quantifier.
            func rebased(_ operand: Operand) -> Operand? {
                guard case .path(let path) = operand, path.scope == scope else { return nil }
                return .path(KeyPathValue(scope: collection.scope, components: collection.components + path.components))
            }
            let quantifiedModifier: PredicateComparison.Modifier = quantifier == .any ? .any : .all
            if rhs.depends(on: scope) {
                guard !op.isStringOperator, op != .in, op != .between, let element = rebased(rhs) else { return nil }
                return .comparison(element, op.flipped, options, lhs, quantifiedModifier)
            }
            guard let element = rebased(lhs) else { return nil }
            return .comparison(element, op, options, rhs, quantifiedModifier)
        }
    }

    /// The finished node.
    ///
    /// - Throws: when a key path starts from an element outside the subquery over it (an
    ///   internal inconsistency).
    func lowered() throws -> PredicateNode {
        try lowered(bound: [])
    }

    /// The node, with the elements of the scopes in `bound` read through subquery variables.
    private func lowered(bound: Set<Int>) throws -> PredicateNode {
        switch self {
        case .constant(let value): return .constant(value)
        case .not(let inner): return .not(try inner.lowered(bound: bound))
        case .and(let parts): return .and(try parts.map { try $0.lowered(bound: bound) })
        case .or(let parts): return .or(try parts.map { try $0.lowered(bound: bound) })
        case .comparison(let lhs, let op, let options, let rhs, let modifier):
            return .comparison(PredicateComparison(
                modifier: modifier, lhs: try Self.lower(lhs, bound: bound), op: op, options: options, rhs: try Self.lower(rhs, bound: bound)))
        }
    }

    /// The name of the subquery variable of a scope.
    private static func variable(_ scope: Int) -> String { "v\(scope)" }

    private static func lower(_ path: KeyPathValue, bound: Set<Int>) throws -> PredicateExpression {
        if path.scope == 0 { return .keyPath(path.components) }
        guard bound.contains(path.scope) else {
            throw ObjectGraphError(.unsupported, "#Predicate key path '\(path.description)' reads a variable that is not the fetched object")
        }
        return .variable(variable(path.scope), path.components)
    }

    private static func lower(_ operand: Operand, bound: Set<Int>) throws -> PredicateExpression {
        switch operand {
        case .value(let value): return .constant(value)
        case .list(let values): return .list(values)
        case .path(let path): return try lower(path, bound: bound)
        case .count(let path): return try lower(path.appending("@count"), bound: bound)
        case .arithmetic(let op, let lhs, let rhs):
            return .arithmetic(op, try lower(lhs, bound: bound), try lower(rhs, bound: bound))
        case .subqueryCount(let collection, let scope, let condition):
            return .subqueryCount(PredicateSubquery(
                collection: try lower(collection, bound: bound), variable: variable(scope),
                predicate: try condition.lowered(bound: bound.union([scope]))))
        }
    }
}

extension PredicateComparison.Operator {
    /// The operator with its operands swapped.
    var flipped: Self {
        switch self {
        case .lessThan: .greaterThan
        case .lessThanOrEqualTo: .greaterThanOrEqualTo
        case .greaterThan: .lessThan
        case .greaterThanOrEqualTo: .lessThanOrEqualTo
        default: self
        }
    }
}

/// Lets an `Optional` hidden in an `Any` be unwrapped.
protocol _OptionalUnwrapping {
    var unwrapped: Any? { get }
}

extension Optional: _OptionalUnwrapping {
    var unwrapped: Any? { self.map { $0 as Any } }
}

/// Foundation's `PredicateExpression` protocol (the module's own `PredicateExpression` is the
/// operand of a parsed comparison).
typealias SwiftPredicateExpression = Foundation.PredicateExpression
