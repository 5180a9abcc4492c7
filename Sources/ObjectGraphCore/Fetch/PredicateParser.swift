import Foundation

// MARK: - Parser

/// Parses Core Data's predicate format language into a ``PredicateNode``, substituting arguments.
///
/// The grammar, loosest first: `OR` (`||`), `AND` (`&&`), `NOT` (`!`), then a parenthesized
/// predicate, `TRUEPREDICATE`, `FALSEPREDICATE` or a comparison
/// `[ANY|SOME|ALL|NONE] expression operator[c|d|cd] expression`. Expressions are sums (`+`, `-`)
/// of products (`*`, `/`) of operands: constants, key paths, lists, `-operand`, `(expression)`,
/// `modulus:by:(a, b)`, `SUBQUERY(collection, $variable, predicate).@count`, and inside a
/// subquery `$variable.key`. Reserved words are case-insensitive. Errors are ``ObjectGraphError/predicateSyntax`` with the offset (in
/// characters) of the mistake.
///
/// Parsing takes time linear in the length of the format, and refuses formats that nest deeper
/// than ``PredicateLimits/maximumDepth`` (measured as ``PredicateNode/depth`` measures trees:
/// parentheses add no depth) or whose parser would recurse more than
/// ``PredicateLimits/maximumNesting`` levels, so that neither it nor anything that walks the tree
/// it gives can exhaust a thread's stack. Parentheses that only enclose other parentheses are read
/// without recursing; at most ``PredicateLimits/maximumParentheses`` may enclose one another.
struct PredicateParser {
    private var scanner: PredicateScanner
    private let arguments: [PredicateArgument]
    private var nextArgument = 0
    /// The variables of the enclosing `SUBQUERY`s, innermost last.
    private var variables: [String] = []
    private var lookahead: PredicateToken?
    /// The last token consumed, for messages ("expected a value after '>'").
    private var previous: PredicateToken?
    /// How many parenthesized predicates (a run of `(`s counting one), `NOT`s, signs, lists,
    /// expression parentheses and function calls enclose the token being read: the parser's recursion.
    private var nesting = 0
    /// How many parentheses around predicates enclose the token being read.
    private var parentheses = 0
    /// For each `(` (by offset) that the parser has looked past: whether an operator follows its
    /// `)`, which makes it an expression's parenthesis rather than a predicate's.
    private var parenthesisOpensExpression: [Int: Bool] = [:]

    /// Parses `format`, substituting `arguments` for its specifiers.
    ///
    /// - Throws: ``ObjectGraphError/predicateSyntax`` naming the mistake and its offset.
    static func parse(_ format: String, arguments: [PredicateArgument]) throws -> PredicateNode {
        var parser = PredicateParser(format: format, arguments: arguments)
        return try parser.parseFormat()
    }

    private init(format: String, arguments: [PredicateArgument]) {
        self.scanner = PredicateScanner(format: format)
        self.arguments = arguments
    }

    private mutating func parseFormat() throws -> PredicateNode {
        let first = try peek()
        if first.kind == .end { throw error("expected a predicate", at: first.position) }
        let (node, _) = try parseOr()
        let token = try peek()
        if token.kind != .end {
            if token.isSymbol(")") { throw error("unmatched ')'", at: token.position) }
            throw error("unexpected \(token.quoted) after a complete predicate", at: token.position)
        }
        return node
    }

    // Each parse function returns what it read and its depth (``PredicateNode/depth``).

    /// An `OR` of `AND`s; `after`, when given, is the first operand of the first `AND`, already
    /// read (a parenthesized predicate, see ``parseParenthesized()``).
    private mutating func parseOr(after operand: (PredicateNode, depth: Int)? = nil) throws -> (PredicateNode, depth: Int) {
        let first = try parseAnd(after: operand)
        return try parseJoined(first, word: "OR", symbol: "||", join: PredicateNode.or) { try $0.parseAnd() }
    }

