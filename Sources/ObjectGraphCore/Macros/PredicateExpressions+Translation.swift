import Foundation

// One conformance per `PredicateExpressions` node, as swift-foundation converts predicates to
// NSPredicate (`NSPredicateConversion.swift`): the root dispatches with `as? any`, and a subtree
// that has no conformance or fails to translate is evaluated once as a constant when it uses no
// variable.

/// A node that knows its translation.
private protocol TranslatableExpression: SwiftPredicateExpression {
    func translate(_ translator: inout PredicateTranslator) throws -> PredicateTranslation
}

extension SwiftPredicateExpression {
    /// The node's translation, or its value when it uses no variable.
    ///
    /// - Throws: ``ObjectGraphError/unsupported`` naming the node.
    func translation(_ translator: inout PredicateTranslator) throws -> PredicateTranslation {
        var caught: (any Error)?
        if let node = self as? any TranslatableExpression {
            do { return try node.translate(&translator) } catch { caught = error }
        }
        if let value = try? evaluate(PredicateBindings()) { return .constant(value) }
        throw caught ?? PredicateTranslator.unsupported(self, "ObjectGraph does not translate this kind of expression")
    }
}

// MARK: - Leaves

extension PredicateExpressions.Variable: TranslatableExpression {
    fileprivate func translate(_ translator: inout PredicateTranslator) throws -> PredicateTranslation {
        guard let path = translator.bindings[key] else {
            throw PredicateTranslator.unsupported(self, "the variable is not bound to the fetched object")
        }
        return .path(path)
    }
}

extension PredicateExpressions.Value: TranslatableExpression {
    fileprivate func translate(_ translator: inout PredicateTranslator) throws -> PredicateTranslation {
        .constant(value)
    }
}

extension PredicateExpressions.NilLiteral: TranslatableExpression {
    fileprivate func translate(_ translator: inout PredicateTranslator) throws -> PredicateTranslation {
        .constant(nil)
    }
}

/// The `count` and `isEmpty` key paths of the collections a to-many relationship is.
private protocol ToManyCollection {
    static var countKeyPath: AnyKeyPath { get }
    static var isEmptyKeyPath: AnyKeyPath { get }
}

extension Set: ToManyCollection {
    fileprivate static var countKeyPath: AnyKeyPath { \Set<Element>.count }
    fileprivate static var isEmptyKeyPath: AnyKeyPath { \Set<Element>.isEmpty }
}

extension Array: ToManyCollection {
    fileprivate static var countKeyPath: AnyKeyPath { \Array<Element>.count }
    fileprivate static var isEmptyKeyPath: AnyKeyPath { \Array<Element>.isEmpty }
}

extension PredicateExpressions.KeyPath: TranslatableExpression {
    fileprivate func translate(_ translator: inout PredicateTranslator) throws -> PredicateTranslation {
        let base = try translator.translate(root)
        guard case .path(let path) = base else {
            throw PredicateTranslator.unsupported(self, "key path \(keyPath) follows \(base.shapeName), not a stored property")
        }
        if let model = Root.Output.self as? any ManagedModel.Type {
            if keyPath == model._objectIDKeyPath { return .path(path) }  // the object itself, compared by ID
            guard let name = model._managedPropertyName(for: keyPath) else {
                throw PredicateTranslator.unsupported(
                    self, "\(keyPath) is not a stored property of @Managed class \(Root.Output.self) (computed and @Transient properties are not in the store)")
            }
            return .path(path.appending(name))
        }
        if let collection = Root.Output.self as? any ToManyCollection.Type {
            if keyPath == collection.countKeyPath { return .count(path) }
            if keyPath == collection.isEmptyKeyPath {
                return .condition(.comparison(.count(path), .equalTo, [], .value(.int(0))))
            }
        }
        throw PredicateTranslator.unsupported(self, "\(keyPath) is not a property of a @Managed class, nor the count or isEmpty of a to-many relationship")
    }
}

// MARK: - Logic

extension PredicateExpressions.Conjunction: TranslatableExpression {
    fileprivate func translate(_ translator: inout PredicateTranslator) throws -> PredicateTranslation {
        .condition(.and([try translator.condition(lhs), try translator.condition(rhs)]))
    }
}

