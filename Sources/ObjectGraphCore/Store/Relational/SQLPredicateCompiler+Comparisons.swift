import Foundation

// How the compiler turns one comparison of values into SQL, with in-memory semantics.

extension SQLPredicateCompiler {
    func scalar(_ lhs: Term, _ op: Operator, _ rhs: Term, _ options: Options) throws -> SQLFragment {
        if case .constant(let x) = lhs, let operand = rhs.constantOperand {
            return constant(try PredicateEvaluator.compare(x, op, operand, options: options))
        }
        switch op {
        case .equalTo:
            return try equality(lhs, rhs, options, nullsEqual: true)
        case .notEqualTo:
            return try inequality(lhs, rhs, options)
        case .lessThan, .lessThanOrEqualTo, .greaterThan, .greaterThanOrEqualTo:
            return try ordering(lhs, op, rhs, options)
        case .beginsWith, .endsWith, .contains, .like, .matches:
            return try stringOperation(op, lhs, rhs, options)
        case .in:
            if case .list(let values) = rhs { return try inList(lhs, values, options) }
            return try stringOperation(.contains, rhs, lhs, options)  // `x IN string`: containment
        case .between:
            guard case .list(let bounds) = rhs, bounds.count == 2 else {
                throw ObjectGraphError(.invalidFetchRequest, "BETWEEN needs a list of two values")
            }
            let low = try ordering(lhs, .greaterThanOrEqualTo, .constant(bounds[0]), options)
            let high = try ordering(lhs, .lessThanOrEqualTo, .constant(bounds[1]), options)
            return "(\(low) AND \(high))"
        }
    }

    func misuse() -> ObjectGraphError {
        ObjectGraphError(.invalidFetchRequest, "A list or a to-many key path is not allowed here")
    }

    /// Folds a string expression for `[c]`/`[d]`.
    private func folded(_ expression: SQLExpression, _ options: Options) throws -> SQLFragment {
        guard expression.valueClass == .string, !options.isEmpty else { return expression.fragment }
        guard dialect.predicates.hasStringFunctions else { throw NotInDialect(what: "[c] and [d]") }
        return "og_fold(\(expression.fragment), \(raw: String(options.rawValue)))"
    }

    /// The value to bind for a constant compared with values of `valueClass`, or nil when they
    /// can never be equal or ordered.
    func bindable(_ value: Value, for valueClass: SQLValueClass, _ options: Options) -> Value? {
        if value.isNaN { return nil }  // NaN equals nothing and orders nowhere
        switch (valueClass, value) {
        case (.numeric, .int), (.numeric, .double): return value
        case (.numeric, .bool(let b)): return .int(b ? 1 : 0)
        case (.numeric, .decimal(let d)): return .double(NSDecimalNumber(decimal: d).doubleValue)
        case (.numeric, .date(let d)): return .double(d.timeIntervalSinceReferenceDate)
        case (.string, .string(let s)): return .string(PredicateStrings.fold(s, options: options))
        case (.data, .data), (.uuid, .uuid), (.url, .url): return value
        case (.object(let root), .objectID(let id)):
            guard ObjectIdentifier(id.entity.rootEntity) == root, let pk = id.primaryKey,
                  store == nil || id.persistentStore === store else { return nil }
            return .int(pk)  // a temporary ID never matches a stored row
        default: return nil
        }
    }

    /// `==`, or membership when `nullsEqual` is false (nil is then never equal to anything).
    func equality(_ lhs: Term, _ rhs: Term, _ options: Options, nullsEqual: Bool) throws -> SQLFragment {
        switch (lhs, rhs) {
        case (.constant(let a), .constant(let b)):
            return constant((nullsEqual || (!a.isNull && !b.isNull)) && PredicateEvaluator.isEqual(a, b, options: options))
        case (.expression(let e), .constant(let c)), (.constant(let c), .expression(let e)):
            if c.isNull { return nullsEqual ? "\(e.fragment) IS NULL" : constant(false) }
            guard let bound = bindable(c, for: e.valueClass, options) else { return constant(false) }
            return "\(try folded(e, options)) = \(bind: bound)"
        case (.expression(let a), .expression(let b)):
            guard a.valueClass == b.valueClass else {
                return nullsEqual ? "(\(a.fragment) IS NULL AND \(b.fragment) IS NULL)" : constant(false)
            }
            let same: SQLFragment = "\(try folded(a, options)) \(raw: nullsEqual ? dialect.predicates.same : "=") \(try folded(b, options))"
            return numbersOnly(numbersOnly(same, a), b)
        default:
            throw misuse()
        }
    }

