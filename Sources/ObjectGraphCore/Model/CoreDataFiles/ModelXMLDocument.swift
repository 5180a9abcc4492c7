import Foundation

/// An element of an Xcode model's `contents` file: its name, attributes and child elements.
struct ModelXMLElement {
    let name: String
    let attributes: [String: String]
    var children: [ModelXMLElement] = []
    /// The line the element starts on, for error messages.
    let line: Int

    subscript(attribute: String) -> String? { attributes[attribute] }
    func elements(named name: String) -> [ModelXMLElement] { children.filter { $0.name == name } }
    func isYes(_ attribute: String) -> Bool { attributes[attribute] == "YES" }
}

/// A small XML reader for Xcode's model files: elements, attributes, comments, processing
/// instructions, a DOCTYPE, CDATA and character references. Text content is skipped (model files
/// keep everything in attributes). Foundation's `XMLParser` needs libxml2 at run time on Linux; this
/// needs nothing.
struct ModelXMLDocument {
    /// Why a document could not be read: what, and on which line.
    struct Malformed: Error, CustomStringConvertible {
        let reason: String
        let line: Int
        var description: String { "line \(line): \(reason)" }
    }

    /// The root element.
    let root: ModelXMLElement

    /// Parses a document.
    ///
    /// - Throws: ``Malformed`` at the first error.
    init(data: Data) throws {
        var parser = Parser(bytes: Array(data))
        root = try parser.parseDocument()
    }

    private struct Parser {
        let bytes: [UInt8]
        var position = 0
        var line = 1

        init(bytes: [UInt8]) {
            self.bytes = bytes
            // A UTF-8 byte order mark.
            if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { position = 3 }
        }

        func fail(_ reason: String) -> Malformed { Malformed(reason: reason, line: line) }

        var atEnd: Bool { position >= bytes.count }
        var current: UInt8 { bytes[position] }

        mutating func advance(_ count: Int = 1) {
            for _ in 0..<count where position < bytes.count {
                if bytes[position] == UInt8(ascii: "\n") { line += 1 }
                position += 1
            }
        }

        /// Whether the bytes at the position are `text`'s (compared in place: this runs for every
        /// byte of a comment or of the text between tags).
        func starts(with text: StaticString) -> Bool {
            let count = text.utf8CodeUnitCount
            guard position + count <= bytes.count else { return false }
            return text.withUTF8Buffer { pattern in
                for i in 0..<count where bytes[position + i] != pattern[i] { return false }
                return true
            }
        }

        static func isWhitespace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D }

        /// Whether a name ends before `byte`: whitespace, `/`, `>` or `=`.
        static func endsName(_ byte: UInt8) -> Bool {
            isWhitespace(byte) || byte == UInt8(ascii: "/") || byte == UInt8(ascii: ">") || byte == UInt8(ascii: "=")
        }

        mutating func skip(until terminator: StaticString, what: String) throws {
            while !atEnd && !starts(with: terminator) { advance() }
            guard !atEnd else { throw fail("unterminated \(what)") }
            advance(terminator.utf8CodeUnitCount)
        }

        mutating func skipWhitespace() {
            while !atEnd, Self.isWhitespace(current) { advance() }
        }

        /// Skips comments, processing instructions, DOCTYPE and text up to the next element tag.
        mutating func skipMisc() throws {
            while !atEnd {
                guard current == UInt8(ascii: "<") else {
                    advance()
                    continue
                }
                if starts(with: "<!--") { try skip(until: "-->", what: "comment") }
                else if starts(with: "<?") { try skip(until: "?>", what: "processing instruction") }
                else if starts(with: "<![CDATA[") { try skip(until: "]]>", what: "CDATA section") }
                else if starts(with: "<!") { try skip(until: ">", what: "declaration") }
                else { return }
            }
        }

        mutating func parseDocument() throws -> ModelXMLElement {
            try skipMisc()
            guard !atEnd else { throw fail("the document has no root element") }
            let root = try parseElement(depth: 0)
            try skipMisc()
            guard atEnd else { throw fail("content after the root element") }
            return root
        }

