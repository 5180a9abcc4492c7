import Foundation

// swift-foundation ships the #Predicate building blocks for `caseInsensitiveCompare` and
// `localizedStandardContains` only on Apple's systems; these are the same nodes elsewhere, so
// SwiftData-style predicates compile unchanged.
#if !canImport(Darwin)
extension PredicateExpressions {
    /// `root.caseInsensitiveCompare(other)` in a `#Predicate`.
    public struct StringCaseInsensitiveCompare<Root: Foundation.PredicateExpression, Other: Foundation.PredicateExpression>: Foundation.PredicateExpression
    where Root.Output: StringProtocol, Other.Output: StringProtocol {
        public typealias Output = ComparisonResult

        public let root: Root
        public let other: Other

        /// The comparison of `root`'s string with `other`'s, ignoring case.
        public init(root: Root, other: Other) {
            self.root = root
            self.other = other
        }

        public func evaluate(_ bindings: PredicateBindings) throws -> ComparisonResult {
            try root.evaluate(bindings).caseInsensitiveCompare(try other.evaluate(bindings))
        }
    }

    /// What `#Predicate` writes for `caseInsensitiveCompare(_:)`.
    public static func build_caseInsensitiveCompare<Root, Other>(_ root: Root, _ other: Other) -> StringCaseInsensitiveCompare<Root, Other> {
        StringCaseInsensitiveCompare(root: root, other: other)
    }

    /// `root.localizedStandardContains(other)` in a `#Predicate`: containment ignoring case and diacritics.
    public struct StringLocalizedStandardContains<Root: Foundation.PredicateExpression, Other: Foundation.PredicateExpression>: Foundation.PredicateExpression
    where Root.Output: StringProtocol, Other.Output: StringProtocol {
        public typealias Output = Bool

        public let root: Root
        public let other: Other

        /// Whether `root`'s string contains `other`'s, ignoring case and diacritics.
        public init(root: Root, other: Other) {
            self.root = root
            self.other = other
        }

        public func evaluate(_ bindings: PredicateBindings) throws -> Bool {
            try root.evaluate(bindings).localizedStandardContains(try other.evaluate(bindings))
        }
    }

    /// What `#Predicate` writes for `localizedStandardContains(_:)`.
    public static func build_localizedStandardContains<Root, Other>(_ root: Root, _ other: Other) -> StringLocalizedStandardContains<Root, Other> {
        StringLocalizedStandardContains(root: root, other: other)
    }
}

extension PredicateExpressions.StringCaseInsensitiveCompare: StandardPredicateExpression
where Root: StandardPredicateExpression, Other: StandardPredicateExpression {}

extension PredicateExpressions.StringCaseInsensitiveCompare: Sendable where Root: Sendable, Other: Sendable {}

extension PredicateExpressions.StringCaseInsensitiveCompare: Codable where Root: Codable, Other: Codable {
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.unkeyedContainer()
        try container.encode(root)
        try container.encode(other)
    }

    public init(from decoder: any Decoder) throws {
        var container = try decoder.unkeyedContainer()
        root = try container.decode(Root.self)
        other = try container.decode(Other.self)
    }
}

extension PredicateExpressions.StringLocalizedStandardContains: StandardPredicateExpression
where Root: StandardPredicateExpression, Other: StandardPredicateExpression {}

extension PredicateExpressions.StringLocalizedStandardContains: Sendable where Root: Sendable, Other: Sendable {}

extension PredicateExpressions.StringLocalizedStandardContains: Codable where Root: Codable, Other: Codable {
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.unkeyedContainer()
        try container.encode(root)
        try container.encode(other)
    }

    public init(from decoder: any Decoder) throws {
        var container = try decoder.unkeyedContainer()
        root = try container.decode(Root.self)
        other = try container.decode(Other.self)
    }
}
#endif
