import Foundation

/// An attribute value in ObjectGraph's canonical form: what snapshots, stores and predicates hold.
///
/// Integer attributes of every width are `.int`, `double` and `float` are `.double`, and a
/// transformable value is held encoded, as `.data`.
enum Value: Sendable, Hashable {
    case null
    case int(Int64)
    case bool(Bool)
    case double(Double)
    case decimal(Decimal)
    case string(String)
    case date(Date)
    case data(Data)
    case uuid(UUID)
    case url(URL)
    case objectID(ManagedObjectID)

    var isNull: Bool { if case .null = self { true } else { false } }

    /// Whether the value is a NaN double, float, decimal or date interval: equal to nothing, not
    /// even itself, and within no bounds.
    var isNaN: Bool {
        switch self {
        case .double(let v): v.isNaN
        case .decimal(let v): v.isNaN
        case .date(let v): v.timeIntervalSinceReferenceDate.isNaN
        default: false
        }
    }

    /// A number as a double, for numeric comparison across integer, decimal, double and boolean.
    var numericValue: Double? {
        switch self {
        case .int(let v): Double(v)
        case .double(let v): v
        case .bool(let v): v ? 1 : 0
        case .decimal(let v): NSDecimalNumber(decimal: v).doubleValue
        case .date(let v): v.timeIntervalSinceReferenceDate
        default: nil
        }
    }

    /// A short description for error messages.
    var debugText: String {
        switch self {
        case .null: "nil"
        case .int(let v): String(v)
        case .bool(let v): String(v)
        case .double(let v): String(v)
        case .decimal(let v): "\(v)"
        case .string(let v): String(reflecting: v)
        case .date(let v): v.timeIntervalSinceReferenceDate.isFinite ? "\(v)" : "Date(timeIntervalSinceReferenceDate: \(v.timeIntervalSinceReferenceDate))"
        case .data(let v): "<\(v.count) bytes>"
        case .uuid(let v): v.uuidString
        case .url(let v): v.absoluteString
        case .objectID(let v): v.description
        }
    }
}

// MARK: - Conversion from the values users pass

extension Value {
    /// Converts a value a user passes to `setValue(_:forKey:)`, or returns nil when it is not
    /// exactly convertible to the attribute's type.
    static func converting(_ any: Any?, to type: AttributeType, valueType: (any Codable.Type)?) -> Value? {
        guard let any else { return .null }
        // The hottest path: the value opened from its existential and recognised by its type's
        // metadata, with no dynamic cast (which costs more than the rest of a setValue or a batch row).
        if let value = exactly(any, storedAs: type) { return value }
        // The hot path: the type users pass for each attribute type, tried first with one cast.
        switch type {
        case .integer64: if let v = any as? Int64 { return .int(v) }; if let v = any as? Int { return .int(Int64(v)) }
        case .string: if let v = any as? String { return .string(v) }
        case .double: if let v = any as? Double { return .double(v) }
        case .boolean: if let v = any as? Bool { return .bool(v) }
        case .date: if let v = any as? Date { return .date(v) }
        default: break
        }
        if any is NSNull { return .null }
        if let value = any as? Value { return value }
        return convertingSlowly(any, to: type)
    }

    /// `any` as an attribute of `type` stores it, when it is one of the types users pass most and
    /// needs no conversion (``converting(_:to:valueType:)``'s first step); nil otherwise.
    @inline(__always)
    static func exactly(_ any: Any, storedAs type: AttributeType) -> Value? {
        guard let value = _openExistential(any, do: exactStoredValue), value.isStored(as: type) else { return nil }
        return value
    }

    /// Whether an exact value (`exactStoredValue`) is already what an attribute of `type` stores,
    /// with no conversion or range check (integers narrower than 64 bits and floats need one).
    @inline(__always)
    private func isStored(as type: AttributeType) -> Bool {
        switch (self, type) {
        case (.int, .integer64), (.string, .string), (.double, .double), (.bool, .boolean), (.date, .date): true
        default: false
        }
    }

