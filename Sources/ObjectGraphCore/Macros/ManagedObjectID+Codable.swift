import Foundation

extension CodingUserInfoKey {
    /// The ``PersistentStoreCoordinator`` that decodes ``ManagedObjectID``s: put it in a decoder's
    /// `userInfo` under this key.
    ///
    /// ```swift
    /// let decoder = JSONDecoder()
    /// decoder.userInfo[.persistentStoreCoordinator] = coordinator
    /// ```
    public static let persistentStoreCoordinator = CodingUserInfoKey(rawValue: "ObjectGraph.PersistentStoreCoordinator")!
}

/// An object ID encodes as its URI representation and decodes through the coordinator a decoder's
/// `userInfo` holds under ``Swift/CodingUserInfoKey/persistentStoreCoordinator``. Being `Codable`
/// (and `Sendable`) is also what lets a `#Predicate` capture one:
///
/// ```swift
/// let folderID = folder.objectID
/// FetchDescriptor<Note>(predicate: #Predicate { $0.folder?.objectID == folderID })
/// ```
extension ManagedObjectID: Codable {
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(uriRepresentation())
    }

    /// Decodes an ID from its URI representation.
    ///
    /// - Throws: `DecodingError.dataCorrupted` when the decoder's `userInfo` has no coordinator, or
    ///   the coordinator does not know the URI's store or entity.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let url = try container.decode(URL.self)
        guard let coordinator = decoder.userInfo[.persistentStoreCoordinator] as? PersistentStoreCoordinator else {
            throw DecodingError.dataCorruptedError(
                in: container, debugDescription: "Decoding a ManagedObjectID needs a PersistentStoreCoordinator in the decoder's userInfo[.persistentStoreCoordinator]")
        }
        guard let id = coordinator.managedObjectID(forURIRepresentation: url) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "\(url) names no object of a store of the coordinator")
        }
        self = id
    }
}

extension ManagedModel {
    /// `\Self.objectID`, which predicates compare as the object itself.
    static var _objectIDKeyPath: AnyKeyPath { \Self.objectID }
}