        mutating func parseName() throws -> String {
            let start = position
            while !atEnd, !Self.endsName(current) { advance() }
            guard position > start, let name = String(bytes: bytes[start..<position], encoding: .utf8) else {
                throw fail("expected a name")
            }
            return name
        }

        mutating func parseElement(depth: Int) throws -> ModelXMLElement {
            guard depth < 64 else { throw fail("elements nested more than 64 deep") }
            let startLine = line
            advance()  // <
            let name = try parseName()
            var attributes: [String: String] = [:]
            while true {
                skipWhitespace()
                guard !atEnd else { throw fail("unterminated tag <\(name)>") }
                if starts(with: "/>") {
                    advance(2)
                    return ModelXMLElement(name: name, attributes: attributes, line: startLine)
                }
                if current == UInt8(ascii: ">") {
                    advance()
                    break
                }
                let attribute = try parseName()
                skipWhitespace()
                guard !atEnd, current == UInt8(ascii: "=") else { throw fail("attribute '\(attribute)' of <\(name)> has no value") }
                advance()
                skipWhitespace()
                guard !atEnd, current == UInt8(ascii: "\"") || current == UInt8(ascii: "'") else {
                    throw fail("attribute '\(attribute)' of <\(name)> is not quoted")
                }
                let quote = current
                advance()
                let start = position
                while !atEnd, current != quote {
                    guard current != UInt8(ascii: "<") else { throw fail("'<' in attribute '\(attribute)' of <\(name)>") }
                    advance()
                }
                guard !atEnd else { throw fail("unterminated value of attribute '\(attribute)' of <\(name)>") }
                let raw = bytes[start..<position]
                advance()
                guard let text = String(bytes: raw, encoding: .utf8) else { throw fail("attribute '\(attribute)' of <\(name)> is not UTF-8") }
                guard attributes[attribute] == nil else { throw fail("attribute '\(attribute)' repeated in <\(name)>") }
                attributes[attribute] = try decodeReferences(text)
            }
            var element = ModelXMLElement(name: name, attributes: attributes, line: startLine)
            while true {
                try skipMisc()
                guard !atEnd else { throw fail("element <\(name)> opened on line \(startLine) is never closed") }
                if starts(with: "</") {
                    advance(2)
                    let closing = try parseName()
                    guard closing == name else { throw fail("</\(closing)> closes <\(name)> opened on line \(startLine)") }
                    skipWhitespace()
                    guard !atEnd, current == UInt8(ascii: ">") else { throw fail("unterminated closing tag </\(closing)>") }
                    advance()
                    return element
                }
                element.children.append(try parseElement(depth: depth + 1))
            }
        }

        func decodeReferences(_ text: String) throws -> String {
            guard text.contains("&") else { return text }
            var result = ""
            var rest = Substring(text)
            while let ampersand = rest.firstIndex(of: "&") {
                result += rest[..<ampersand]
                guard let semicolon = rest[ampersand...].firstIndex(of: ";") else { throw fail("unterminated character reference") }
                let name = rest[rest.index(after: ampersand)..<semicolon]
                switch name {
                case "lt": result += "<"
                case "gt": result += ">"
                case "amp": result += "&"
                case "quot": result += "\""
                case "apos": result += "'"
                default:
                    let scalarValue: UInt32?
                    if name.hasPrefix("#x") { scalarValue = UInt32(name.dropFirst(2), radix: 16) }
                    else if name.hasPrefix("#") { scalarValue = UInt32(name.dropFirst(), radix: 10) }
                    else { scalarValue = nil }
                    guard let scalarValue, let scalar = Unicode.Scalar(scalarValue) else { throw fail("unknown reference &\(name);") }
                    result.unicodeScalars.append(scalar)
                }
                rest = rest[rest.index(after: semicolon)...]
            }
            return result + rest
        }
    }
}