    /// An `AND` of `NOT`s; `after`, when given, is its first operand, already read.
    private mutating func parseAnd(after operand: (PredicateNode, depth: Int)? = nil) throws -> (PredicateNode, depth: Int) {
        let first = try operand ?? parseNot()
        return try parseJoined(first, word: "AND", symbol: "&&", join: PredicateNode.and) { try $0.parseNot() }
    }

    /// `first`, then the operands `next` reads for as long as the operator `word` (or `symbol`)
    /// comes between them: `first` alone when none does, else `join` of them all, one level deeper
    /// than the deepest operand.
    private mutating func parseJoined(
        _ first: (PredicateNode, depth: Int), word: String, symbol: String, join: ([PredicateNode]) -> PredicateNode,
        next: (inout PredicateParser) throws -> (PredicateNode, depth: Int)
    ) throws -> (PredicateNode, depth: Int) {
        var nodes = [first.0], depth = first.depth
        var firstOperator: PredicateToken?
        while try peek().isWord(word) || peek().isSymbol(symbol) {
            firstOperator = try firstOperator ?? peek()
            advance()
            let (node, nodeDepth) = try next(&self)
            nodes.append(node)
            depth = max(depth, nodeDepth)
        }
        guard let firstOperator else { return (first.0, depth) }
        try checkDepth(depth + 1, at: firstOperator)
        return (join(nodes), depth + 1)
    }

    private mutating func parseNot() throws -> (PredicateNode, depth: Int) {
        let token = try peek()
        if token.isWord("NOT") || token.isSymbol("!") {
            advance()
            try enter(token)
            defer { nesting -= 1 }
            let (node, depth) = try parseNot()
            try checkDepth(depth + 1, at: token)
            return (.not(node), depth + 1)
        }
        return try parsePrimary()
    }

    private mutating func parsePrimary() throws -> (PredicateNode, depth: Int) {
        let token = try peek()
        if token.kind == .end || token.isSymbol(")") { throw expected("a predicate", found: token) }
        if token.isSymbol("("), try !opensExpression(token) { return try parseParenthesized() }
        if token.isWord("TRUEPREDICATE") || token.isWord("FALSEPREDICATE") {
            advance()
            return (.constant(token.isWord("TRUEPREDICATE")), 1)
        }
        let (comparison, depth) = try parseComparison()
        return (.comparison(comparison), depth)
    }

    /// A parenthesized predicate, the `(` ahead. Parentheses add no level to the predicate: its
    /// depth is its tree's, however many enclose it.
    ///
    /// A run of `(`s that each open a predicate (`((rank > 1))`, `((a > 1) AND ((b < 2)))`) is read
    /// in this one frame: the run's innermost predicate is read, then each `)`, and after each but
    /// the last the `AND`s and `OR`s that continue the predicate of the `(` outside it. So redundant
    /// parentheses cost no stack, and count as one level of ``PredicateLimits/maximumNesting``;
    /// at most ``PredicateLimits/maximumParentheses`` may enclose one another.
    private mutating func parseParenthesized() throws -> (PredicateNode, depth: Int) {
        try enter(try peek())
        let enclosing = parentheses
        defer {
            nesting -= 1
            parentheses = enclosing
        }
        var unclosed: [PredicateToken] = []
        var open = try peek()
        while true {
            advance()
            unclosed.append(open)
            parentheses += 1
            if parentheses > PredicateLimits.maximumParentheses {
                throw error(PredicateLimits.tooManyParentheses, at: open.position)
            }
            open = try peek()
            guard open.isSymbol("("), try !opensExpression(open) else { break }
        }
        var result = try parseOr()
        while let open = unclosed.popLast() {
            let close = try peek()
            guard close.isSymbol(")") else {
                throw error("expected ')' to close the '(' at offset \(open.position), found \(close.quoted)", at: close.position)
            }
            advance()
            parentheses -= 1
            if !unclosed.isEmpty { result = try parseOr(after: result) }
        }
        return result
    }