    private static func convertingSlowly(_ any: Any, to type: AttributeType) -> Value? {
        switch type {
        case .integer16, .integer32, .integer64:
            guard let v = exactInteger(any) else { return nil }
            switch type {
            case .integer16: return Int16(exactly: v) == nil ? nil : .int(v)
            case .integer32: return Int32(exactly: v) == nil ? nil : .int(v)
            default: return .int(v)
            }
        case .double:
            if let v = any as? Double { return .double(v) }
            if let v = any as? Float { return .double(Double(v)) }
            if let v = exactInteger(any), let d = Double(exactly: v) { return .double(d) }
            if let v = any as? Decimal { return .double(NSDecimalNumber(decimal: v).doubleValue) }
            return nil
        case .float:
            if let v = any as? Float { return .double(Double(v)) }
            if let v = any as? Double { return Float(exactly: v) != nil || v.isNaN ? .double(v) : nil }
            if let v = exactInteger(any), let f = Float(exactly: v) { return .double(Double(f)) }
            return nil
        case .decimal:
            if let v = any as? Decimal { return .decimal(v) }
            if let v = exactInteger(any) { return .decimal(Decimal(v)) }
            if let v = any as? Double { return .decimal(Decimal(v)) }
            if let v = any as? Float { return .decimal(Decimal(Double(v))) }
            return nil
        case .string:
            if let v = any as? String { return .string(v) }
            if let v = any as? Substring { return .string(String(v)) }
            return nil
        case .boolean:
            if let v = any as? Bool { return .bool(v) }
            if let v = exactInteger(any), v == 0 || v == 1 { return .bool(v == 1) }
            return nil
        case .date:
            return (any as? Date).map(Value.date)
        case .binaryData:
            if let v = any as? Data { return .data(v) }
            if let v = any as? [UInt8] { return .data(Data(v)) }
            return nil
        case .uuid:
            return (any as? UUID).map(Value.uuid)
        case .uri:
            return (any as? URL).map(Value.url)
        case .transformable:
            return nil  // transformable values are held decoded by the object and encoded at save
        }
    }

    private static func exactInteger(_ any: Any) -> Int64? {
        switch any {
        case let v as Int: return Int64(v)
        case let v as Int64: return v
        case let v as Int32: return Int64(v)
        case let v as Int16: return Int64(v)
        case let v as Int8: return Int64(v)
        case let v as UInt: return Int64(exactly: v)
        case let v as UInt64: return Int64(exactly: v)
        case let v as UInt32: return Int64(v)
        case let v as UInt16: return Int64(v)
        case let v as UInt8: return Int64(v)
        case let v as Double: return Int64(exactly: v)
        case let v as Float: return Int64(exactly: v)
        case let v as Decimal:
            var copy = v
            var rounded = Decimal()
            NSDecimalRound(&rounded, &copy, 0, .plain)
            return rounded == v ? Int64(exactly: NSDecimalNumber(decimal: v).int64Value) : nil
        default: return nil
        }
    }

    /// The Swift value `value(forKey:)` returns for this canonical value.
    func publicValue(for type: AttributeType) -> (any Sendable)? {
        switch self {
        case .null: return nil
        case .int(let v):
            switch type {
            case .integer16: return Int16(truncatingIfNeeded: v)
            case .integer32: return Int32(truncatingIfNeeded: v)
            case .boolean: return v != 0
            case .double: return Double(v)
            case .float: return Float(v)
            case .decimal: return Decimal(v)
            default: return v
            }
        case .double(let v):
            switch type {
            case .float: return Float(v)
            case .integer16, .integer32, .integer64: return Int64(exactly: v.rounded(.towardZero))
            case .decimal: return v.isNaN ? Decimal.nan : Decimal(v)
            default: return v
            }
        case .bool(let v): return v
        case .decimal(let v): return v
        case .string(let v): return v
        case .date(let v): return v
        case .data(let v): return v
        case .uuid(let v): return v
        case .url(let v): return v
        case .objectID(let v): return v
        }
    }
}

// MARK: - Ordering

