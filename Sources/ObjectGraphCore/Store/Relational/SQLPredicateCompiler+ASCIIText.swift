import Foundation

// `[c]`, `[d]` and case-insensitive sorts where the dialect has no folding function (PostgreSQL),
// exact in SQL for the rows whose text is ASCII.
//
// Memory folds text with Foundation's Unicode rules (`String.folding(options:locale:)`), which no
// server function reproduces for all of Unicode. For ASCII text they are simple: `[c]` turns A–Z
// into a–z, and `[d]` changes nothing. So a comparison of a string key path with a constant, and a
// case-insensitive sort, say in SQL exactly what memory says for every row whose compared
// texts are ASCII (or nil). The store asks for those rows with the whole request in SQL, reads the
// other rows (whose text is not ASCII) to evaluate them in memory, and merges the two.

extension SQLPredicateCompiler {
    /// A condition that is exact for the rows whose `texts` are ASCII or nil.
    struct ASCIICondition {
        var fragment: SQLFragment
        /// The string expressions the condition folds.
        var texts: [SQLFragment]
    }

    /// `node` in SQL, exact for the rows whose texts (the condition's `texts`) are ASCII, or nil
    /// when a part of it is neither in the dialect nor a comparison of a string key path of the
    /// row (or of its to-one relationships) with a constant under `[c]` or `[d]` (`==`,
    /// `BEGINSWITH`, `ENDSWITH`, `CONTAINS`, `LIKE`).
    ///
    /// Any `AND`, `OR` and `NOT` of such conditions is exact for those rows too: SQL's unknown is
    /// memory's false, and `NOT` keeps only what is not true.
    func asciiCondition(_ node: PredicateNode) throws -> ASCIICondition? {
        switch node {
        case .constant:
            return ASCIICondition(fragment: try condition(node), texts: [])
        case .not(let inner):
            guard let inner = try exactOrASCII(inner) else { return nil }
            return ASCIICondition(fragment: "(\(inner.fragment)) \(raw: dialect.predicates.isNotTrue)", texts: inner.texts)
        case .and(let nodes), .or(let nodes):
            var parts: [SQLFragment] = [], texts: [SQLFragment] = []
            for node in nodes {
                guard let part = try exactOrASCII(node) else { return nil }
                parts.append(part.fragment)
                texts += part.texts
            }
            if parts.isEmpty { return ASCIICondition(fragment: try condition(node), texts: []) }
            if case .and = node { return ASCIICondition(fragment: Self.chain(parts, separator: " AND "), texts: texts) }
            return ASCIICondition(fragment: Self.chain(parts, separator: " OR "), texts: texts)
        case .comparison(let comparison):
            return try asciiComparison(comparison)
        }
    }

    /// The exact condition when the dialect says `node`, else its ASCII condition.
    private func exactOrASCII(_ node: PredicateNode) throws -> ASCIICondition? {
        do {
            return ASCIICondition(fragment: try condition(node), texts: [])
        } catch is NotInDialect {
            return try asciiCondition(node)
        }
    }

    private func asciiComparison(_ comparison: PredicateComparison) throws -> ASCIICondition? {
        let options = comparison.options
        guard comparison.modifier == .direct, !options.isEmpty,
              [.equalTo, .beginsWith, .endsWith, .contains, .like].contains(comparison.op),
              case .constant(.string(let value)) = comparison.rhs,
              case .expression(let text) = try term(comparison.lhs), text.valueClass == .string
        else { return nil }
        // The constant folded as memory folds it. Folded ASCII text is ASCII, so it never equals,
        // begins or ends with, contains or matches a folded constant that is not.
        let pattern = PredicateStrings.fold(value, options: options)
        guard Self.isASCII(pattern) else { return ASCIICondition(fragment: constant(false), texts: [text.fragment]) }
        // ASCII text folded as memory folds it: [c] lowers A–Z, [d] leaves it as it is.
        let folded = options.isCaseInsensitive ? asciiLowercased(text.fragment) : text.fragment
        let fragment: SQLFragment = comparison.op == .equalTo
            ? "(\(folded) = \(bind: .string(pattern)))"
            : try builtIn(comparison.op, folded, "\(bind: .string(pattern))", .constant(.string(pattern)), [])
        return ASCIICondition(fragment: fragment, texts: [text.fragment])
    }

    /// Whether every scalar of `string` is ASCII, and none is U+0000 (which no text column holds).
    static func isASCII(_ string: String) -> Bool {
        string.unicodeScalars.allSatisfy { $0.value > 0 && $0.value < 0x80 }
    }

    /// `text` with A–Z turned into a–z and every other character as it is: memory's `[c]` folding
    /// of ASCII text. PostgreSQL's `lower` in the "C" collation lowers ASCII letters only (in
    /// another collation it follows the server's locale); `translate` would say the same ten times
    /// slower.
    func asciiLowercased(_ text: SQLFragment) -> SQLFragment {
        "lower((\(text)) COLLATE \"C\")"
    }

    /// True for the rows where one of `texts` holds a character that is not ASCII (false or
    /// unknown where all are ASCII or nil): the rows memory evaluates. In a UTF-8 database such a
    /// text has more bytes than characters; in another encoding a regular expression tells.
    static func holdsNonASCII(_ texts: [SQLFragment]) -> SQLFragment {
        var seen = Set<String>()
        let unique = texts.filter { seen.insert($0.sql).inserted }
        let tests = unique.map { text -> SQLFragment in
            """
            (CASE WHEN getdatabaseencoding() = 'UTF8' THEN octet_length(\(text)) <> char_length(\(text)) \
            ELSE \(text) ~ E'[^\\\\x01-\\\\x7F]' END)
            """
        }
        return "(\(SQLFragment.joined(tests, separator: " OR ")))"
    }
}
