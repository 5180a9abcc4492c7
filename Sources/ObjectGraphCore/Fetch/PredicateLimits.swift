import Foundation

// How deep and how large a predicate may be. Every walk of a predicate tree (parsing, in-memory
// evaluation, `predicateFormat`, SQL generation, equality and hashing) recurses once per level, so
// a bounded depth keeps each of them within a small thread stack; and the SQL of a predicate
// within these bounds fits SQLite's own limits (its parser stack, its expression depth and its
// number of bound values), so every store gives the same answer.

/// The limits every ``FetchPredicate`` is held to, however it was made.
enum PredicateLimits {
    /// The deepest a predicate may nest: see ``PredicateNode/depth``. SQLite 3.40's parser (a stack
    /// of 100 entries) overflows on SQL nested about 30 levels deep, and every level of a predicate
    /// may cost up to three entries; a predicate within this depth always compiles to SQL that
    /// SQLite accepts, and parses, evaluates and compiles within a 512 KiB thread stack.
    static let maximumDepth = 24

    /// How many parenthesized predicates (a run of parentheses directly inside one another counts
    /// one), expression parentheses, `NOT`s and signs (one level each), `modulus:by:` calls (two)
    /// and `SUBQUERY`s, `CAST`s and lists (four) may enclose one another in a format: enough for
    /// every format `predicateFormat` writes for a predicate within ``maximumDepth`` (which
    /// parenthesizes each compound inside another), few enough for the parser's stack.
    static let maximumNesting = 2 * maximumDepth + 2

    /// How many parentheses around predicates may enclose one another in a format. They add no
    /// level to the predicate (``maximumDepth`` counts its tree, not its brackets: NSPredicate reads
    /// `((((rank > 1))))` as `rank > 1`), and the parser reads parentheses directly inside one
    /// another without recursing; this bound only keeps a hostile format cheap to refuse.
    static let maximumParentheses = 1_000

    /// How many levels a `SUBQUERY` counts for: its SQL (`(SELECT COUNT(*) FROM … WHERE … AND (…))`)
    /// takes about as much of SQLite's parser stack as three levels of parentheses.
    static let subqueryDepth = 3

    /// The most values SQLite binds in one statement (`SQLITE_MAX_VARIABLE_NUMBER`, 32766).
    static let maximumBoundValues = 32_766

    /// Lists longer than this (`IN`, and `==` comparisons of one key path joined by `OR`) are bound
    /// as one JSON array in SQL rather than one value each.
    static let listBindingThreshold = 250

    /// The error for a predicate nested deeper than ``maximumDepth``.
    static func tooDeep(_ depth: Int) -> String {
        "the predicate nests \(depth) levels deep, more than the \(maximumDepth) levels allowed "
            + "(each NOT, AND/OR group, comparison, arithmetic operator and sign adds a level; a SUBQUERY adds \(subqueryDepth))"
    }

    /// The error for a format with more than ``maximumNesting`` parenthesized groups (and the like) in one another.
    static let tooNested =
        "the predicate nests more than the \(maximumDepth) levels allowed: more than \(maximumNesting) levels of parenthesized groups, NOTs, signs, lists and calls (a SUBQUERY, CAST or list counts 4, a function 2; parentheses directly inside parentheses count once) enclose one another"

    /// The error for a format with more than ``maximumParentheses`` parentheses in one another.
    static let tooManyParentheses =
        "the predicate is enclosed in more than the \(maximumParentheses) parentheses allowed in one another (the parser's limit: parentheses add no level to the predicate, which may nest \(maximumDepth) levels)"

    /// Checks a tree made in code (compounds of predicates, `#Predicate` translations), joining
    /// nested `AND`s into their `AND` and `OR`s into their `OR` when that makes it shallow enough.
    ///
    /// - Returns: the tree to keep, and the error to record when it is still too deep or needs
    ///   too many bound values.
    static func checked(_ node: PredicateNode) -> (node: PredicateNode, depth: Int, boundValues: Int, error: ObjectGraphError?) {
        var node = node
        var depth = node.depth
        if depth > maximumDepth {
            node = node.flattened
            depth = node.depth
        }
        if depth > maximumDepth {
            return (node, depth, 0, ObjectGraphError(.invalidFetchRequest, "Predicate too deep: " + tooDeep(depth)))
        }
        let count = node.boundValueBound
        return (node, depth, count, count > maximumBoundValues ? tooManyBoundValues(count) : nil)
    }

    /// The error for a tree whose SQL would bind `count` values, more than SQLite takes.
    static func tooManyBoundValues(_ count: Int) -> ObjectGraphError {
        ObjectGraphError(
            .invalidFetchRequest,
            "Predicate too large: it compares with \(count) values, more than the \(maximumBoundValues) SQLite binds in one statement "
                + "(put values compared with one key into an IN list, which has no limit)")
    }
}

// MARK: - Depth

extension PredicateNode {
    /// How deeply the predicate nests: 1 for a comparison or a constant, one more for each `NOT`
    /// and each `AND` or `OR` around it, plus the depth of the comparison's operands (one per
    /// arithmetic operator, ``PredicateLimits/subqueryDepth`` plus the predicate's depth for a
    /// `SUBQUERY`). Recurses as deep as the tree: call it on trees known to be bounded (the parser
    /// measures as it builds).
    var depth: Int {
        switch self {
        case .constant: 1
        case .not(let node): 1 + node.depth
        case .and(let nodes), .or(let nodes): 1 + (nodes.lazy.map(\.depth).max() ?? 0)
        case .comparison(let comparison): comparison.depth
        }
    }