    /// `!=`: true when exactly one side is nil.
    private func inequality(_ lhs: Term, _ rhs: Term, _ options: Options) throws -> SQLFragment {
        switch (lhs, rhs) {
        case (.constant(let a), .constant(let b)):
            return constant(!PredicateEvaluator.isEqual(a, b, options: options))
        case (.expression(let e), .constant(let c)), (.constant(let c), .expression(let e)):
            if c.isNull { return "\(e.fragment) IS NOT NULL" }
            guard let bound = bindable(c, for: e.valueClass, options) else { return constant(true) }
            return "\(try folded(e, options)) \(raw: dialect.predicates.notSame) \(bind: bound)"
        case (.expression(let a), .expression(let b)):
            guard a.valueClass == b.valueClass else { return "NOT (\(a.fragment) IS NULL AND \(b.fragment) IS NULL)" }
            // Two NaNs are not equal in memory (and not the same to PostgreSQL either way).
            let different: SQLFragment = "\(try folded(a, options)) \(raw: dialect.predicates.notSame) \(try folded(b, options))"
            guard a.mayHoldNaN || b.mayHoldNaN else { return different }
            let numbers = [a, b].filter(\.mayHoldNaN).map { dialect.predicates.isNumber($0.fragment.sql) }
            return "(\(different) OR NOT (\(raw: numbers.joined(separator: " AND "))))"
        default:
            throw misuse()
        }
    }

    private func ordering(_ lhs: Term, _ op: Operator, _ rhs: Term, _ options: Options) throws -> SQLFragment {
        let symbol: String
        switch op {
        case .lessThan: symbol = "<"
        case .lessThanOrEqualTo: symbol = "<="
        case .greaterThan: symbol = ">"
        default: symbol = ">="
        }
        func orderable(_ valueClass: SQLValueClass) -> Bool {
            if case .object = valueClass { return false }
            return true
        }
        switch (lhs, rhs) {
        case (.constant(let a), .constant(let b)):
            return constant(PredicateEvaluator.isOrdered(a, op, b, options: options))
        case (.expression(let e), .constant(let c)):
            guard orderable(e.valueClass), !c.isNull, let bound = bindable(c, for: e.valueClass, options) else { return constant(false) }
            return numbersOnly("\(try folded(e, options)) \(raw: symbol) \(bind: bound)", e)
        case (.constant(let c), .expression(let e)):
            guard orderable(e.valueClass), !c.isNull, let bound = bindable(c, for: e.valueClass, options) else { return constant(false) }
            return numbersOnly("\(bind: bound) \(raw: symbol) \(try folded(e, options))", e)
        case (.expression(let a), .expression(let b)):
            guard a.valueClass == b.valueClass, orderable(a.valueClass) else { return constant(false) }
            return numbersOnly(numbersOnly("\(try folded(a, options)) \(raw: symbol) \(try folded(b, options))", a), b)
        default:
            throw misuse()
        }
    }

    /// An ordering of a numeric expression holds only for numbers: a REAL column stores NaN as a
    /// BLOB in SQLite (SQLiteValues.swift), which SQLite orders after every number, and as NaN in
    /// PostgreSQL, which orders it above every number; NaN orders nowhere in memory. The range on
    /// the column still uses its index.
    private func numbersOnly(_ comparison: SQLFragment, _ expression: SQLExpression) -> SQLFragment {
        guard expression.mayHoldNaN else { return comparison }
        return "(\(comparison) AND \(raw: dialect.predicates.isNumber(expression.fragment.sql)))"
    }