extension PredicateExpressions.Disjunction: TranslatableExpression {
    fileprivate func translate(_ translator: inout PredicateTranslator) throws -> PredicateTranslation {
        .condition(.or([try translator.condition(lhs), try translator.condition(rhs)]))
    }
}

extension PredicateExpressions.Negation: TranslatableExpression {
    fileprivate func translate(_ translator: inout PredicateTranslator) throws -> PredicateTranslation {
        .condition(.not(try translator.condition(wrapped)))
    }
}

// MARK: - Comparisons

extension PredicateExpressions.Equal: TranslatableExpression {
    fileprivate func translate(_ translator: inout PredicateTranslator) throws -> PredicateTranslation {
        .condition(try translator.compare(translator.translate(lhs), .equalTo, translator.translate(rhs), node: self))
    }
}

extension PredicateExpressions.NotEqual: TranslatableExpression {
    fileprivate func translate(_ translator: inout PredicateTranslator) throws -> PredicateTranslation {
        .condition(try translator.compare(translator.translate(lhs), .notEqualTo, translator.translate(rhs), node: self))
    }
}

extension PredicateExpressions.Comparison: TranslatableExpression {
    fileprivate func translate(_ translator: inout PredicateTranslator) throws -> PredicateTranslation {
        let op: PredicateComparison.Operator = switch self.op {
        case .lessThan: .lessThan
        case .lessThanOrEqual: .lessThanOrEqualTo
        case .greaterThan: .greaterThan
        case .greaterThanOrEqual: .greaterThanOrEqualTo
        }
        return .condition(try translator.compare(translator.translate(lhs), op, translator.translate(rhs), node: self))
    }
}

// MARK: - Arithmetic

extension PredicateExpressions.Arithmetic: TranslatableExpression {
    fileprivate func translate(_ translator: inout PredicateTranslator) throws -> PredicateTranslation {
        let op: PredicateArithmetic = switch self.op {
        case .add: .add
        case .subtract: .subtract
        case .multiply: .multiply
        }
        return try arithmetic(op, lhs, rhs, translator: &translator, node: self)
    }
}

extension PredicateExpressions.IntDivision: TranslatableExpression {
    fileprivate func translate(_ translator: inout PredicateTranslator) throws -> PredicateTranslation {
        try arithmetic(.divide, lhs, rhs, translator: &translator, node: self)
    }
}

extension PredicateExpressions.FloatDivision: TranslatableExpression {
    fileprivate func translate(_ translator: inout PredicateTranslator) throws -> PredicateTranslation {
        try arithmetic(.divide, lhs, rhs, translator: &translator, node: self)
    }
}

extension PredicateExpressions.IntRemainder: TranslatableExpression {
    fileprivate func translate(_ translator: inout PredicateTranslator) throws -> PredicateTranslation {
        try arithmetic(.remainder, lhs, rhs, translator: &translator, node: self)
    }
}

extension PredicateExpressions.UnaryMinus: TranslatableExpression {
    fileprivate func translate(_ translator: inout PredicateTranslator) throws -> PredicateTranslation {
        let operand = try translator.translate(wrapped)
        if case .constant = operand { return .constant(try evaluate(PredicateBindings())) }
        guard let number = PredicateTranslator.operand(operand) else {
            throw PredicateTranslator.unsupported(self, "- applies to a number, not \(operand.shapeName)")
        }
        return .number(.arithmetic(.subtract, .value(.int(0)), number))
    }
}

/// `lhs op rhs` on numbers: stored numeric properties, counts, constants and other arithmetic.
/// The types of the operands decide integer or real arithmetic, in Swift and in the store alike.
private func arithmetic(
    _ op: PredicateArithmetic, _ lhs: some SwiftPredicateExpression, _ rhs: some SwiftPredicateExpression,
    translator: inout PredicateTranslator, node: some SwiftPredicateExpression
) throws -> PredicateTranslation {
    let left = try translator.translate(lhs)
    let right = try translator.translate(rhs)
    if case .constant = left, case .constant = right { return .constant(try node.evaluate(PredicateBindings())) }
    guard let a = PredicateTranslator.operand(left), let b = PredicateTranslator.operand(right) else {
        throw PredicateTranslator.unsupported(
            node, "arithmetic takes stored numbers, counts and constants, not \(left.shapeName) and \(right.shapeName)")
    }
    return .number(.arithmetic(op, a, b))
}