    /// Whether the `(` ahead opens an expression (`(rank + 1) * 2 > 6`) rather than a predicate:
    /// whether an arithmetic or comparison operator follows its `)`.
    ///
    /// Looking ahead to the `)` also decides every `(` met on the way, and the answers are kept,
    /// so no token is looked at twice and parsing stays linear in the length of the format.
    private mutating func opensExpression(_ open: PredicateToken) throws -> Bool {
        if let known = parenthesisOpensExpression[open.position] { return known }
        var scanner = self.scanner  // after the lookahead, which is the `(`
        var unclosed = [open.position]
        var justClosed: Int?  // the `(` whose `)` is the last token read
        while true {
            let token = try scanner.scan()
            if let closed = justClosed {
                parenthesisOpensExpression[closed] =
                    Self.comparisonOperator(token) != nil || ["+", "-", "*", "/"].contains { token.isSymbol($0) }
                justClosed = nil
                if unclosed.isEmpty { break }
            }
            if token.kind == .end {
                for position in unclosed { parenthesisOpensExpression[position] = false }
                break
            }
            if token.isSymbol("(") {
                unclosed.append(token.position)
            } else if token.isSymbol(")") {
                justClosed = unclosed.removeLast()
            }
        }
        return parenthesisOpensExpression[open.position] ?? false
    }

    private mutating func parseComparison() throws -> (PredicateComparison, depth: Int) {
        var modifier = PredicateComparison.Modifier.direct
        let first = try peek()
        if first.isWord("ANY") || first.isWord("SOME") {
            modifier = .any
        } else if first.isWord("ALL") {
            modifier = .all
        } else if first.isWord("NONE") {
            modifier = .none
        }
        if modifier != .direct { advance() }
        let (lhs, lhsDepth) = try parseExpression()
        let opToken = try peek()
        guard let op = Self.comparisonOperator(opToken) else {
            throw expected("an operator", found: opToken)
        }
        advance()
        let options = try parseOptions()
        let rhsToken = try peek()
        let (rhs, rhsDepth) = try parseExpression()
        if op == .between {
            guard case .list(let bounds) = rhs, bounds.count == 2 else {
                throw error("BETWEEN needs a list of two values, such as {1, 5}", at: rhsToken.position)
            }
        }
        let depth = 1 + max(lhsDepth, rhsDepth)
        try checkDepth(depth, at: first)
        return (PredicateComparison(modifier: modifier, lhs: lhs, op: op, options: options, rhs: rhs), depth)
    }

    private static func comparisonOperator(_ token: PredicateToken) -> PredicateComparison.Operator? {
        switch token.kind {
        case .symbol:
            switch token.text {
            case "==", "=": return .equalTo
            case "!=", "<>": return .notEqualTo
            case "<": return .lessThan
            case "<=", "=<": return .lessThanOrEqualTo
            case ">": return .greaterThan
            case ">=", "=>": return .greaterThanOrEqualTo
            default: return nil
            }
        case .word:
            switch token.text.uppercased() {
            case "BEGINSWITH": return .beginsWith
            case "ENDSWITH": return .endsWith
            case "CONTAINS": return .contains
            case "LIKE": return .like
            case "MATCHES": return .matches
            case "IN": return .in
            case "BETWEEN": return .between
            default: return nil
            }
        default:
            return nil
        }
    }

    /// `[c]`, `[d]`, `[cd]` (`n` and `l`, Core Data's normalization and locale options, are accepted
    /// and ignored).
    private mutating func parseOptions() throws -> PredicateComparison.Options {
        guard try peek().isSymbol("[") else { return [] }
        advance()
        let letters = try consume(.word, expecting: "comparison options such as 'c', 'd' or 'cd'")
        var options: PredicateComparison.Options = []
        for (i, letter) in letters.text.lowercased().enumerated() {
            switch letter {
            case "c": options.insert(.caseInsensitive)
            case "d": options.insert(.diacriticInsensitive)
            case "n", "l": break
            default: throw error("unknown comparison option '\(letter)' (expected c, d or cd)", at: letters.position + i)
            }
        }
        try consume("]", expecting: "']'")
        return options
    }