    /// `x IN {…}`: nil is in no list.
    func inList(_ lhs: Term, _ values: [Value], _ options: Options) throws -> SQLFragment {
        switch lhs {
        case .constant(let x):
            return constant(PredicateEvaluator.isMember(x, of: values, options: options))
        case .expression(let e):
            var seen: Set<Value> = []
            let bound = values.compactMap { $0.isNull ? nil : bindable($0, for: e.valueClass, options) }.filter { seen.insert($0).inserted }
            if bound.isEmpty { return constant(false) }
            if bound.count > PredicateLimits.listBindingThreshold {
                if dialect.predicates.hasLongLists { return SQLJSONList.membership(try folded(e, options), e.valueClass, bound) }
                // One parameter a value: PostgreSQL takes at most 65,535 in a statement.
                if bound.count > Self.longestListOfParameters { throw NotInDialect(what: "a list of \(bound.count) values") }
            }
            let placeholders = SQLFragment.joined(bound.map { "\(bind: $0)" }, separator: ", ")
            return "\(try folded(e, options)) IN (\(placeholders))"
        default:
            throw misuse()
        }
    }

    /// BEGINSWITH, ENDSWITH, CONTAINS, LIKE, MATCHES: false unless both sides are strings.
    private func stringOperation(_ op: Operator, _ lhs: Term, _ rhs: Term, _ options: Options) throws -> SQLFragment {
        func operand(_ term: Term) throws -> SQLFragment? {
            switch term {
            case .constant(.string(let s)): return "\(bind: .string(s))"
            case .constant: return nil
            case .expression(let e): return e.valueClass == .string ? e.fragment : nil
            default: throw misuse()
            }
        }
        if case .constant(let x) = lhs, case .constant(let y) = rhs {
            return constant(try PredicateEvaluator.compare(x, op, y, options: options))
        }
        guard let text = try operand(lhs), let pattern = try operand(rhs) else { return constant(false) }
        if op == .beginsWith, options.isEmpty, case .expression(let e) = lhs, case .constant(.string(let prefix)) = rhs {
            return prefixRange(e.fragment, prefix)
        }
        if !dialect.predicates.hasStringFunctions { return try builtIn(op, text, pattern, rhs, options) }
        if let like = asciiCaseInsensitive(op, text, rhs, options) { return like }
        if op == .matches, case .constant(.string(let p)) = rhs {
            // Report a bad pattern now, not from inside SQLite.
            _ = try PredicateStrings.regularExpression(
                PredicateStrings.fold(p, options: options.intersection(.diacriticInsensitive)),
                caseInsensitive: options.isCaseInsensitive)
        }
        return "\(raw: SQLiteFunctions.name(of: op))(\(text), \(pattern), \(raw: String(options.rawValue)))"
    }

    /// The case- and diacritic-sensitive string operators in SQL's own functions, each on Unicode
    /// scalars as in memory (PostgreSQL's characters, in its "C" collation): `BEGINSWITH`,
    /// `ENDSWITH`, `CONTAINS`, and `LIKE` with a constant pattern (its `*`, `?` and `\\` become
    /// `%`, `_` and `\\`, and its own `%` and `_` are escaped).
    func builtIn(_ op: Operator, _ text: SQLFragment, _ pattern: SQLFragment, _ rhs: Term, _ options: Options) throws -> SQLFragment {
        guard options.isEmpty else { throw NotInDialect(what: "[c] and [d]") }
        switch op {
        case .beginsWith: return "starts_with(\(text), \(pattern))"
        case .endsWith: return "(right(\(text), length(\(pattern))) = \(pattern))"
        case .contains: return "(strpos(\(text), \(pattern)) > 0)"
        case .like:
            guard case .constant(.string(let p)) = rhs else { throw NotInDialect(what: "LIKE with a pattern that is not a constant") }
            return "\(text) LIKE \(bind: .string(Self.sqlLikePattern(p)))"
        default:
            throw NotInDialect(what: "MATCHES")
        }
    }

