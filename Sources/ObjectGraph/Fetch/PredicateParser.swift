import Foundation

// MARK: - Tokens

private struct PredicateToken {
    enum Kind: Equatable {
        /// A word: a key or a reserved word (`text` keeps the spelling).
        case word
        /// `#word`: a key, even when it is spelled like a reserved word.
        case escapedWord
        case string
        case number
        /// A format specifier; `text` is its conversion, such as `@`, `K`, `d`, `ld`, `f`.
        case specifier
        case variable
        /// `@count` and the like.
        case aggregate
        /// `( ) { } [ ] , .` and the operators `== != < <= > >= && || ! =`.
        case symbol
        case end
    }

    var kind: Kind
    var text: String
    /// Offset, in characters, of the token's first character in the format.
    var position: Int

    /// The token as a message names it.
    var quoted: String {
        switch kind {
        case .end: "the end of the format"
        case .string: "string " + PredicateLexicon.quote(text)
        case .specifier: "'%\(text)'"
        case .variable: "'$\(text)'"
        case .escapedWord: "'#\(text)'"
        default: "'\(text)'"
        }
    }

    func isSymbol(_ symbol: String) -> Bool { kind == .symbol && text == symbol }
    func isWord(_ word: String) -> Bool { kind == .word && text.uppercased() == word }
}

// MARK: - Parser

/// Parses Core Data's predicate format language into a ``PredicateNode``, substituting arguments.
///
/// The grammar, loosest first: `OR` (`||`), `AND` (`&&`), `NOT` (`!`), then a parenthesized
/// predicate, `TRUEPREDICATE`, `FALSEPREDICATE` or a comparison
/// `[ANY|SOME|ALL|NONE] expression operator[c|d|cd] expression`. Reserved words are
/// case-insensitive. Errors are ``ObjectGraphError/predicateSyntax`` with the offset (in
/// characters) of the mistake.
struct PredicateParser {
    private let format: String
    private let characters: [Character]
    private let arguments: [PredicateArgument]
    private var nextArgument = 0
    private var offset = 0
    private var lookahead: PredicateToken?
    /// The last token consumed, for messages ("expected a value after '>'").
    private var previous: PredicateToken?

    /// Parses `format`, substituting `arguments` for its specifiers.
    ///
    /// - Throws: ``ObjectGraphError/predicateSyntax`` naming the mistake and its offset.
    static func parse(_ format: String, arguments: [PredicateArgument]) throws -> PredicateNode {
        var parser = PredicateParser(format: format, arguments: arguments)
        return try parser.parseFormat()
    }

    private init(format: String, arguments: [PredicateArgument]) {
        self.format = format
        self.characters = Array(format)
        self.arguments = arguments
    }

    private mutating func parseFormat() throws -> PredicateNode {
        let first = try peek()
        if first.kind == .end { throw error("expected a predicate", at: first.position) }
        let node = try parseOr()
        let token = try peek()
        if token.kind != .end {
            if token.isSymbol(")") { throw error("unmatched ')'", at: token.position) }
            throw error("unexpected \(token.quoted) after a complete predicate", at: token.position)
        }
        return node
    }

    private mutating func parseOr() throws -> PredicateNode {
        var nodes = [try parseAnd()]
        while try peek().isWord("OR") || peek().isSymbol("||") {
            advance()
            nodes.append(try parseAnd())
        }
        return nodes.count == 1 ? nodes[0] : .or(nodes)
    }

    private mutating func parseAnd() throws -> PredicateNode {
        var nodes = [try parseNot()]
        while try peek().isWord("AND") || peek().isSymbol("&&") {
            advance()
            nodes.append(try parseNot())
        }
        return nodes.count == 1 ? nodes[0] : .and(nodes)
    }

    private mutating func parseNot() throws -> PredicateNode {
        if try peek().isWord("NOT") || peek().isSymbol("!") {
            advance()
            return .not(try parseNot())
        }
        return try parsePrimary()
    }