// MARK: - Optionals

extension PredicateExpressions.OptionalFlatMap: TranslatableExpression {
    fileprivate func translate(_ translator: inout PredicateTranslator) throws -> PredicateTranslation {
        guard case .path(let path) = try translator.translate(wrapped) else {
            throw PredicateTranslator.unsupported(self, "flatMap applies to a stored optional property")
        }
        translator.bindings[variable.key] = path
        let nonNil = TranslatedCondition.comparison(.path(path), .notEqualTo, [], .value(.null))
        switch try translator.translate(transform) {
        case .path(let result):
            return .path(result)  // optional chaining: nil when the wrapped value is
        case .condition(let condition):
            return .optionalCondition(nonNil: nonNil, value: condition)
        case .optionalCondition(let innerNonNil, let value):
            return .optionalCondition(nonNil: .and([nonNil, innerNonNil]), value: value)
        case let other:
            throw PredicateTranslator.unsupported(self, "its closure gives \(other.shapeName)")
        }
    }
}

extension PredicateExpressions.NilCoalesce: TranslatableExpression {
    fileprivate func translate(_ translator: inout PredicateTranslator) throws -> PredicateTranslation {
        let left = try translator.translate(lhs)
        let right = try translator.translate(rhs)
        switch (left, right) {
        case (.path(let path), .constant(let fallback)):
            return .coalesced(path, fallback)
        case (.optionalCondition(let nonNil, let value), .constant(let fallback as Bool)):
            return .condition(fallback ? .or([.not(nonNil), value]) : .and([nonNil, value]))
        case (.optionalCondition(let nonNil, let value), .condition(let fallback)):
            return .condition(.or([.and([nonNil, value]), .and([.not(nonNil), fallback])]))
        default:
            throw PredicateTranslator.unsupported(self, "?? takes a stored optional property and a constant, not \(left.shapeName) and \(right.shapeName)")
        }
    }
}

extension PredicateExpressions.ForcedUnwrap: TranslatableExpression {
    fileprivate func translate(_ translator: inout PredicateTranslator) throws -> PredicateTranslation {
        // A fetch cannot trap: a nil value compares as nil (false for ordering, unequal to values).
        switch try translator.translate(inner) {
        case .path(let path): return .path(path)
        case .optionalCondition(let nonNil, let value): return .condition(.and([nonNil, value]))
        case let other: throw PredicateTranslator.unsupported(self, "! applies to a stored optional property, not \(other.shapeName)")
        }
    }
}

// MARK: - Strings

extension PredicateExpressions.SequenceStartsWith: TranslatableExpression {
    fileprivate func translate(_ translator: inout PredicateTranslator) throws -> PredicateTranslation {
        .condition(try translator.compare(translator.translate(base), .beginsWith, translator.translate(prefix), node: self))
    }
}

extension PredicateExpressions.CollectionContainsCollection: TranslatableExpression {
    fileprivate func translate(_ translator: inout PredicateTranslator) throws -> PredicateTranslation {
        let text = try translator.translate(base)
        let part = try translator.translate(other)
        if case .constant = text, case .path = part {
            // "constant".contains($0.title): the title is a substring of the constant.
            return .condition(try translator.compare(part, .in, text, node: self))
        }
        return .condition(try translator.compare(text, .contains, part, node: self))
    }
}

extension PredicateExpressions.StringCaseInsensitiveCompare: TranslatableExpression {
    fileprivate func translate(_ translator: inout PredicateTranslator) throws -> PredicateTranslation {
        .caseInsensitiveOrder(try translator.translate(root), try translator.translate(other))
    }
}

extension PredicateExpressions.StringLocalizedStandardContains: TranslatableExpression {
    fileprivate func translate(_ translator: inout PredicateTranslator) throws -> PredicateTranslation {
        .condition(try translator.compare(
            translator.translate(root), .contains, translator.translate(other), options: [.caseInsensitive, .diacriticInsensitive], node: self))
    }
}

