import Foundation
import Synchronization

/// The identity of an object: its entity, its store and its row (`NSManagedObjectID`).
///
/// IDs are values that may cross queues: to hand an object to another context, hand its ID and
/// resolve it there with `object(with:)`, `existingObject(with:)` or `registeredObject(for:)`.
///
/// An object inserted into a context has a temporary ID until it is saved (or until
/// `obtainPermanentIDs(for:)`); a temporary ID means nothing to other contexts.
///
/// Two permanent IDs are equal when they name the same row (entity tree and primary key) of the
/// same store, identified by its UUID (`NSStoreUUID`), whichever coordinator produced them: IDs
/// kept across a restart, or read back from URIs, compare equal. A temporary ID is equal only to
/// itself.
public struct ManagedObjectID: Hashable, Sendable, CustomStringConvertible, Comparable {
    /// The entity of the object.
    public let entity: EntityDescription
    let key: Key

    enum Key: Hashable, Sendable {
        /// The number, and the object every copy of the ID shares (``TemporaryCopies``), which
        /// hashing and comparing IDs never read.
        case temporary(UInt64, TemporaryCopies)
        case permanent(PersistentStore, Int64)

        static func == (lhs: Key, rhs: Key) -> Bool {
            switch (lhs, rhs) {
            case (.temporary(let a, _), .temporary(let b, _)): a == b
            // The same row of the same store (its UUID), whichever coordinator opened it.
            case (.permanent(let s, let a), .permanent(let t, let b)): a == b && (s === t || s.identifier == t.identifier)
            default: false
            }
        }

        func hash(into hasher: inout Hasher) {
            switch self {
            case .temporary(let n, _): hasher.combine(n)
            case .permanent(let store, let pk):
                hasher.combine(pk)
                hasher.combine(store.identifierHash)
            }
        }
    }

    /// An object every copy of a temporary ID holds, and nothing else does: it is alive exactly as
    /// long as some copy of the ID exists. The tables that map a saved object's temporary ID to its
    /// permanent one (``IDAliases``) keep an entry only while it is.
    final class TemporaryCopies: Sendable {}

    private static let temporaryCounter = Atomic<UInt64>(0)

    static func temporary(for entity: EntityDescription) -> ManagedObjectID {
        let number = temporaryCounter.add(1, ordering: .relaxed).newValue
        return ManagedObjectID(entity: entity, key: .temporary(number, TemporaryCopies()))
    }

    init(entity: EntityDescription, key: Key) {
        self.entity = entity
        self.key = key
    }

    init(entity: EntityDescription, store: PersistentStore, primaryKey: Int64) {
        self.entity = entity
        self.key = .permanent(store, primaryKey)
    }

    /// The name of the object's entity.
    public var entityName: String { entity.name }

    /// Whether the ID is temporary (the object has not been saved, nor given a permanent ID).
    public var isTemporaryID: Bool { if case .temporary = key { true } else { false } }

    /// The store of the object, nil for a temporary ID.
    public var persistentStore: PersistentStore? { if case .permanent(let store, _) = key { store } else { nil } }

    /// The row number in the store; nil for a temporary ID.
    var primaryKey: Int64? { if case .permanent(_, let pk) = key { pk } else { nil } }

    /// A URL that names the object, in Core Data's form: `x-coredata://STORE-UUID/Entity/pN`, the
    /// store's `NSStoreUUID`, the entity's name and the row's primary key (`Z_PK`), so a URI an app
    /// kept from Core Data names the same object here, and the other way round. A temporary ID's is
    /// `x-coredata:///Entity/tUUIDN`, as Core Data's (no store; meaningful only in this process).
    /// Turn it back into an ID with the coordinator's `managedObjectID(forURIRepresentation:)`,
    /// which also reads the `x-objectgraph://` URIs earlier versions wrote.
    ///
    /// ```swift
    /// note.objectID.uriRepresentation()   // x-coredata://6B1D3C2A-…/Note/p12
    /// ```
    public func uriRepresentation() -> URL {
        switch key {
        case .temporary(let n, _): URL(string: "\(Self.uriScheme):///\(entity.name)/t\(Self.temporaryURIPrefix)\(n)")!
        case .permanent(let store, let pk): URL(string: "\(Self.uriScheme)://\(store.identifier)/\(entity.name)/p\(pk)")!
        }
    }

    /// The scheme of the URIs ``uriRepresentation()`` writes: Core Data's.
    static let uriScheme = "x-coredata"

    /// The schemes `managedObjectID(forURIRepresentation:)` reads: Core Data's, and the one earlier
    /// versions of ObjectGraph wrote.
    static let uriSchemes: Set<String> = [uriScheme, "x-objectgraph"]

    /// What a temporary ID's URI puts before its number, as Core Data puts a UUID there: one per
    /// process, so temporary URIs of two processes never look alike.
    private static let temporaryURIPrefix = UUID().uuidString

    // Equality: two IDs of one row are equal whatever entity of its inheritance tree they were
    // made with (a foreign key knows only the destination entity), and whichever model instance
    // that entity belongs to (two coordinators may each load the model): the tree is named by its
    // root entity, whose table holds the row.
    public static func == (lhs: ManagedObjectID, rhs: ManagedObjectID) -> Bool {
        guard lhs.key == rhs.key else { return false }
        let left = lhs.entity.rootEntity!, right = rhs.entity.rootEntity!
        return left === right || left.name == right.name
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(key)
    }

    /// The hash sets and dictionaries of IDs use (the identity map, change sets, merges): one
    /// word through the standard library's one-word hash instead of a `Hasher` fed two. Equal IDs
    /// have equal words (the row number, mixed with the store's hash for a permanent ID).
    public func _rawHashValue(seed: Int) -> Int {
        switch key {
        case .temporary(let n, _): n._rawHashValue(seed: seed)
        case .permanent(let store, let pk): (UInt64(bitPattern: pk) ^ UInt64(bitPattern: Int64(store.identifierHash)))._rawHashValue(seed: seed)
        }
    }

    public static func < (lhs: ManagedObjectID, rhs: ManagedObjectID) -> Bool {
        switch (lhs.key, rhs.key) {
        case (.permanent(_, let a), .permanent(_, let b)): a < b
        case (.temporary(let a, _), .temporary(let b, _)): a < b
        case (.permanent, .temporary): true
        case (.temporary, .permanent): false
        }
    }

    public var description: String {
        switch key {
        case .temporary(let n, _): "\(entity.name)/t\(n)"
        case .permanent(_, let pk): "\(entity.name)/p\(pk)"
        }
    }
}