    /// A predicate's `LIKE` pattern (`*`, `?`, `\\` escapes the next character) as SQL's, with `\\`
    /// as its escape character.
    static func sqlLikePattern(_ pattern: String) -> String {
        var result = ""
        var escaped = false
        for scalar in pattern.unicodeScalars {
            if escaped {
                if scalar == "%" || scalar == "_" || scalar == "\\" { result += "\\" }
                result.unicodeScalars.append(scalar)
                escaped = false
            } else if scalar == "\\" {
                escaped = true
            } else if scalar == "*" {
                result += "%"
            } else if scalar == "?" {
                result += "_"
            } else {
                if scalar == "%" || scalar == "_" { result += "\\" }
                result.unicodeScalars.append(scalar)
            }
        }
        if escaped { result += "\\\\" }
        return result
    }

    /// A case-insensitive `BEGINSWITH`, `ENDSWITH`, `CONTAINS` or `LIKE` with an ASCII pattern,
    /// as SQLite's own `LIKE` for ASCII text (which it folds as memory does: A to Z as a to z, and
    /// no diacritics to remove) and the folding function for the rest; nil for other comparisons.
    /// SQLite then calls Swift only for the rows whose text is not ASCII.
    private func asciiCaseInsensitive(_ op: Operator, _ text: SQLFragment, _ rhs: Term, _ options: Options) -> SQLFragment? {
        guard options.isCaseInsensitive, case .constant(.string(let p)) = rhs,
              p.unicodeScalars.allSatisfy({ $0.value > 0 && $0.value < 0x80 }) else { return nil }
        let escaped = Self.sqlLikePattern(p.unicodeScalars.map { "*?\\".unicodeScalars.contains($0) ? "\\\($0)" : "\($0)" }.joined())
        let pattern: String
        switch op {
        case .beginsWith: pattern = escaped + "%"
        case .endsWith: pattern = "%" + escaped
        case .contains: pattern = "%" + escaped + "%"
        case .like: pattern = Self.sqlLikePattern(p)
        default: return nil
        }
        let function = SQLiteFunctions.name(of: op)
        // SQLite's LIKE has no escape character unless it is given one.
        let ascii: SQLFragment = "\(text) LIKE \(bind: .string(pattern))\(raw: pattern.contains("\\") ? " ESCAPE '\\'" : "")"
        return "(CASE WHEN length(CAST(\(text) AS BLOB)) = length(\(text)) THEN \(ascii) ELSE \(raw: function)(\(text), \(bind: .string(p)), \(raw: String(options.rawValue))) END)"
    }

    /// The most values a list binds one parameter each, where the dialect has no long lists.
    static let longestListOfParameters = 30_000

    /// Case-sensitive `BEGINSWITH` as a range an index can serve: `x >= prefix AND x < successor`,
    /// where the successor is the prefix with its last scalar incremented (exact in BINARY order).
    private func prefixRange(_ expression: SQLFragment, _ prefix: String) -> SQLFragment {
        if prefix.isEmpty { return "\(expression) IS NOT NULL" }
        guard let upper = Self.prefixSuccessor(prefix) else { return "\(expression) >= \(bind: .string(prefix))" }
        return "(\(expression) >= \(bind: .string(prefix)) AND \(expression) < \(bind: .string(upper)))"
    }

    /// The least string greater than every string that starts with `prefix`, or nil when there is
    /// none (the prefix is all U+10FFFF). Skips the surrogate range, which holds no scalars.
    static func prefixSuccessor(_ prefix: String) -> String? {
        var scalars = Array(prefix.unicodeScalars)
        while let last = scalars.popLast() {
            if last.value == 0x10FFFF { continue }
            let next = last.value == 0xD7FF ? 0xE000 : last.value + 1
            guard let scalar = Unicode.Scalar(next) else { continue }
            scalars.append(scalar)
            var result = ""
            result.unicodeScalars.append(contentsOf: scalars)
            return result
        }
        return nil
    }
}
