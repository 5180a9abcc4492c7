import Foundation

/// The type of an attribute, as in Core Data's `NSAttributeDescription.AttributeType`.
///
/// `value(forKey:)` returns `Int16`, `Int32`, `Int64`, `Decimal`, `Double`, `Float`, `String`,
/// `Bool`, `Date`, `Data`, `UUID` or `URL` for the corresponding type, and the decoded value for a
/// transformable attribute.
public enum AttributeType: String, Hashable, Sendable, CaseIterable, CustomStringConvertible {
    case integer16, integer32, integer64, decimal, double, float, string, boolean, date, binaryData, uuid, uri
    /// Any `Codable` value (stored as JSON), or, without a declared value type, any JSON-compatible
    /// value (strings, numbers, booleans, arrays and dictionaries of them).
    case transformable

    public var description: String { rawValue }

    /// Core Data's spellings.
    public static let integer16AttributeType = AttributeType.integer16
    public static let integer32AttributeType = AttributeType.integer32
    public static let integer64AttributeType = AttributeType.integer64
    public static let decimalAttributeType = AttributeType.decimal
    public static let doubleAttributeType = AttributeType.double
    public static let floatAttributeType = AttributeType.float
    public static let stringAttributeType = AttributeType.string
    public static let booleanAttributeType = AttributeType.boolean
    public static let dateAttributeType = AttributeType.date
    public static let binaryDataAttributeType = AttributeType.binaryData
    public static let UUIDAttributeType = AttributeType.uuid
    public static let URIAttributeType = AttributeType.uri
    public static let transformableAttributeType = AttributeType.transformable

    var isInteger: Bool { self == .integer16 || self == .integer32 || self == .integer64 }
    var isNumeric: Bool { isInteger || self == .decimal || self == .double || self == .float }

    /// The name of the Swift type `value(forKey:)` returns.
    var swiftTypeName: String {
        switch self {
        case .integer16: "Int16"
        case .integer32: "Int32"
        case .integer64: "Int64"
        case .decimal: "Decimal"
        case .double: "Double"
        case .float: "Float"
        case .string: "String"
        case .boolean: "Bool"
        case .date: "Date"
        case .binaryData: "Data"
        case .uuid: "UUID"
        case .uri: "URL"
        case .transformable: "Codable"
        }
    }
}

/// What happens to the destination of a relationship when its source is deleted.
public enum DeleteRule: String, Hashable, Sendable, CaseIterable {
    /// Nothing: the destination keeps pointing at the deleted object (the caller keeps the graph consistent).
    case noAction
    /// The destination's inverse relationship is cleared.
    case nullify
    /// The destination objects are deleted too.
    case cascade
    /// The delete is refused (at save, by validation) while the relationship has destinations.
    case deny

    public static let noActionDeleteRule = DeleteRule.noAction
    public static let nullifyDeleteRule = DeleteRule.nullify
    public static let cascadeDeleteRule = DeleteRule.cascade
    public static let denyDeleteRule = DeleteRule.deny
}
