import Foundation

/// Builds an `NSKeyedArchiver` archive as a graph, the inverse of ``KeyedArchive``: `$objects`
/// (object 0 is `$null`), each object a dictionary whose `$class` refers to a class description
/// (`$classname` and its `$classes` chain), and `$top.root`.
///
/// Objects that refer to each other (an entity and its properties) are reserved first and filled
/// in later, so cycles are written as the archiver writes them: by `UID`.
struct KeyedArchiveWriter {
    private var objects: [PropertyListValue] = [.string("$null")]
    private var classes: [String: Int] = [:]
    private var strings: [String: Int] = [:]

    /// The `$classes` chain of each class the compiled-model writer uses, as Apple's archives hold them.
    static let classChains: [String: [String]] = [
        "NSArray": ["NSArray", "NSObject"],
        "NSMutableArray": ["NSMutableArray", "NSArray", "NSObject"],
        "NSDictionary": ["NSDictionary", "NSObject"],
        "NSMutableDictionary": ["NSMutableDictionary", "NSDictionary", "NSObject"],
        "NSSet": ["NSSet", "NSObject"],
        "NSMutableSet": ["NSMutableSet", "NSSet", "NSObject"],
        "NSDate": ["NSDate", "NSObject"],
        "NSUUID": ["NSUUID", "NSObject"],
        "NSURL": ["NSURL", "NSObject"],
        "NSDecimalNumber": ["NSDecimalNumber", "NSNumber", "NSValue", "NSObject"],
        "NSKnownKeysDictionary1": ["NSKnownKeysDictionary1", "NSKnownKeysDictionary", "NSMutableDictionary", "NSDictionary", "NSObject"],
        "NSKnownKeysMappingStrategy1": ["NSKnownKeysMappingStrategy1", "NSKnownKeysMappingStrategy", "NSObject"],
        "NSManagedObjectModel": ["NSManagedObjectModel", "NSObject"],
        "NSEntityDescription": ["NSEntityDescription", "NSObject"],
        "NSAttributeDescription": ["NSAttributeDescription", "NSPropertyDescription", "NSObject"],
        "NSRelationshipDescription": ["NSRelationshipDescription", "NSPropertyDescription", "NSObject"],
        "NSFetchIndexDescription": ["NSFetchIndexDescription", "NSObject"],
        "NSFetchIndexElementDescription": ["NSFetchIndexElementDescription", "NSObject"],
        "NSDerivedAttributeDescription": ["NSDerivedAttributeDescription", "NSAttributeDescription", "NSPropertyDescription", "NSObject"],
        "NSFunctionExpression": ["NSFunctionExpression", "NSExpression", "NSObject"],
        "NSKeyPathExpression": ["NSKeyPathExpression", "NSFunctionExpression", "NSExpression", "NSObject"],
        "NSKeyPathSpecifierExpression": ["NSKeyPathSpecifierExpression", "NSExpression", "NSObject"],
        "NSSelfExpression": ["NSSelfExpression", "NSExpression", "NSObject"],
        "NSConstantValueExpression": ["NSConstantValueExpression", "NSExpression", "NSObject"],
    ]

    /// `$null`: an absent object.
    static let null = PropertyListValue.uid(0)

    /// Reserves a slot for an object that is filled in later with ``set(_:className:fields:)``.
    mutating func reserve() -> Int {
        objects.append(.null)
        return objects.count - 1
    }

    /// Fills a reserved slot with an object of class `className`.
    mutating func set(_ index: Int, className: String, fields: [String: PropertyListValue]) {
        var fields = fields
        fields["$class"] = classReference(className)
        objects[index] = .dictionary(fields)
    }

    /// Adds an object and returns a reference to it.
    mutating func object(_ className: String, _ fields: [String: PropertyListValue]) -> PropertyListValue {
        let index = reserve()
        set(index, className: className, fields: fields)
        return .uid(index)
    }

    /// A string, archived once however often it is referred to (as `NSKeyedArchiver` does).
    mutating func string(_ string: String) -> PropertyListValue {
        if let known = strings[string] { return .uid(known) }
        objects.append(.string(string))
        strings[string] = objects.count - 1
        return .uid(objects.count - 1)
    }

    /// An optional string: `$null` when absent.
    mutating func string(_ string: String?) -> PropertyListValue {
        string.map { self.string($0) } ?? Self.null
    }

    /// A plain value stored in `$objects` (a number, a boolean, data) and referred to by `UID`.
    mutating func value(_ value: PropertyListValue) -> PropertyListValue {
        objects.append(value)
        return .uid(objects.count - 1)
    }

    /// An `NSArray`, `NSMutableArray`, `NSSet` or `NSMutableSet` of references.
    mutating func collection(_ className: String, _ elements: [PropertyListValue]) -> PropertyListValue {
        object(className, ["NS.objects": .array(elements)])
    }

    /// An `NSDictionary` or `NSMutableDictionary` of references, in the order given.
    mutating func dictionary(_ className: String, _ entries: [(key: PropertyListValue, value: PropertyListValue)]) -> PropertyListValue {
        object(className, ["NS.keys": .array(entries.map(\.key)), "NS.objects": .array(entries.map(\.value))])
    }

    private mutating func classReference(_ name: String) -> PropertyListValue {
        if let known = classes[name] { return .uid(known) }
        let chain = Self.classChains[name] ?? [name, "NSObject"]
        objects.append(.dictionary(["$classname": .string(name), "$classes": .array(chain.map(PropertyListValue.string))]))
        classes[name] = objects.count - 1
        return .uid(objects.count - 1)
    }

    /// The archive as a binary property list, with `root` as `$top.root`.
    func encode(root: Int) throws -> Data {
        try BinaryPropertyListWriter.encode(.dictionary([
            "$version": .integer(100_000),
            "$archiver": .string("NSKeyedArchiver"),
            "$top": .dictionary(["root": .uid(root)]),
            "$objects": .array(objects),
        ]))
    }
}
