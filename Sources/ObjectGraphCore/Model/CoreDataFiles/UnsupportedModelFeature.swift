import Foundation

/// A part of a Core Data model that ObjectGraph loads but does not act on, reported by
/// ``ManagedObjectModel/unsupportedFeatures`` rather than dropped in silence.
///
/// ```swift
/// let model = try ManagedObjectModel(contentsOf: modelURL)
/// for feature in model.unsupportedFeatures {
///     print(feature)   // "Author.feedbacks: fetched property (fetch request on Feedback) is not loaded"
/// }
/// ```
public struct UnsupportedModelFeature: Sendable, Hashable, CustomStringConvertible {
    /// The kind of an unsupported feature.
    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        /// The kind in words ("fetched property", "derived attribute", ...).
        public let rawValue: String
        init(_ rawValue: String) { self.rawValue = rawValue }
        /// The kind in words, as ``rawValue``.
        public var description: String { rawValue }

        /// A fetched property (`NSFetchedPropertyDescription`): not loaded. It is not stored, and not
        /// part of any version hash.
        public static let fetchedProperty = Kind("fetched property")
        /// A derived attribute (`NSDerivedAttributeDescription`): loaded as a plain, stored attribute
        /// (it hashes as one), but ObjectGraph does not compute its value; Core Data's SQL triggers do,
        /// in stores that have them.
        public static let derivedAttribute = Kind("derived attribute")
        /// A composite attribute (`NSCompositeAttributeDescription`): loaded as a transformable
        /// attribute with Core Data's type code (so its hash is Apple's); its elements are not.
        public static let compositeAttribute = Kind("composite attribute")
        /// An attribute of undefined type (transient only in Core Data): loaded as a transient
        /// transformable attribute.
        public static let undefinedAttributeType = Kind("undefined attribute type")
        /// An object-ID attribute (`NSObjectIDAttributeType`, only for expression descriptions): not loaded.
        public static let objectIDAttribute = Kind("object ID attribute")
        /// A fetch request template of the model: not loaded.
        public static let fetchRequestTemplate = Kind("fetch request template")
        /// A default value the model gives in a form ObjectGraph cannot read: the attribute is loaded
        /// without a default.
        public static let unreadableDefaultValue = Kind("unreadable default value")
        /// A fetch index that is not a plain list of properties (a descending element, an R-tree or an
        /// expression): loaded as a plain index on the same properties where it names any.
        public static let fetchIndexElement = Kind("fetch index element")
    }

    /// What it is.
    public let kind: Kind
    /// The entity it belongs to; nil for a model-level feature.
    public let entityName: String?
    /// The property it is, or belongs to; nil for an entity- or model-level feature.
    public let propertyName: String?
    /// Details from the model file (a derivation expression, a fetch request's entity, a default's text).
    public let detail: String

    /// Creates a report (ObjectGraph's model readers make them; a tool that reads other formats may too).
    ///
    /// ```swift
    /// UnsupportedModelFeature(kind: .fetchedProperty, entityName: "Author", propertyName: "feedbacks",
    ///                         detail: "fetch request on Feedback")
    /// ```
    public init(kind: Kind, entityName: String?, propertyName: String?, detail: String) {
        self.kind = kind
        self.entityName = entityName
        self.propertyName = propertyName
        self.detail = detail
    }

    /// "Entity.property: kind (detail)", or "model: kind (detail)" for a model-level feature.
    public var description: String {
        let place = [entityName, propertyName].compactMap { $0 }.joined(separator: ".")
        return (place.isEmpty ? "model" : place) + ": \(kind)" + (detail.isEmpty ? "" : " (\(detail))")
    }
}

/// What a model file holds, before it becomes a ``ManagedObjectModel``.
struct CoreDataModelContents {
    var entities: [EntityDescription] = []
    /// Configuration name → entity names.
    var configurations: [String: [String]] = [:]
    var versionIdentifiers: Set<String> = []
    var unsupportedFeatures: [UnsupportedModelFeature] = []

    mutating func report(_ kind: UnsupportedModelFeature.Kind, _ entity: String?, _ property: String?, _ detail: String = "") {
        unsupportedFeatures.append(UnsupportedModelFeature(kind: kind, entityName: entity, propertyName: property, detail: detail))
    }
}

/// Core Data's names of attribute types, as Xcode writes them, with their `NSAttributeType` values.
enum CoreDataAttributeTypeName {
    static func code(forXcodeName name: String) -> UInt? {
        switch name {
        case "Undefined": 0
        case "Integer 16": 100
        case "Integer 32": 200
        case "Integer 64": 300
        case "Decimal": 400
        case "Double": 500
        case "Float": 600
        case "String": 700
        case "Boolean": 800
        case "Date": 900
        case "Binary": 1000
        case "UUID": 1100
        case "URI": 1200
        case "Transformable": 1800
        case "ObjectID": 2000
        case "Composite": 2100
        default: nil
        }
    }

    /// ObjectGraph's type for a Core Data type code; nil for undefined, object-ID and composite.
    static func attributeType(forCode code: UInt) -> AttributeType? {
        AttributeType.allCases.first { $0.coreDataTypeCode == code }
    }
}
