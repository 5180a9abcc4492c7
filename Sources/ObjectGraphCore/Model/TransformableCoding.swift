import Foundation

/// Encoding of transformable attribute values as JSON: through `Codable` when the attribute declares
/// a value type; otherwise wrapped in a one-element JSON array, so fragments round-trip and values
/// come back as JSON-compatible values (strings, numbers, booleans, arrays and dictionaries).
enum TransformableCoding {
    static func encode(_ value: Any, valueType: (any Codable.Type)?) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        if valueType != nil {
            guard let encodable = value as? any Encodable else {
                throw ObjectGraphError(.validation, "\(type(of: value)) is not Encodable")
            }
            return try encoder.encode(encodable)
        }
        if JSONSerialization.isValidJSONObject([value]) {
            return try JSONSerialization.data(withJSONObject: [value], options: [.sortedKeys])
        }
        if let encodable = value as? any Encodable {
            var data = Data("[".utf8)
            data.append(try encoder.encode(encodable))
            data.append(contentsOf: Array("]".utf8))
            return data
        }
        throw ObjectGraphError(.validation, "\(type(of: value)) is neither Codable nor a JSON-compatible value")
    }

    static func decode(_ data: Data, valueType: (any Codable.Type)?) throws -> Any {
        if let valueType {
            return try JSONDecoder().decode(valueType, from: data)
        }
        let object = try JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])
        guard let array = object as? [Any], array.count == 1 else { return object }
        return array[0]
    }
}
