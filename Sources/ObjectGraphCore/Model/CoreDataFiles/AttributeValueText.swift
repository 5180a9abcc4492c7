import Foundation

/// Default values and validation bounds of attributes, as Xcode writes them in a model's XML
/// (`defaultValueString`, `defaultDateTimeInterval`, `minValueString`, ...).
enum AttributeValueText {
    /// The value `text` stands for in an attribute of `type`; nil when it cannot be read as one.
    static func value(_ text: String, type: AttributeType) -> (any Sendable)? {
        switch type {
        case .integer16: Int16(text)
        case .integer32: Int32(text)
        case .integer64: Int64(text)
        case .decimal: Decimal(string: text, locale: Locale(identifier: "en_US_POSIX"))
        case .double: Double(text)
        case .float: Float(text)
        case .string: text
        case .boolean: ["YES": true, "NO": false, "1": true, "0": false, "true": true, "false": false][text]
        case .date: Double(text).map { Date(timeIntervalSinceReferenceDate: $0) }
        case .uuid: UUID(uuidString: text)
        case .uri: URL(string: text)
        case .binaryData, .transformable: nil
        }
    }

    static func defaultValue(
        _ element: ModelXMLElement, type: AttributeType, entity: String, name: String, into contents: inout CoreDataModelContents
    ) throws -> (any Sendable)? {
        let text = type == .date ? element["defaultDateTimeInterval"] : element["defaultValueString"]
        guard let text else { return nil }
        if let value = value(text, type: type) { return value }
        contents.report(.unreadableDefaultValue, entity, name, "'\(text)' is not a valid \(type) value")
        return nil
    }

    static func bounds(_ element: ModelXMLElement, type: AttributeType)
        -> (minimum: (any Sendable)?, maximum: (any Sendable)?, minimumLength: Int?, maximumLength: Int?)
    {
        switch type {
        case .string:
            return (nil, nil, element["minValueString"].flatMap { Int($0) }, element["maxValueString"].flatMap { Int($0) })
        case .date:
            return (element["minDateTimeInterval"].flatMap { value($0, type: .date) },
                    element["maxDateTimeInterval"].flatMap { value($0, type: .date) }, nil, nil)
        case .integer16, .integer32, .integer64, .decimal, .double, .float:
            return (element["minValueString"].flatMap { value($0, type: type) },
                    element["maxValueString"].flatMap { value($0, type: type) }, nil, nil)
        default:
            return (nil, nil, nil, nil)
        }
    }
}