// MARK: - Collections

extension PredicateExpressions.SequenceContains: TranslatableExpression {
    fileprivate func translate(_ translator: inout PredicateTranslator) throws -> PredicateTranslation {
        let collection = try translator.translate(sequence)
        let member = try translator.translate(element)
        switch (collection, member) {
        case (.constant(let constant), .path(let path)):
            // [a, b].contains($0.x): x IN {a, b}.
            guard let values = PredicateTranslator.list(of: constant) else {
                throw PredicateTranslator.unsupported(self, "the collection holds values predicates do not compare")
            }
            return .condition(.comparison(.path(path), .in, [], .list(values)))
        case (.path(let path), .constant(let constant)):
            // $0.tags.contains(tag): membership in a to-many relationship.
            guard let value = PredicateTranslator.value(of: constant) else {
                throw PredicateTranslator.unsupported(self, "the element is of a type predicates do not compare")
            }
            return .condition(.comparison(.path(path), .contains, [], .value(value)))
        default:
            throw PredicateTranslator.unsupported(self, "contains(_:) takes a constant collection and a stored property, or a to-many relationship and a constant")
        }
    }
}

extension PredicateExpressions.SequenceContainsWhere: TranslatableExpression {
    fileprivate func translate(_ translator: inout PredicateTranslator) throws -> PredicateTranslation {
        try quantify(.any, sequence: sequence, variable: variable.key, test: test, translator: &translator, node: self)
    }
}

extension PredicateExpressions.SequenceAllSatisfy: TranslatableExpression {
    fileprivate func translate(_ translator: inout PredicateTranslator) throws -> PredicateTranslation {
        try quantify(.all, sequence: sequence, variable: variable.key, test: test, translator: &translator, node: self)
    }
}

private func quantify(
    _ quantifier: TranslatedCondition.Quantifier, sequence: some SwiftPredicateExpression, variable: PredicateExpressions.VariableID,
    test: some SwiftPredicateExpression, translator: inout PredicateTranslator, node: some SwiftPredicateExpression
) throws -> PredicateTranslation {
    guard case .path(let collection) = try translator.translate(sequence) else {
        throw PredicateTranslator.unsupported(node, "its collection is not a to-many relationship")
    }
    let scope = translator.makeScope()
    translator.bindings[variable] = KeyPathValue(scope: scope, components: [])
    let condition = try translator.condition(test)
    return .condition(condition.quantified(quantifier, scope: scope, over: collection))
}

// MARK: - Ranges

/// A range's bounds, for `(a...b).contains(x)` and `(a..<b).contains(x)`.
private protocol RangeBounds {
    var boundValues: (lower: Any, upper: Any, isClosed: Bool)? { get }
}

extension ClosedRange: RangeBounds {
    fileprivate var boundValues: (lower: Any, upper: Any, isClosed: Bool)? { (lowerBound, upperBound, true) }
}

extension Range: RangeBounds {
    fileprivate var boundValues: (lower: Any, upper: Any, isClosed: Bool)? { (lowerBound, upperBound, false) }
}

extension PredicateExpressions.RangeExpressionContains: TranslatableExpression {
    fileprivate func translate(_ translator: inout PredicateTranslator) throws -> PredicateTranslation {
        guard case .constant(let constant) = try translator.translate(range), let bounds = (constant as? any RangeBounds)?.boundValues,
              case .path(let path) = try translator.translate(element),
              let lower = PredicateTranslator.value(of: bounds.lower), let upper = PredicateTranslator.value(of: bounds.upper) else {
            throw PredicateTranslator.unsupported(self, "contains(_:) on a range takes a constant closed or half-open range and a stored property")
        }
        if bounds.isClosed {
            return .condition(.comparison(.path(path), .between, [], .list([lower, upper])))
        }
        return .condition(.and([
            .comparison(.path(path), .greaterThanOrEqualTo, [], .value(lower)),
            .comparison(.path(path), .lessThan, [], .value(upper)),
        ]))
    }
}
