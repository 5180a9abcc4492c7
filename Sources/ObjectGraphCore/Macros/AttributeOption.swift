import Foundation

/// An option of `@Attribute`.
public struct AttributeOption: Hashable, Sendable {
    let rawValue: String

    /// The attribute's value is unique among the entity's objects (a uniqueness constraint).
    public static let unique = AttributeOption(rawValue: "unique")
    /// The store keeps an index on the attribute, for fast predicates and sorts on it.
    public static let indexed = AttributeOption(rawValue: "indexed")
}

/// The arguments of `@Attribute`, as the code `@Managed` generates passes them.
public struct ManagedAttributeOptions: Sendable {
    let options: Set<AttributeOption>
    let originalName: String?

    /// Options for one attribute.
    public init(_ options: AttributeOption..., originalName: String? = nil) {
        self.options = Set(options)
        self.originalName = originalName
    }
}

/// The arguments of `@Relationship`, as
/// the code `@Managed` generates passes them.
public struct ManagedRelationshipOptions: @unchecked Sendable {  // AnyKeyPath values are immutable
    let deleteRule: DeleteRule
    let inverse: AnyKeyPath?
    let minimumModelCount: Int
    let maximumModelCount: Int
    /// Whether `@Relationship` was written (a plain property pointing to a managed class has none).
    let isDeclared: Bool

    /// Options for one relationship.
    public init(deleteRule: DeleteRule = .nullify, inverse: AnyKeyPath? = nil, minimumModelCount: Int = 0, maximumModelCount: Int = 0) {
        self.deleteRule = deleteRule
        self.inverse = inverse
        self.minimumModelCount = minimumModelCount
        self.maximumModelCount = maximumModelCount
        self.isDeclared = true
    }

    private init(undeclared: Void) {
        self.deleteRule = .nullify
        self.inverse = nil
        self.minimumModelCount = 0
        self.maximumModelCount = 0
        self.isDeclared = false
    }

    static let undeclared = ManagedRelationshipOptions(undeclared: ())
}
