import Foundation

// Core Data's version hashes, byte for byte: what a store's `NSStoreModelVersionHashes` records and
// what a `.momd`'s `VersionInfo.plist` lists. Every hash is SHA-256 over C strings (UTF-8, without
// their terminating zero) and little-endian integers, fed in this order:
//
// - property:     name, flags (UInt16: optional 1, transient 2, read-only 4), versionHashModifier
// - attribute:    property hash, NSAttributeType (UInt32), 0x01 if external binary storage,
//                 0x01 if preserved in history on deletion
// - derived attribute: its derivation expression's predicate format, then its filtering
//                 predicate's (Core Data leaves the attribute's own hash out)
// - relationship: property hash, destination entity name, inverse name (unless the relationship is
//                 its own inverse), maxCount (UInt32, 1 for a to-one), minCount (UInt32),
//                 0x01 0x00 if ordered
// - entity:       name, isAbstract (1 byte), the super-entity's hash, the hashes of every
//                 non-transient attribute and relationship (inherited ones too) sorted by name,
//                 versionHashModifier, each uniqueness constraint joined with "." in sorted order
// - model checksum (NSStoreModelVersionChecksumKey): base64 of SHA-256 over the entity hashes in
//                 entity-name order.
// - hashes digest (NSStoreModelVersionHashesDigest): base64 of SHA-512 over each entity's name and
//                 hash, in entity-name order.
//
// Delete rules, defaults, indexes, validation, class names, renaming identifiers and user info are
// not part of a hash, as in Core Data.

extension AttributeType {
    /// Core Data's `NSAttributeType` raw value.
    var coreDataTypeCode: UInt {
        switch self {
        case .integer16: 100
        case .integer32: 200
        case .integer64: 300
        case .decimal: 400
        case .double: 500
        case .float: 600
        case .string: 700
        case .boolean: 800
        case .date: 900
        case .binaryData: 1000
        case .uuid: 1100
        case .uri: 1200
        case .transformable: 1800
        }
    }
}

extension PropertyDescription {
    /// The property's version hash, equal to Core Data's `NSPropertyDescription.versionHash` for the
    /// same property: 32 bytes of SHA-256.
    ///
    /// ```swift
    /// let hash = model.entitiesByName["Note"]!.propertiesByName["title"]!.versionHash
    /// ```
    ///
    /// A relationship's hash names its inverse, so read it on a property of a built model.
    public var versionHash: Data {
        var hasher = SHA256()
        if let attribute = self as? AttributeDescription, let derivation = attribute.derivation {
            // Core Data hashes a derived attribute by its derivation alone (NSDerivedAttributeDescription
            // computes the attribute's hash and leaves it out).
            hasher.update(derivation.expression)
            if let filter = derivation.filter { hasher.update(filter) }
            return hasher.finalize()
        }
        hasher.update(basePropertyHash)
        switch self {
        case let attribute as AttributeDescription:
            hasher.update(littleEndian: UInt32(truncatingIfNeeded: attribute.coreDataAttributeTypeCode ?? attribute.attributeType.coreDataTypeCode))
            if attribute.allowsExternalBinaryDataStorage { hasher.update([1]) }
            if attribute.preservesValueInHistoryOnDeletion { hasher.update([1]) }
        case let relationship as RelationshipDescription:
            hasher.update(relationship.destinationEntityName)
            if let inverseName = relationship.inverseName,
               let inverse = relationship.destinationEntity?.relationshipsByName[inverseName], inverse !== relationship {
                hasher.update(inverse.name)
            }
            hasher.update(littleEndian: UInt32(truncatingIfNeeded: relationship.isToMany ? relationship.maxCount : 1))
            hasher.update(littleEndian: UInt32(truncatingIfNeeded: relationship.minCount))
            if relationship.isOrdered { hasher.update([1, 0]) }
        default:
            break
        }
        return hasher.finalize()
    }

    /// The part every kind of property shares (Core Data's `NSPropertyDescription` level).
    private var basePropertyHash: Data {
        var hasher = SHA256()
        hasher.update(name)
        let flags: UInt16 = (isOptional ? 1 : 0) | (isTransient ? 2 : 0) | (isReadOnly ? 4 : 0)
        hasher.update(littleEndian: flags)
        if let versionHashModifier { hasher.update(versionHashModifier) }
        return hasher.finalize()
    }
}

extension EntityDescription {
    /// The entity's version hash, equal to Core Data's `NSEntityDescription.versionHash` for the same
    /// entity: 32 bytes of SHA-256 over its name, abstractness, super-entity, stored properties,
    /// version hash modifier and uniqueness constraints.
    ///
    /// ```swift
    /// let hash = model.entitiesByName["Note"]!.versionHash
    /// ```
    ///
    /// Read it on an entity of a built model (inherited properties are part of it).
    public var versionHash: Data {
        var hasher = SHA256()
        hasher.update(name)
        hasher.update([isAbstract ? 1 : 0])
        if let superentity { hasher.update(superentity.versionHash) }
        let stored = properties.filter { !$0.isTransient }.sorted { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) }
        for property in stored { hasher.update(property.versionHash) }
        if let versionHashModifier { hasher.update(versionHashModifier) }
        let constraints = uniquenessConstraints.map { $0.joined(separator: ".") }.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        for constraint in constraints where !constraint.isEmpty { hasher.update(constraint) }
        return hasher.finalize()
    }
}

extension ManagedObjectModel {
    /// The version hash of every entity, by entity name: equal to Core Data's
    /// `entityVersionHashesByName` for the same model, and so to the `NSStoreModelVersionHashes` of
    /// a store Core Data wrote with it.
    ///
    /// ```swift
    /// let model = try ManagedObjectModel(contentsOf: modelURL)
    /// let storeHashes: [String: Data] = ...   // from the store's metadata
    /// let compatible = model.entityVersionHashesByName == storeHashes
    /// ```
    ///
    /// Computed once per model (what goes into a version hash cannot change once the model is built).
    public var entityVersionHashesByName: [String: Data] {
        if let cached = derived.withLock({ $0.versionHashes }) { return cached }
        let hashes = Dictionary(uniqueKeysWithValues: entitiesByName.map { ($0.key, $0.value.versionHash) })
        derived.withLock { $0.versionHashes = hashes }
        return hashes
    }

    /// Core Data's model version checksum (`NSManagedObjectModel.versionChecksum`, stored in a
    /// store's metadata as `NSStoreModelVersionChecksumKey`): base64 of SHA-256 over the entities'
    /// version hashes in the order of their names.
    ///
    /// ```swift
    /// let checksum = model.versionChecksum   // "u970QgYhRHEJGIt0zQr1UhuZL2ZJ1KxBS+B7rkAx0ik=" for example
    /// ```
    public var versionChecksum: String {
        var hasher = SHA256()
        for entity in entities.sorted(by: { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) }) {
            hasher.update(entity.versionHash)
        }
        return hasher.finalize().base64EncodedString()
    }

    /// The digest of the version hashes Core Data writes as `NSStoreModelVersionHashesDigest` in a
    /// store's metadata (with `NSStoreModelVersionHashesVersion` 3): the base64 of SHA-512 over each
    /// entity's name and hash, in entity-name order.
    var versionHashesDigest: String {
        var hasher = SHA512()
        for (name, hash) in entityVersionHashesByName.sorted(by: { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }) {
            hasher.update(name)
            hasher.update(hash)
        }
        return hasher.finalize().base64EncodedString()
    }
}