    /// The tree with every `AND` inside an `AND` (and `OR` inside an `OR`) spliced into it, which
    /// means the same.
    var flattened: PredicateNode {
        switch self {
        case .constant, .comparison: return self
        case .not(let node): return .not(node.flattened)
        case .and(let nodes):
            return .and(nodes.flatMap { node -> [PredicateNode] in
                if case .and(let inner) = node.flattened { return inner }
                return [node.flattened]
            })
        case .or(let nodes):
            return .or(nodes.flatMap { node -> [PredicateNode] in
                if case .or(let inner) = node.flattened { return inner }
                return [node.flattened]
            })
        }
    }
}

extension PredicateComparison {
    var depth: Int { 1 + max(lhs.depth, rhs.depth) }
}

extension PredicateExpression {
    /// 0 for a value, a list or a key path; one more than its deeper operand for arithmetic;
    /// ``PredicateLimits/subqueryDepth`` more than its predicate for a `SUBQUERY`.
    var depth: Int {
        switch self {
        case .constant, .list, .keyPath, .variable: 0
        case .arithmetic(_, let lhs, let rhs): 1 + max(lhs.depth, rhs.depth)
        case .subqueryCount(let subquery): PredicateLimits.subqueryDepth + subquery.predicate.depth
        }
    }
}

// MARK: - Bound values

extension PredicateNode {
    /// At least as many values as the SQL of the predicate binds (``SQLPredicateCompiler`` binds
    /// no more): one per value compared (two for `BEGINSWITH`, which becomes a range), one per
    /// element of a short list and one for a long list (bound as JSON), and the same for the
    /// `==` comparisons of an `OR` that the compiler joins into one list.
    var boundValueBound: Int {
        switch self {
        case .constant: return 0
        case .not(let node): return node.boundValueBound
        case .and(let nodes): return nodes.reduce(0) { $0 + $1.boundValueBound }
        case .or(let nodes):
            return SQLEqualityGroups.split(nodes).reduce(0) { sum, part in
                switch part {
                case .group(let group): sum + PredicateExpression.listBound(group.values.count)
                case .single(let node): sum + node.boundValueBound
                }
            }
        case .comparison(let comparison):
            let perValue = comparison.op == .beginsWith ? 2 : 1
            return comparison.lhs.boundValueBound(perValue: perValue) + comparison.rhs.boundValueBound(perValue: perValue)
        }
    }
}

extension PredicateExpression {
    static func listBound(_ count: Int) -> Int { count > PredicateLimits.listBindingThreshold ? 1 : count }

    func boundValueBound(perValue: Int) -> Int {
        switch self {
        case .constant(let value): value.isNull ? 0 : perValue
        case .list(let values): Self.listBound(values.count)
        case .keyPath, .variable: 0
        case .arithmetic(_, let lhs, let rhs): lhs.boundValueBound(perValue: 1) + rhs.boundValueBound(perValue: 1)
        case .subqueryCount(let subquery): subquery.predicate.boundValueBound
        }
    }
}

/// The `key == value` comparisons of an `OR` that SQL tests as one `key IN (…)`: direct `==`
/// comparisons of a key path with a value other than nil, grouped by key path and options.
struct SQLEqualityGroups {
    struct Group {
        var keyPath: PredicateExpression
        var options: PredicateComparison.Options
        var values: [Value]
        /// The comparisons the group stands for.
        var members: [PredicateNode]
    }

    /// A subpredicate of the `OR`, or a group standing for several.
    enum Part {
        case group(Group)
        case single(PredicateNode)
    }

    /// The groups of two comparisons or more, each where its first comparison was, and the other
    /// subpredicates, in order.
    static func split(_ nodes: [PredicateNode]) -> [Part] {
        struct Key: Hashable {
            var keyPath: PredicateExpression
            var options: PredicateComparison.Options
        }
        var groupIndexes: [Key: Int] = [:]
        var groups: [Group] = []
        enum Slot { case group(Int), single(PredicateNode) }
        var slots: [Slot] = []
        for node in nodes {
            guard case .comparison(let c) = node, let (keyPath, value) = equality(c) else {
                slots.append(.single(node))
                continue
            }
            let key = Key(keyPath: keyPath, options: c.options)
            if let index = groupIndexes[key] {
                groups[index].values.append(value)
                groups[index].members.append(node)
            } else {
                groupIndexes[key] = groups.count
                slots.append(.group(groups.count))
                groups.append(Group(keyPath: keyPath, options: c.options, values: [value], members: [node]))
            }
        }
        return slots.map { slot in
            switch slot {
            case .single(let node): return .single(node)
            case .group(let index):
                // A group of one is a plain comparison.
                return groups[index].members.count == 1 ? .single(groups[index].members[0]) : .group(groups[index])
            }
        }
    }

    /// The key path and the value of `keyPath == value` (either way round), when not nil.
    private static func equality(_ c: PredicateComparison) -> (PredicateExpression, Value)? {
        guard c.modifier == .direct, c.op == .equalTo else { return nil }
        switch (c.lhs, c.rhs) {
        case (.keyPath(let path), .constant(let value)), (.constant(let value), .keyPath(let path)):
            guard !value.isNull else { return nil }
            return (.keyPath(path), value)
        case (.variable(let name, let path), .constant(let value)), (.constant(let value), .variable(let name, let path)):
            guard !value.isNull else { return nil }
            return (.variable(name, path), value)
        default:
            return nil
        }
    }
}