    // MARK: Expressions

    /// A sum: products joined by `+` and `-`, left to right.
    private mutating func parseExpression() throws -> (PredicateExpression, depth: Int) {
        try parseLeftAssociative([("+", .add), ("-", .subtract)]) { try $0.parseProduct() }
    }

    /// A product: signed operands joined by `*` and `/`, left to right.
    private mutating func parseProduct() throws -> (PredicateExpression, depth: Int) {
        try parseLeftAssociative([("*", .multiply), ("/", .divide)]) { try $0.parseSigned() }
    }

    /// Operands joined by any of `operators`, grouped from the left (`a - b - c` is `(a - b) - c`).
    private mutating func parseLeftAssociative(
        _ operators: [(symbol: String, op: PredicateArithmetic)], operand: (inout Self) throws -> (PredicateExpression, depth: Int)
    ) throws -> (PredicateExpression, depth: Int) {
        var (expression, depth) = try operand(&self)
        while let op = try operators.first(where: { try peek().isSymbol($0.symbol) })?.op {
            let token = try peek()
            advance()
            let (rhs, rhsDepth) = try operand(&self)
            depth = 1 + max(depth, rhsDepth)
            try checkDepth(depth, at: token)
            expression = .arithmetic(op, expression, rhs)
        }
        return (expression, depth)
    }

    /// An operand with optional signs: `-3` is a negative literal, `-rank` is `0 - rank`.
    private mutating func parseSigned() throws -> (PredicateExpression, depth: Int) {
        let token = try peek()
        guard token.isSymbol("-") || token.isSymbol("+") else { return try parseOperand() }
        advance()
        let isNegative = token.isSymbol("-")
        let operandToken = try peek()
        if operandToken.kind == .number {
            advance()
            return (.constant(try number(operandToken, negative: isNegative)), 0)
        }
        try enter(token)
        defer { nesting -= 1 }
        let (operand, depth) = try parseSigned()
        guard isNegative else { return (operand, depth) }
        try checkDepth(depth + 1, at: token)
        return (.arithmetic(.subtract, .constant(.int(0)), operand), depth + 1)
    }

    /// An operand. The constructs that nest (parentheses, lists, calls, CAST, SUBQUERY) are read
    /// here, in a small frame, and values and key paths by ``parseValue()``, so that deep nesting
    /// costs little stack per level.
    private mutating func parseOperand() throws -> (PredicateExpression, depth: Int) {
        let token = try peek()
        let nests = token.kind == .function || token.isSymbol("{") || token.isSymbol("(")
            || token.isWord("CAST") || token.isWord("SUBQUERY")
        guard nests else { return (try parseValue(), 0) }
        advance()
        // Weighed by the stack each takes to read (a debug build's frames are large).
        let weight = token.kind == .function ? 2 : token.isSymbol("(") ? 1 : 4
        try enter(token, weight: weight)
        defer { nesting -= weight }
        if token.kind == .function { return try parseFunction(token) }
        if token.isWord("CAST") { return (.constant(try parseCast(token)), 0) }
        if token.isWord("SUBQUERY") { return try parseSubquery(token) }
        if token.isSymbol("{") { return (.list(try parseList(open: token)), 0) }
        let expression = try parseExpression()
        try consume(")", expecting: "')' to close the '(' at offset \(token.position)")
        return expression
    }