extension Value {
    /// Compares two values the way predicates and sort descriptors do: numbers numerically across
    /// types, strings by code point (or folded), dates by time. `nil` sorts first. Returns nil when the
    /// values cannot be ordered.
    static func compare(_ a: Value, _ b: Value, caseInsensitive: Bool = false, diacriticInsensitive: Bool = false) -> ComparisonResult? {
        switch (a, b) {
        case (.null, .null): return .orderedSame
        case (.null, _): return .orderedAscending
        case (_, .null): return .orderedDescending
        case (.int(let x), .int(let y)): return x < y ? .orderedAscending : x > y ? .orderedDescending : .orderedSame
        case (.decimal(let x), .decimal(let y)): return x < y ? .orderedAscending : x > y ? .orderedDescending : .orderedSame
        case (.string(let x), .string(let y)):
            let fx = StringFolding.fold(x, caseInsensitive: caseInsensitive, diacriticInsensitive: diacriticInsensitive)
            let fy = StringFolding.fold(y, caseInsensitive: caseInsensitive, diacriticInsensitive: diacriticInsensitive)
            return StringFolding.compareCodePoints(fx, fy)
        case (.data(let x), .data(let y)):
            return x.lexicographicallyPrecedes(y) ? .orderedAscending : x == y ? .orderedSame : .orderedDescending
        case (.uuid(let x), .uuid(let y)):
            return compare(.string(x.uuidString), .string(y.uuidString))
        case (.url(let x), .url(let y)):
            return compare(.string(x.absoluteString), .string(y.absoluteString))
        case (.objectID(let x), .objectID(let y)):
            return x == y ? .orderedSame : (x.description < y.description ? .orderedAscending : .orderedDescending)
        default:
            guard let x = a.numericValue, let y = b.numericValue else { return nil }
            return x < y ? .orderedAscending : x > y ? .orderedDescending : .orderedSame
        }
    }

    /// Equality as predicates see it: numbers equal across types.
    static func predicateEquals(_ a: Value, _ b: Value, caseInsensitive: Bool = false, diacriticInsensitive: Bool = false) -> Bool {
        switch (a, b) {
        case (.null, .null): return true
        case (.null, _), (_, .null): return false
        default: return compare(a, b, caseInsensitive: caseInsensitive, diacriticInsensitive: diacriticInsensitive) == .orderedSame
        }
    }
}

/// String folding shared by in-memory evaluation and the SQL functions registered on SQLite
/// connections, so both paths give the same answers.
enum StringFolding {
    static func fold(_ s: String, caseInsensitive: Bool, diacriticInsensitive: Bool) -> String {
        if !caseInsensitive && !diacriticInsensitive { return s }
        var options: String.CompareOptions = []
        if caseInsensitive { options.insert(.caseInsensitive) }
        if diacriticInsensitive { options.insert(.diacriticInsensitive) }
        return s.folding(options: options, locale: nil)
    }

    /// Orders by Unicode scalar values, which is SQLite's BINARY collation for UTF-8 text.
    static func compareCodePoints(_ a: String, _ b: String) -> ComparisonResult {
        var i = a.utf8.makeIterator()
        var j = b.utf8.makeIterator()
        while true {
            switch (i.next(), j.next()) {
            case (nil, nil): return .orderedSame
            case (nil, _): return .orderedAscending
            case (_, nil): return .orderedDescending
            case (let x?, let y?):
                if x < y { return .orderedAscending }
                if x > y { return .orderedDescending }
            }
        }
    }
}

/// The value of one of the types users pass most (`Int64`, `Int`, `String`, `Double`, `Bool`,
/// `Date`), recognised by its type's metadata; nil for any other type. (A free function:
/// `_openExistential` of a static method crashes Swift 6.3's compiler.)
private func exactStoredValue<T>(_ value: T) -> Value? {
    if T.self == Int64.self { return .int(unsafeBitCast(value, to: Int64.self)) }
    if T.self == Int.self { return .int(Int64(unsafeBitCast(value, to: Int.self))) }
    if T.self == String.self { return .string(unsafeBitCast(value, to: String.self)) }
    if T.self == Double.self { return .double(unsafeBitCast(value, to: Double.self)) }
    if T.self == Bool.self { return .bool(unsafeBitCast(value, to: Bool.self)) }
    if T.self == Date.self { return .date(unsafeBitCast(value, to: Date.self)) }
    return nil
}
