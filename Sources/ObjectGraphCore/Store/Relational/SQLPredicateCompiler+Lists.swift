import Foundation

// Long lists in SQL: one bound JSON array read by `json_each`, rather than one `?` per value, so
// that a list of any length fits SQLite's limit on bound values (32766). The values keep the
// meaning their own bindings have: integers and object IDs are JSON integers and reals are
// written in the shortest form that reads back exactly (SQLite's JSON reader is exact for it);
// strings are JSON strings; data and UUIDs (blobs), and strings holding U+0000 (which `json_each`
// would cut short), are compared by their hexadecimal spelling (`hex(x)`), which is equal exactly
// when the bytes are.

enum SQLJSONList {
    /// `x IN (SELECT value FROM json_each(?))` (or `hex(x) IN …`) for values already made
    /// bindable for `valueClass` (``SQLPredicateCompiler/bindable(_:for:_:)``), none of them nil.
    static func membership(_ expression: SQLFragment, _ valueClass: SQLValueClass, _ values: [Value]) -> SQLFragment {
        let byHex: Bool
        switch valueClass {
        case .numeric, .object, .url: byHex = false
        case .string: byHex = values.contains { if case .string(let s) = $0 { s.utf8.contains(0) } else { false } }
        case .data, .uuid: byHex = true
        }
        var json = "["
        json.reserveCapacity(values.count * 8)
        for (i, value) in values.enumerated() {
            if i > 0 { json += "," }
            json += byHex ? quoted(hex(value)) : literal(value)
        }
        json += "]"
        let lhs: SQLFragment = byHex ? "hex(\(expression))" : expression
        return "\(lhs) IN (SELECT value FROM json_each(\(bind: .string(json))))"
    }

    /// A value as a JSON literal that SQLite reads back as the value bound for it.
    private static func literal(_ value: Value) -> String {
        switch value {
        case .int(let v): return String(v)
        case .bool(let v): return v ? "1" : "0"
        case .double(let v):
            if v.isInfinite { return v < 0 ? "-9e999" : "9e999" }  // SQLite reads these as ±Inf
            let text = String(v)
            return text.contains(where: { $0 == "." || $0 == "e" || $0 == "E" }) ? text : text + ".0"
        case .string(let v): return quoted(v)
        case .url(let v): return quoted(v.absoluteString)
        default: return quoted(hex(value))
        }
    }

    /// The bytes SQLite holds for a value, in upper-case hexadecimal (as SQLite's `hex()` writes them).
    private static func hex(_ value: Value) -> String {
        let bytes: [UInt8]
        switch value {
        case .data(let v): bytes = Array(v)
        case .uuid(let v): bytes = withUnsafeBytes(of: v.uuid) { Array($0) }
        case .string(let v): bytes = Array(v.utf8)
        case .url(let v): bytes = Array(v.absoluteString.utf8)
        default: bytes = []
        }
        let digits = Array("0123456789ABCDEF".utf8)
        var text = [UInt8]()
        text.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// A JSON string literal.
    private static func quoted(_ string: String) -> String {
        var text = "\""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": text += "\\\""
            case "\\": text += "\\\\"
            default:
                if scalar.value < 0x20 {
                    text += "\\u00" + String(scalar.value, radix: 16).leftPadded(to: 2)
                } else {
                    text.unicodeScalars.append(scalar)
                }
            }
        }
        return text + "\""
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