    /// A constant, an argument, a key path or a variable's key path.
    private mutating func parseValue() throws -> PredicateExpression {
        let token = try peek()
        switch token.kind {
        case .end, .aggregate, .symbol, .function:
            throw expected("a value", found: token)
        case .string:
            advance()
            return .constant(.string(token.text))
        case .number:
            advance()
            return .constant(try number(token))
        case .specifier:
            advance()
            return try substitute(token)
        case .variable:
            guard variables.contains(token.text) else {
                throw error(
                    "variable '$\(token.text)' is not defined: variables name the elements of a SUBQUERY; elsewhere use a format argument",
                    at: token.position)
            }
            advance()
            return .variable(token.text, try parseKeyPathTail([]))
        case .escapedWord:
            advance()
            return .keyPath(try parseKeyPathTail([token.text]))
        case .word:
            switch token.text.uppercased() {
            case "TRUE", "YES":
                advance()
                return .constant(.bool(true))
            case "FALSE", "NO":
                advance()
                return .constant(.bool(false))
            case "NIL", "NULL":
                advance()
                return .constant(.null)
            case "SELF":
                advance()
                return .keyPath(try parseKeyPathTail([]))
            case let word where PredicateLexicon.reservedWords.contains(word):
                throw error(
                    "expected a value" + (previous.map { " after \($0.quoted)" } ?? "")
                        + ", found the reserved word '\(token.text)' (write '#\(token.text)' for a key of that name)",
                    at: token.position)
            default:
                advance()
                return .keyPath(try parseKeyPathTail([token.text]))
            }
        }
    }

    /// Reads `.key` and `.@count` continuations of a key path.
    private mutating func parseKeyPathTail(_ start: [String]) throws -> [String] {
        var components = start
        while try peek().isSymbol(".") {
            advance()
            let token = try peek()
            switch token.kind {
            case .word, .escapedWord:
                components.append(token.text)
            case .aggregate:
                guard token.text.lowercased() == "@count" else {
                    throw error("unsupported collection operator '\(token.text)' (only @count is supported)", at: token.position)
                }
                components.append("@count")
            default:
                throw expected("a key after '.'", found: token)
            }
            advance()
        }
        return components
    }

    private mutating func parseList(open: PredicateToken) throws -> [Value] {
        var values: [Value] = []
        if try peek().isSymbol("}") {
            advance()
            return values
        }
        while true {
            let token = try peek()
            switch try parseExpression().0 {
            case .constant(let value): values.append(value)
            case .list: throw error("a list may not contain a list", at: token.position)
            case .keyPath, .variable, .arithmetic, .subqueryCount:
                throw error("a list may contain only values, not key paths or arithmetic", at: token.position)
            }
            let separator = try peek()
            if separator.isSymbol(",") {
                advance()
            } else if separator.isSymbol("}") {
                advance()
                return values
            } else {
                throw error(
                    "expected ',' or '}' to close the '{' at offset \(open.position), found \(separator.quoted)",
                    at: separator.position)
            }
        }
    }

    /// Consumes the symbol, or throws "expected \(what)".
    private mutating func consume(_ symbol: String, expecting what: String) throws {
        let token = try peek()
        guard token.isSymbol(symbol) else { throw expected(what, found: token) }
        advance()
    }

    /// Reads a token of `kind`; `what` names it in the error when another comes.
    private mutating func consume(_ kind: PredicateToken.Kind, expecting what: String) throws -> PredicateToken {
        let token = try peek()
        guard token.kind == kind else { throw expected(what, found: token) }
        advance()
        return token
    }

    /// `modulus:by:(a, b)`, the one function of the format language ObjectGraph evaluates.
    private mutating func parseFunction(_ function: PredicateToken) throws -> (PredicateExpression, depth: Int) {
        guard function.text == "modulus:by:" else {
            throw error("unsupported function '\(function.text)' (modulus:by: is supported)", at: function.position)
        }
        try consume("(", expecting: "'(' after '\(function.text)'")
        let (dividend, dividendDepth) = try parseExpression()
        try consume(",", expecting: "','")
        let (divisor, divisorDepth) = try parseExpression()
        try consume(")", expecting: "')' to close '\(function.text)('")
        let depth = 1 + max(dividendDepth, divisorDepth)
        try checkDepth(depth, at: function)
        return (.arithmetic(.remainder, dividend, divisor), depth)
    }

