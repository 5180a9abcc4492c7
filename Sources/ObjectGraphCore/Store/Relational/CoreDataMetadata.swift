import Foundation

/// A store's metadata as Core Data keeps it: one row of `Z_METADATA` (`Z_VERSION`, `Z_UUID`,
/// `Z_PLIST`), whose `Z_PLIST` is a binary property list.
enum CoreDataMetadata {
    static let versionHashesKey = "NSStoreModelVersionHashes"
    static let versionIdentifiersKey = "NSStoreModelVersionIdentifiers"
    static let frameworkVersionKey = "NSPersistenceFrameworkVersion"
    static let hashesVersionKey = "NSStoreModelVersionHashesVersion"
    static let checksumKey = "NSStoreModelVersionChecksumKey"
    static let hashesDigestKey = "NSStoreModelVersionHashesDigest"
    static let autoVacuumKey = "_NSAutoVacuumLevel"

    /// The Core Data version whose layout and metadata ObjectGraph writes (iOS 17, macOS 14).
    static let frameworkVersion = 1344

    /// The metadata of a new store written with `model`, as `Z_PLIST` holds it: without the store's
    /// UUID, which Core Data keeps in `Z_METADATA.Z_UUID` and adds to the metadata it reads.
    static func new(model: ManagedObjectModel) -> [String: any Sendable] {
        let identifiers = model.versionIdentifiers.sorted()
        return [
            PersistentStore.metadataTypeKey: StoreType.sqlite.rawValue,
            versionHashesKey: model.entityVersionHashesByName,
            versionIdentifiersKey: identifiers.isEmpty ? [""] : identifiers,
            frameworkVersionKey: frameworkVersion,
            hashesVersionKey: 3,
            checksumKey: model.versionChecksum,
            hashesDigestKey: model.versionHashesDigest,
            autoVacuumKey: "2",
            PersistentStore.metadataModelHashKey: model.versionHash,
        ]
    }

    /// `Z_PLIST`: the metadata as a binary property list.
    static func encode(_ metadata: [String: any Sendable]) throws -> Data {
        try PropertyListSerialization.data(fromPropertyList: foundationValue(metadata), format: .binary, options: 0)
    }

    /// Decodes `Z_PLIST`; nil when it is not a dictionary property list (or is an XML one that is
    /// not UTF-8, which Foundation's reader would stop the program on: see ``PropertyListInput``).
    static func decode(_ data: Data) -> [String: any Sendable]? {
        guard PropertyListInput.encodingProblem(data) == nil,
              let list = try? PropertyListSerialization.propertyList(from: data, options: [], format: nil),
              let dictionary = list as? [String: Any] else { return nil }
        return dictionary.compactMapValues(sendableValue)
    }

    /// The version hashes in a store's metadata, by entity name.
    static func versionHashes(in metadata: [String: any Sendable]) -> [String: Data]? {
        if let hashes = metadata[versionHashesKey] as? [String: Data] { return hashes }
        guard let hashes = metadata[versionHashesKey] as? [String: any Sendable] else { return nil }
        return hashes.compactMapValues { $0 as? Data }
    }

    /// Why a store written with hashes `stored` cannot be opened with `model`, or nil when it can.
    static func incompatibility(of stored: [String: Data], with model: ManagedObjectModel) -> String? {
        let own = model.entityVersionHashesByName
        if own == stored { return nil }
        let missing = stored.keys.filter { own[$0] == nil }.sorted()
        let added = own.keys.filter { stored[$0] == nil }.sorted()
        let changed = own.keys.filter { stored[$0] != nil && stored[$0] != own[$0] }.sorted()
        var parts: [String] = []
        if !changed.isEmpty { parts.append("entities that differ: \(changed.joined(separator: ", "))") }
        if !missing.isEmpty { parts.append("entities the model lacks: \(missing.joined(separator: ", "))") }
        if !added.isEmpty { parts.append("entities the store lacks: \(added.joined(separator: ", "))") }
        return parts.joined(separator: "; ")
    }

    private static func foundationValue(_ value: any Sendable) -> Any {
        switch value {
        case let dictionary as [String: any Sendable]: dictionary.mapValues(foundationValue)
        case let dictionary as [String: Data]: dictionary
        case let array as [String]: array
        case let array as [any Sendable]: array.map(foundationValue)
        default: value
        }
    }

    private static func sendableValue(_ value: Any) -> (any Sendable)? {
        switch value {
        case let v as String: v
        case let v as Data: v
        case let v as Date: v
        case let v as Bool where type(of: value) == Bool.self: v
        case let v as Int: v
        case let v as Double: v
        case let v as [Any]: v.compactMap(sendableValue)
        case let v as [String: Any]:
            v.compactMapValues(sendableValue)
        default: nil
        }
    }
}
