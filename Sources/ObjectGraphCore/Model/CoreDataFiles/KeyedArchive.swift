import Foundation

/// An `NSKeyedArchiver` archive read as a graph: `$objects` and `$top`, with each object's class name
/// from its `$class` entry. Core Data's classes cannot be unarchived on Linux, so the compiled-model
/// reader walks this graph itself.
struct KeyedArchive {
    /// Why an archive could not be read.
    struct Malformed: Error, CustomStringConvertible {
        let reason: String
        var description: String { reason }
    }

    /// One archived object: its class and its encoded keys.
    struct Object {
        let index: Int
        let className: String
        let fields: [String: PropertyListValue]
    }

    private let objects: [PropertyListValue]
    /// The archive's root object (`$top.root`).
    let root: Int

    /// Reads an archive from a binary property list.
    ///
    /// - Throws: ``BinaryPropertyList/Malformed`` or ``Malformed`` when the data is not a keyed archive.
    init(data: Data) throws {
        guard case .dictionary(let archive) = try BinaryPropertyList.decode(data) else {
            throw Malformed(reason: "the property list is not a keyed archive (its top is not a dictionary)")
        }
        guard let objects = archive["$objects"]?.array else { throw Malformed(reason: "the archive has no $objects") }
        guard let root = archive["$top"]?.dictionary?["root"]?.uid else { throw Malformed(reason: "the archive has no $top root") }
        guard root > 0, root < objects.count else { throw Malformed(reason: "the archive's root refers to object \(root) of \(objects.count)") }
        self.objects = objects
        self.root = root
    }

    /// The value an object's field refers to: a `UID` is followed, `$null` is nil.
    func value(_ reference: PropertyListValue?) throws -> PropertyListValue? {
        guard let reference else { return nil }
        guard case .uid(let index) = reference else { return reference }
        guard index >= 0, index < objects.count else { throw Malformed(reason: "reference to object \(index) of \(objects.count)") }
        if index == 0 { return nil }  // $null
        return objects[index]
    }

    /// The archived object at `index`, with its class name.
    func object(at index: Int) throws -> Object {
        guard index > 0, index < objects.count, case .dictionary(let fields) = objects[index] else {
            throw Malformed(reason: "object \(index) is not an archived object")
        }
        guard let classReference = fields["$class"]?.uid, let classValue = try value(.uid(classReference))?.dictionary,
              let className = classValue["$classname"]?.string
        else { throw Malformed(reason: "object \(index) has no class") }
        return Object(index: index, className: className, fields: fields)
    }

    /// The object a field refers to, nil when the field is absent or `$null`.
    func object(_ reference: PropertyListValue?) throws -> Object? {
        guard let reference, case .uid(let index) = reference, index != 0 else { return nil }
        return try object(at: index)
    }

    /// A string field (an archived `NSString` is a plain string in `$objects`, or an `NSMutableString` object).
    func string(_ reference: PropertyListValue?) throws -> String? {
        switch try value(reference) {
        case .string(let string)?: return string
        case .dictionary(let fields)? where fields["NS.string"] != nil: return fields["NS.string"]?.string
        case nil: return nil
        default: throw Malformed(reason: "expected a string")
        }
    }

    /// The elements of an archived `NSArray`, `NSSet` or `NSOrderedSet`.
    func elements(_ reference: PropertyListValue?) throws -> [PropertyListValue] {
        guard let object = try object(reference) else { return [] }
        guard let items = object.fields["NS.objects"]?.array else {
            throw Malformed(reason: "object \(object.index) (\(object.className)) is not an array or a set")
        }
        return items
    }

    /// The keys and values of an archived dictionary: `NSDictionary` (`NS.keys` / `NS.objects`) or
    /// Core Data's `NSKnownKeysDictionary1` (keys in its search mapping, values beside them), in archive order.
    func entries(_ reference: PropertyListValue?) throws -> [(key: String, value: PropertyListValue)] {
        guard let object = try object(reference) else { return [] }
        let keys: [PropertyListValue], values: [PropertyListValue]
        if let plainKeys = object.fields["NS.keys"]?.array, let plainValues = object.fields["NS.objects"]?.array {
            keys = plainKeys
            values = plainValues
        } else if let mapping = try self.object(object.fields["searchMapping"]) {
            keys = try elements(mapping.fields["keys"])
            values = try elements(object.fields["values"])
        } else {
            throw Malformed(reason: "object \(object.index) (\(object.className)) is not a dictionary")
        }
        guard keys.count <= values.count else {
            throw Malformed(reason: "dictionary object \(object.index) has \(keys.count) keys and \(values.count) values")
        }
        return try zip(keys, values).map { key, value in
            guard let name = try string(key) else { throw Malformed(reason: "dictionary object \(object.index) has a key that is not a string") }
            return (name, value)
        }
    }
}
