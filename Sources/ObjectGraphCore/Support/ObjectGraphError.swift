import Foundation

/// An error thrown by ObjectGraph.
///
/// Errors compare equal by their ``code`` only, so a test or a `catch` can match a kind of
/// failure without spelling out its message:
///
/// ```swift
/// do { try context.save() }
/// catch ObjectGraphError.validation { /* ... */ }
/// ```
///
/// The ``description`` names the entity, attribute, object or file concerned, so a person can act
/// on it. A save that fails validation reports every failure in ``underlyingErrors``.
public struct ObjectGraphError: Error, Equatable, Hashable, Sendable, CustomStringConvertible {
    /// The kind of an ``ObjectGraphError``.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        public static let objectNotFound = Code("objectNotFound")
        public static let temporaryObjectID = Code("temporaryObjectID")
        public static let validation = Code("validation")
        public static let mergeConflict = Code("mergeConflict")
        public static let constraintConflict = Code("constraintConflict")
        public static let predicateSyntax = Code("predicateSyntax")
        public static let notADatabase = Code("notADatabase")
        public static let incompatibleModel = Code("incompatibleModel")
        public static let readOnly = Code("readOnly")
        public static let diskFull = Code("diskFull")
        public static let busy = Code("busy")
        public static let io = Code("io")
        public static let invalidModel = Code("invalidModel")
        public static let invalidFetchRequest = Code("invalidFetchRequest")
        public static let noPersistentStore = Code("noPersistentStore")
        public static let unsupported = Code("unsupported")
        public static let historyTokenExpired = Code("historyTokenExpired")
    }

    /// The kind of failure.
    public let code: Code
    /// What went wrong, in words that name the entity, attribute, object or file concerned.
    public let message: String
    /// The entity concerned, if any.
    public var entityName: String?
    /// The attribute or relationship concerned, if any.
    public var key: String?
    /// The object concerned, if any.
    public var objectID: ManagedObjectID?
    /// The file concerned, if any.
    public var url: URL?
    /// For a predicate syntax error, the offset (in characters) of the mistake in the format string.
    public var position: Int?
    /// For a save that failed for several reasons (validation, conflicts), each reason.
    public var underlyingErrors: [ObjectGraphError]
    /// For a merge conflict, each conflicting object with its in-memory, cached and persisted values.
    public var conflicts: [MergeConflict] = []

    /// An error of a kind, with a message that says what went wrong, for an app's own validation
    /// (``ManagedObject/validateValue(_:forKey:)``) or its own store code.
    public init(
        _ code: Code, _ message: String, entityName: String? = nil, key: String? = nil,
        objectID: ManagedObjectID? = nil, url: URL? = nil, position: Int? = nil,
        underlyingErrors: [ObjectGraphError] = []
    ) {
        self.code = code
        self.message = message
        self.entityName = entityName
        self.key = key
        self.objectID = objectID
        self.url = url
        self.position = position
        self.underlyingErrors = underlyingErrors
    }

    public var description: String {
        var text = "ObjectGraphError.\(code): \(message)"
        if underlyingErrors.count > 1 {
            for error in underlyingErrors { text += "\n  - \(error.message)" }
        }
        return text
    }

    public static func == (lhs: ObjectGraphError, rhs: ObjectGraphError) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }

    /// Lets `catch ObjectGraphError.validation` match any validation error.
    public static func ~= (pattern: ObjectGraphError, value: any Error) -> Bool {
        (value as? ObjectGraphError)?.code == pattern.code
    }

    public static let objectNotFound = ObjectGraphError(.objectNotFound, "The object was not found.")
    public static let temporaryObjectID = ObjectGraphError(.temporaryObjectID, "The object ID is temporary.")
    public static let validation = ObjectGraphError(.validation, "Validation failed.")
    public static let mergeConflict = ObjectGraphError(.mergeConflict, "Optimistic locking failure.")
    public static let constraintConflict = ObjectGraphError(.constraintConflict, "A uniqueness constraint was violated.")
    public static let predicateSyntax = ObjectGraphError(.predicateSyntax, "The predicate format is malformed.")
    public static let notADatabase = ObjectGraphError(.notADatabase, "The file is not a database.")
    public static let incompatibleModel = ObjectGraphError(.incompatibleModel, "The store was written with an incompatible model.")
    public static let readOnly = ObjectGraphError(.readOnly, "The store is read-only.")
    public static let diskFull = ObjectGraphError(.diskFull, "The disk is full.")
    public static let busy = ObjectGraphError(.busy, "The database is busy.")
    public static let io = ObjectGraphError(.io, "An input/output error occurred.")
    public static let invalidModel = ObjectGraphError(.invalidModel, "The model is invalid.")
    public static let invalidFetchRequest = ObjectGraphError(.invalidFetchRequest, "The fetch request is invalid.")
    public static let noPersistentStore = ObjectGraphError(.noPersistentStore, "The coordinator has no persistent store.")
    public static let unsupported = ObjectGraphError(.unsupported, "The operation is not supported.")
    /// History after a token was asked for, but history up to it was deleted: changes were missed.
    public static let historyTokenExpired = ObjectGraphError(.historyTokenExpired, "The persistent history token has expired.")
}
