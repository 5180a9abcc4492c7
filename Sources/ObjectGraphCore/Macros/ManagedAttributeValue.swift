import Foundation

/// A Swift type stored as one of the attribute types directly: `Int` (as `integer64`), `Int16`,
/// `Int32`, `Int64`, `Double`, `Float`, `Decimal`, `Bool`, `String`, `Date`, `Data`, `UUID`, `URL`.
///
/// Properties of these types in a `@Managed` class are attributes of that type; a
/// `RawRepresentable` enum whose raw value is one of them is stored as its raw value.
public protocol ManagedAttributeValue: Codable, Sendable {
    /// The attribute type values are stored as.
    static var managedAttributeType: AttributeType { get }
}

/// Conversion between a Swift value and ObjectGraph's canonical ``Value``, for the typed accessors.
protocol CanonicalValueConvertible {
    /// The value held canonically, or nil when the canonical value is of another kind.
    init?(canonicalValue: Value)
    /// The canonical form of the value.
    var canonicalValue: Value { get }
}

extension Int: ManagedAttributeValue, CanonicalValueConvertible {
    public static var managedAttributeType: AttributeType { .integer64 }
    init?(canonicalValue: Value) {
        switch canonicalValue {
        case .int(let v): self.init(truncatingIfNeeded: v)
        case .bool(let v): self = v ? 1 : 0
        default: return nil
        }
    }
    var canonicalValue: Value { .int(Int64(self)) }
}

extension Int64: ManagedAttributeValue, CanonicalValueConvertible {
    public static var managedAttributeType: AttributeType { .integer64 }
    init?(canonicalValue: Value) {
        guard case .int(let v) = canonicalValue else { return nil }
        self = v
    }
    var canonicalValue: Value { .int(self) }
}

extension Int32: ManagedAttributeValue, CanonicalValueConvertible {
    public static var managedAttributeType: AttributeType { .integer32 }
    init?(canonicalValue: Value) {
        guard case .int(let v) = canonicalValue else { return nil }
        self.init(truncatingIfNeeded: v)
    }
    var canonicalValue: Value { .int(Int64(self)) }
}

extension Int16: ManagedAttributeValue, CanonicalValueConvertible {
    public static var managedAttributeType: AttributeType { .integer16 }
    init?(canonicalValue: Value) {
        guard case .int(let v) = canonicalValue else { return nil }
        self.init(truncatingIfNeeded: v)
    }
    var canonicalValue: Value { .int(Int64(self)) }
}

extension Double: ManagedAttributeValue, CanonicalValueConvertible {
    public static var managedAttributeType: AttributeType { .double }
    init?(canonicalValue: Value) {
        switch canonicalValue {
        case .double(let v): self = v
        case .int(let v): self.init(v)
        default: return nil
        }
    }
    var canonicalValue: Value { .double(self) }
}

extension Float: ManagedAttributeValue, CanonicalValueConvertible {
    public static var managedAttributeType: AttributeType { .float }
    init?(canonicalValue: Value) {
        switch canonicalValue {
        case .double(let v): self.init(v)
        case .int(let v): self.init(v)
        default: return nil
        }
    }
    var canonicalValue: Value { .double(Double(self)) }
}

extension Decimal: ManagedAttributeValue, CanonicalValueConvertible {
    public static var managedAttributeType: AttributeType { .decimal }
    init?(canonicalValue: Value) {
        switch canonicalValue {
        case .decimal(let v): self = v
        case .int(let v): self.init(v)
        case .double(let v): self.init(v)
        default: return nil
        }
    }
    var canonicalValue: Value { .decimal(self) }
}

extension Bool: ManagedAttributeValue, CanonicalValueConvertible {
    public static var managedAttributeType: AttributeType { .boolean }
    init?(canonicalValue: Value) {
        switch canonicalValue {
        case .bool(let v): self = v
        case .int(let v): self = v != 0
        default: return nil
        }
    }
    var canonicalValue: Value { .bool(self) }
}

extension String: ManagedAttributeValue, CanonicalValueConvertible {
    public static var managedAttributeType: AttributeType { .string }
    init?(canonicalValue: Value) {
        guard case .string(let v) = canonicalValue else { return nil }
        self = v
    }
    var canonicalValue: Value { .string(self) }
}

extension Date: ManagedAttributeValue, CanonicalValueConvertible {
    public static var managedAttributeType: AttributeType { .date }
    init?(canonicalValue: Value) {
        guard case .date(let v) = canonicalValue else { return nil }
        self = v
    }
    var canonicalValue: Value { .date(self) }
}

extension Data: ManagedAttributeValue, CanonicalValueConvertible {
    public static var managedAttributeType: AttributeType { .binaryData }
    init?(canonicalValue: Value) {
        guard case .data(let v) = canonicalValue else { return nil }
        self = v
    }
    var canonicalValue: Value { .data(self) }
}

extension UUID: ManagedAttributeValue, CanonicalValueConvertible {
    public static var managedAttributeType: AttributeType { .uuid }
    init?(canonicalValue: Value) {
        guard case .uuid(let v) = canonicalValue else { return nil }
        self = v
    }
    var canonicalValue: Value { .uuid(self) }
}

extension URL: ManagedAttributeValue, CanonicalValueConvertible {
    public static var managedAttributeType: AttributeType { .uri }
    init?(canonicalValue: Value) {
        guard case .url(let v) = canonicalValue else { return nil }
        self = v
    }
    var canonicalValue: Value { .url(self) }
}

extension ManagedAttributeValue {
    /// The value as `setValue(_:forKey:)` and descriptions take it (`Int` as `Int64`).
    var modelValue: any Sendable {
        if let int = self as? Int { return Int64(int) }
        return self
    }

    /// Converts a canonical value to `Self` through the conformance, for generic callers.
    static func fromCanonical(_ value: Value) -> Self? {
        (Self.self as? any CanonicalValueConvertible.Type)?.init(canonicalValue: value) as? Self
    }

    var canonical: Value { (self as? any CanonicalValueConvertible)?.canonicalValue ?? .null }
}
