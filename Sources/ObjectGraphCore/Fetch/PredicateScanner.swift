import Foundation

// MARK: - Tokens

struct PredicateToken {
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
        /// A function name such as `modulus:by:` (`text` includes the colons).
        case function
        /// `( ) { } [ ] , .`, the operators `== != < <= > >= && || ! =` and `+ - * /`.
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

// MARK: - Scanner

/// Splits a format string into ``PredicateToken``s for ``PredicateParser``.
struct PredicateScanner {
    let format: String
    private let characters: [Character]
    /// Offset, in characters, of the next character to read.
    private var offset = 0

    init(format: String) {
        self.format = format
        self.characters = Array(format)
    }

    /// A syntax error at `position` of the format.
    func error(_ message: String, at position: Int) -> ObjectGraphError {
        ObjectGraphError(
            .predicateSyntax, "at offset \(position): \(message) in \(PredicateLexicon.quote(format))", position: position)
    }

    private func character(at index: Int) -> Character? {
        index < characters.count ? characters[index] : nil
    }

    private static func isWordStart(_ c: Character) -> Bool { c.isLetter || c == "_" }
    private static func isWordPart(_ c: Character) -> Bool { c.isLetter || c.isNumber || c == "_" }

    /// The next token (`.end` at the end of the format).
    mutating func scan() throws -> PredicateToken {
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
        case "+", "-", "*", "/":
            // Signs are operators: the parser reads `-3` as a negative literal.
            return token(.symbol, String(c))
        default:
            if c.isASCII && c.isNumber {
                offset = start
                return token(.number, try scanNumber())
            }
            if Self.isWordStart(c) {
                let text = word(from: start)
                guard character(at: offset) == ":" else { return token(.word, text) }
                // A function name such as `modulus:by:`: words each followed by ':'.
                var name = text + ":"
                offset += 1
                while let d = character(at: offset), Self.isWordStart(d) {
                    let part = word(from: offset)
                    guard character(at: offset) == ":" else {
                        throw error("expected ':' after '\(part)' in function name '\(name)\(part)'", at: offset)
                    }
                    name += part + ":"
                    offset += 1
                }
                return token(.function, name)
            }
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