    /// `SUBQUERY(collection, $variable, predicate).@count`.
    private mutating func parseSubquery(_ keyword: PredicateToken) throws -> (PredicateExpression, depth: Int) {
        try consume("(", expecting: "'(' after SUBQUERY")
        let collectionToken = try peek()
        let (collection, _) = try parseOperand()
        switch collection {
        case .keyPath(let components), .variable(_, let components):
            guard components.last != "@count" else {
                throw error("the collection of a SUBQUERY is a to-many key path, not a count", at: collectionToken.position)
            }
        default:
            throw error("the collection of a SUBQUERY must be a to-many key path", at: collectionToken.position)
        }
        try consume(",", expecting: "','")
        let variable = try consume(.variable, expecting: "a variable such as '$x'")
        try consume(",", expecting: "','")
        variables.append(variable.text)
        let (predicate, predicateDepth) = try parseOr()
        variables.removeLast()
        try consume(")", expecting: "')' to close 'SUBQUERY('")
        let dot = try peek()
        guard dot.isSymbol(".") else {
            throw error("a SUBQUERY must be followed by '.@count' (ObjectGraph counts subquery results)", at: dot.position)
        }
        advance()
        let count = try peek()
        guard count.kind == .aggregate, count.text.lowercased() == "@count" else {
            throw error("a SUBQUERY must be followed by '.@count' (ObjectGraph counts subquery results)", at: count.position)
        }
        advance()
        let depth = PredicateLimits.subqueryDepth + predicateDepth
        try checkDepth(depth, at: keyword)
        return (.subqueryCount(PredicateSubquery(collection: collection, variable: variable.text, predicate: predicate)), depth)
    }

    /// `CAST(value, "Type")`, the form `predicateFormat` writes dates, decimals, data, UUIDs and URLs in.
    private mutating func parseCast(_ cast: PredicateToken) throws -> Value {
        try consume("(", expecting: "'(' after CAST")
        let valueToken = try peek()
        guard case .constant(let value) = try parseExpression().0 else {
            throw error("CAST takes a constant", at: valueToken.position)
        }
        try consume(",", expecting: "','")
        let typeToken = try consume(.string, expecting: "a type name in quotes")
        try consume(")", expecting: "')' to close CAST")
        let converted: Value?
        switch (typeToken.text, value) {
        case ("NSDate", _): converted = value.numericValue.map { .date(Date(timeIntervalSinceReferenceDate: $0)) }
        case ("NSDecimalNumber", .string(let s)): converted = Decimal(string: s, locale: Locale(identifier: "en_US_POSIX")).map(Value.decimal)
        case ("NSDecimalNumber", .int(let i)): converted = .decimal(Decimal(i))
        case ("NSNumber", .string(let s)): converted = Int64(s).map(Value.int) ?? Double(s).map(Value.double)
        case ("NSNumber", _): converted = value.numericValue == nil ? nil : value
        case ("NSString", .string): converted = value
        case ("NSString", .int(let i)): converted = .string(String(i))
        case ("NSData", .string(let s)): converted = Data(base64Encoded: s).map(Value.data)
        case ("NSUUID", .string(let s)): converted = UUID(uuidString: s).map(Value.uuid)
        case ("NSURL", .string(let s)): converted = URL(string: s).map(Value.url)
        default:
            throw error("unsupported CAST to \(PredicateLexicon.quote(typeToken.text))", at: typeToken.position)
        }
        guard let converted else {
            throw error("cannot CAST \(value.predicateLiteral) to \(typeToken.text)", at: valueToken.position)
        }
        return converted
    }

    private func number(_ token: PredicateToken, negative: Bool = false) throws -> Value {
        let text = (negative ? "-" : "") + token.text
        let isInteger = !text.contains(where: { $0 == "." || $0 == "e" || $0 == "E" })
        if isInteger {
            if let value = Int64(text) { return .int(value) }
            throw error("the integer \(text) is too large", at: token.position)
        }
        if let value = Double(text) { return .double(value) }
        throw error("malformed number '\(token.text)'", at: token.position)
    }