    private mutating func parsePrimary() throws -> PredicateNode {
        let token = try peek()
        if token.kind == .end || token.isSymbol(")") { throw expected("a predicate", found: token) }
        if token.isSymbol("(") {
            advance()
            let node = try parseOr()
            let close = try peek()
            guard close.isSymbol(")") else {
                throw error(
                    "expected ')' to close the '(' at offset \(token.position), found \(close.quoted)", at: close.position)
            }
            advance()
            return node
        }
        if token.isWord("TRUEPREDICATE") || token.isWord("FALSEPREDICATE") {
            advance()
            return .constant(token.isWord("TRUEPREDICATE"))
        }
        return .comparison(try parseComparison())
    }

    private mutating func parseComparison() throws -> PredicateComparison {
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
        let lhs = try parseExpression()
        let opToken = try peek()
        guard let op = Self.comparisonOperator(opToken) else {
            throw expected("an operator", found: opToken)
        }
        advance()
        let options = try parseOptions()
        let rhsToken = try peek()
        let rhs = try parseExpression()
        if op == .between {
            guard case .list(let bounds) = rhs, bounds.count == 2 else {
                throw error("BETWEEN needs a list of two values, such as {1, 5}", at: rhsToken.position)
            }
        }
        return PredicateComparison(modifier: modifier, lhs: lhs, op: op, options: options, rhs: rhs)
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
        let letters = try peek()
        guard letters.kind == .word else { throw expected("comparison options such as 'c', 'd' or 'cd'", found: letters) }
        var options: PredicateComparison.Options = []
        for (i, letter) in letters.text.lowercased().enumerated() {
            switch letter {
            case "c": options.insert(.caseInsensitive)
            case "d": options.insert(.diacriticInsensitive)
            case "n", "l": break
            default: throw error("unknown comparison option '\(letter)' (expected c, d or cd)", at: letters.position + i)
            }
        }
        advance()
        let close = try peek()
        guard close.isSymbol("]") else { throw expected("']'", found: close) }
        advance()
        return options
    }

    // MARK: Expressions