    /// Replaces a specifier with the next argument.
    private mutating func substitute(_ token: PredicateToken) throws -> PredicateExpression {
        guard nextArgument < arguments.count else {
            throw error(
                "too few arguments: '%\(token.text)' needs argument \(nextArgument + 1), but \(arguments.count) "
                    + (arguments.count == 1 ? "was" : "were") + " given", at: token.position)
        }
        let argument = arguments[nextArgument]
        nextArgument += 1
        let ordinal = "argument \(nextArgument)"
        if case .unsupported(let typeName) = argument {
            throw error("\(ordinal) for '%\(token.text)' is a \(typeName), which predicates do not take", at: token.position)
        }
        switch token.text.last {
        case "@":
            switch argument {
            case .value(let value): return .constant(value)
            case .list(let values): return .list(values)
            case .unsupported: preconditionFailure("handled above")
            }
        case "K":
            guard case .value(.string(let key)) = argument, !key.isEmpty else {
                throw error("\(ordinal) for '%K' must be a key (a non-empty string)", at: token.position)
            }
            let components = key.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
            if components.contains(where: \.isEmpty) {
                throw error("\(ordinal) for '%K' is not a valid key path: \(PredicateLexicon.quote(key))", at: token.position)
            }
            if key.uppercased() == "SELF" { return .keyPath(try parseKeyPathTail([])) }
            return .keyPath(try parseKeyPathTail(components))
        case "s":
            guard case .value(.string) = argument else {
                throw error("\(ordinal) for '%s' must be a string", at: token.position)
            }
            return argumentExpression(argument)
        case "f", "F", "e", "E", "g", "G":
            guard case .value(let value) = argument, let number = value.numericValue, !(value.isDate) else {
                throw error("\(ordinal) for '%\(token.text)' must be a number", at: token.position)
            }
            return .constant(.double(number))
        default:  // d i u o x X
            switch argument {
            case .value(.int(let v)): return .constant(.int(v))
            case .value(.bool(let v)): return .constant(.int(v ? 1 : 0))
            case .value(.double(let v)) where Int64(exactly: v) != nil: return .constant(.int(Int64(v)))
            default: throw error("\(ordinal) for '%\(token.text)' must be an integer", at: token.position)
            }
        }
    }

    private func argumentExpression(_ argument: PredicateArgument) -> PredicateExpression {
        switch argument {
        case .value(let value): .constant(value)
        case .list(let values): .list(values)
        case .unsupported: .constant(.null)
        }
    }

    // MARK: Depth

    /// Enters one more parenthesis, `NOT`, sign, list or call (`weight` levels of nesting), or
    /// throws at `token` when the format nests deeper than the parser may go.
    private mutating func enter(_ token: PredicateToken, weight: Int = 1) throws {
        nesting += weight
        if nesting > PredicateLimits.maximumNesting { throw error(PredicateLimits.tooNested, at: token.position) }
    }

    /// Throws at `token` when what it begins is deeper than ``PredicateLimits/maximumDepth``.
    private func checkDepth(_ depth: Int, at token: PredicateToken) throws {
        if depth > PredicateLimits.maximumDepth { throw error(PredicateLimits.tooDeep(depth), at: token.position) }
    }

    // MARK: Errors

    private func expected(_ what: String, found token: PredicateToken) -> ObjectGraphError {
        var message = "expected \(what)"
        if let previous { message += " after \(previous.quoted)" }
        if token.kind != .end { message += ", found \(token.quoted)" }
        return error(message, at: token.position)
    }

    private func error(_ message: String, at position: Int) -> ObjectGraphError {
        scanner.error(message, at: position)
    }

    private mutating func peek() throws -> PredicateToken {
        if let lookahead { return lookahead }
        let token = try scanner.scan()
        lookahead = token
        return token
    }

    /// Consumes the token `peek()` returned.
    private mutating func advance() {
        previous = lookahead
        lookahead = nil
    }
}

extension Value {
    fileprivate var isDate: Bool { if case .date = self { true } else { false } }
}