    private mutating func parseExpression() throws -> PredicateExpression {
        let token = try peek()
        switch token.kind {
        case .end:
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
            throw error("variables such as '$\(token.text)' are not supported; use a format argument", at: token.position)
        case .aggregate:
            throw expected("a value", found: token)
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
            case "CAST":
                advance()
                return .constant(try parseCast(token))
            case let word where PredicateLexicon.reservedWords.contains(word):
                throw error(
                    "expected a value" + (previous.map { " after \($0.quoted)" } ?? "")
                        + ", found the reserved word '\(token.text)' (write '#\(token.text)' for a key of that name)",
                    at: token.position)
            default:
                advance()
                return .keyPath(try parseKeyPathTail([token.text]))
            }
        case .symbol:
            if token.isSymbol("{") {
                advance()
                return .list(try parseList(open: token))
            }
            throw expected("a value", found: token)
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
            switch try parseExpression() {
            case .constant(let value): values.append(value)
            case .list: throw error("a list may not contain a list", at: token.position)
            case .keyPath: throw error("a list may contain only values, not key paths", at: token.position)
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

    /// `CAST(value, "Type")`, the form `predicateFormat` writes dates, decimals, data, UUIDs and URLs in.
    private mutating func parseCast(_ cast: PredicateToken) throws -> Value {
        guard try peek().isSymbol("(") else { throw expected("'(' after CAST", found: try peek()) }
        advance()
        let valueToken = try peek()
        guard case .constant(let value) = try parseExpression() else {
            throw error("CAST takes a constant", at: valueToken.position)
        }
        guard try peek().isSymbol(",") else { throw expected("','", found: try peek()) }
        advance()
        let typeToken = try peek()
        guard typeToken.kind == .string else { throw expected("a type name in quotes", found: typeToken) }
        advance()
        guard try peek().isSymbol(")") else { throw expected("')' to close CAST", found: try peek()) }
        advance()
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

    private func number(_ token: PredicateToken) throws -> Value {
        let isInteger = !token.text.contains(where: { $0 == "." || $0 == "e" || $0 == "E" })
        if isInteger {
            if let value = Int64(token.text) { return .int(value) }
            throw error("the integer \(token.text) is too large", at: token.position)
        }
        if let value = Double(token.text) { return .double(value) }
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

    // MARK: Errors

    private func expected(_ what: String, found token: PredicateToken) -> ObjectGraphError {
        var message = "expected \(what)"
        if let previous { message += " after \(previous.quoted)" }
        if token.kind != .end { message += ", found \(token.quoted)" }
        return error(message, at: token.position)
    }

    private func error(_ message: String, at position: Int) -> ObjectGraphError {
        ObjectGraphError(
            .predicateSyntax, "at offset \(position): \(message) in \(PredicateLexicon.quote(format))", position: position)
    }

    // MARK: Tokenizer

    private mutating func peek() throws -> PredicateToken {
        if let lookahead { return lookahead }
        let token = try scan()
        lookahead = token
        return token
    }

    /// Consumes the token `peek()` returned.
    private mutating func advance() {
        previous = lookahead
        lookahead = nil
    }

    private func character(at index: Int) -> Character? {
        index < characters.count ? characters[index] : nil
    }

    private static func isWordStart(_ c: Character) -> Bool { c.isLetter || c == "_" }
    private static func isWordPart(_ c: Character) -> Bool { c.isLetter || c.isNumber || c == "_" }

    private mutating func scan() throws -> PredicateToken {
        while let c = character(at: offset), c.isWhitespace { offset += 1 }
        let start = offset
        guard let c = character(at: offset) else { return PredicateToken(kind: .end, text: "", position: start) }
        offset += 1
        func token(_ kind: PredicateToken.Kind, _ text: String) -> PredicateToken {
            PredicateToken(kind: kind, text: text, position: start)
        }
        func word(from index: Int) -> String {
            var end = index
            while let d = character(at: end), Self.isWordPart(d) { end += 1 }
            offset = end
            return String(characters[index..<end])
        }
        switch c {
        case "'", "\"":
            return token(.string, try scanString(quote: c, start: start))
        case "(", ")", "{", "}", "[", "]", ",":
            return token(.symbol, String(c))
        case ".":
            if let d = character(at: offset), d.isASCII, d.isNumber {
                offset = start
                return token(.number, try scanNumber())
            }
            return token(.symbol, ".")
        case "=":
            if let d = character(at: offset), d == "=" || d == "<" || d == ">" {
                offset += 1
                return token(.symbol, "=" + String(d))
            }
            return token(.symbol, "=")
        case "<":
            if let d = character(at: offset), d == "=" || d == ">" {
                offset += 1
                return token(.symbol, "<" + String(d))
            }
            return token(.symbol, "<")
        case ">":
            if character(at: offset) == "=" {
                offset += 1
                return token(.symbol, ">=")
            }
            return token(.symbol, ">")
        case "!":
            if character(at: offset) == "=" {
                offset += 1
                return token(.symbol, "!=")
            }
            return token(.symbol, "!")
        case "&", "|":
            guard character(at: offset) == c else {
                throw error("unexpected '\(c)' (did you mean '\(c)\(c)'?)", at: start)
            }
            offset += 1
            return token(.symbol, String(c) + String(c))
        case "%":
            return token(.specifier, try scanSpecifier(start: start))
        case "$":
            let name = word(from: offset)
            guard !name.isEmpty else { throw error("expected a variable name after '$'", at: start) }
            return token(.variable, name)
        case "@":
            let name = word(from: offset)
            guard !name.isEmpty else { throw error("expected a collection operator such as '@count' after '@'", at: start) }
            return token(.aggregate, "@" + name)
        case "#":
            guard let d = character(at: offset), Self.isWordStart(d) else {
                throw error("expected a key after '#'", at: start)
            }
            return token(.escapedWord, word(from: offset))
        case "-", "+":
            if let d = character(at: offset), d.isASCII, d.isNumber || d == "." {
                offset = start
                return token(.number, try scanNumber())
            }
            throw error("unexpected '\(c)' (arithmetic is not supported)", at: start)
        default:
            if c.isASCII && c.isNumber {
                offset = start
                return token(.number, try scanNumber())
            }
            if Self.isWordStart(c) { return token(.word, word(from: start)) }
            throw error("unexpected character '\(c)'", at: start)
        }
    }

    private mutating func scanNumber() throws -> String {
        let start = offset
        var text = ""
        func digits() {
            while let d = character(at: offset), d.isASCII, d.isNumber {
                text.append(d)
                offset += 1
            }
        }
        if let sign = character(at: offset), sign == "-" || sign == "+" {
            if sign == "-" { text.append(sign) }
            offset += 1
        }
        digits()
        if character(at: offset) == ".", let d = character(at: offset + 1), d.isASCII, d.isNumber {
            text.append(".")
            offset += 1
            digits()
        }
        if let e = character(at: offset), e == "e" || e == "E" {
            var look = offset + 1
            if let sign = character(at: look), sign == "-" || sign == "+" { look += 1 }
            if let d = character(at: look), d.isASCII, d.isNumber {
                text.append(contentsOf: String(characters[offset..<look]))
                offset = look
                digits()
            }
        }
        if let d = character(at: offset), Self.isWordPart(d) {
            throw error("malformed number starting '\(String(characters[start..<offset]))\(d)'", at: start)
        }
        return text
    }

    private mutating func scanString(quote: Character, start: Int) throws -> String {
        var text = ""
        while let c = character(at: offset) {
            offset += 1
            if c == quote { return text }
            guard c == "\\" else {
                text.append(c)
                continue
            }
            guard let escaped = character(at: offset) else { break }
            offset += 1
            switch escaped {
            case "n": text.append("\n")
            case "t": text.append("\t")
            case "r": text.append("\r")
            case "0": text.append("\0")
            case "\\", "'", "\"": text.append(escaped)
            case "u":
                let hex = (0..<4).compactMap { character(at: offset + $0) }
                guard hex.count == 4, let value = UInt32(String(hex), radix: 16), let scalar = Unicode.Scalar(value) else {
                    throw error("malformed '\\u' escape (expected four hexadecimal digits)", at: offset - 2)
                }
                offset += 4
                text.unicodeScalars.append(scalar)
            default:
                // Unknown escapes keep their backslash, so `\*` reaches LIKE as an escaped `*`.
                text.append("\\")
                text.append(escaped)
            }
        }
        throw error("unterminated string starting at offset \(start)", at: start)
    }

    private mutating func scanSpecifier(start: Int) throws -> String {
        var text = ""
        while let c = character(at: offset), "hlqzL".contains(c), text.count < 2 {
            text.append(c)
            offset += 1
        }
        guard let conversion = character(at: offset) else {
            throw error("incomplete format specifier '%\(text)'", at: start)
        }
        let valid: Set<Character> = text.isEmpty ? ["@", "K", "d", "i", "u", "o", "x", "X", "f", "F", "e", "E", "g", "G", "s"]
            : ["d", "i", "u", "o", "x", "X", "f", "F", "e", "E", "g", "G"]
        guard valid.contains(conversion) else {
            throw error("unknown format specifier '%\(text)\(conversion)'", at: start)
        }
        offset += 1
        return text + String(conversion)
    }
}

extension Value {
    fileprivate var isDate: Bool { if case .date = self { true } else { false } }
}
