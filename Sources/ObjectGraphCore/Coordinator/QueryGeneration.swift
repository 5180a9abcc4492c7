import Foundation
import Synchronization

/// A query generation: one consistent version of a coordinator's stores that a context can be
/// pinned to (`NSQueryGenerationToken`). See <doc:HistoryAndMultipleProcesses>.
///
/// ```swift
/// try context.setQueryGenerationFrom(.current)     // pin: reads see the stores as they are now
/// let token = context.queryGenerationToken           // this generation; pins another context to it too
/// try other.setQueryGenerationFrom(token)
/// try context.setQueryGenerationFrom(nil)           // unpin: reads see the latest commits again
/// ```
///
/// ``current`` asks for the generation of the moment it is given to
/// ``ManagedObjectContext/setQueryGenerationFrom(_:)``; every other token names one pinned
/// generation, which lives as long as a context is pinned to it. Tokens are equal when they name
/// the same generation.
public final class QueryGenerationToken: Sendable, Hashable, CustomStringConvertible {
    /// The generation's number, unique in the process; 0 for ``current``.
    let number: UInt64

    init(number: UInt64) {
        self.number = number
    }

    /// The token that pins a context to the stores as they are when it is set.
    public static var current: QueryGenerationToken { currentToken }
    private static let currentToken = QueryGenerationToken(number: 0)

    public static func == (lhs: QueryGenerationToken, rhs: QueryGenerationToken) -> Bool { lhs.number == rhs.number }
    public func hash(into hasher: inout Hasher) { hasher.combine(number) }

    public var description: String { number == 0 ? "QueryGenerationToken(current)" : "QueryGenerationToken(\(number))" }
}

/// What a store keeps of one version of itself while a generation is pinned: for SQLite, a reader
/// connection in its read transaction; for the stores in memory, a copy-on-write copy of the rows.
protocol PinnedStoreVersion: AnyObject, Sendable {
    /// The backend whose reads see this version (for a file store in memory, the rows' own store).
    var backendID: ObjectIdentifier { get }
}

/// A store's version as its backend keeps it for a query generation: the in-memory store's copy
/// of its rows, the SQLite store's reader in a read transaction of its own.
final class PinnedContent<Content: Sendable>: PinnedStoreVersion {
    let content: Content
    let backendID: ObjectIdentifier
    init(_ content: Content, backend: AnyObject) {
        self.content = content
        self.backendID = ObjectIdentifier(backend)
    }
}

/// A pinned generation: a version of each of a coordinator's stores, read instead of the stores'
/// latest while it is ``reading``. Contexts pinned to it hold it; when the last lets it go, the
/// versions are released (the SQLite reader ends its transaction, so the WAL can be checkpointed).
final class QueryGeneration: Sendable {
    let token: QueryGenerationToken
    /// The version of each store, by the store's backend.
    private let versions: [ObjectIdentifier: any PinnedStoreVersion]
    private weak let coordinator: PersistentStoreCoordinator?

    private static let counter = Atomic<UInt64>(0)

    /// Pins the current version of each store of `coordinator`.
    ///
    /// - Throws: what a store throws opening its reader.
    init(coordinator: PersistentStoreCoordinator) throws {
        token = QueryGenerationToken(number: Self.counter.add(1, ordering: .relaxed).newValue)
        var versions: [ObjectIdentifier: any PinnedStoreVersion] = [:]
        // Under the coordinator's access, so that no store is added or removed halfway.
        try coordinator.access {
            for store in coordinator.persistentStores {
                let version = try store.backend.pinVersion(store: store)
                versions[version.backendID] = version
            }
        }
        self.versions = versions
        self.coordinator = coordinator
        coordinator.pinnedGenerations.add(1, ordering: .relaxed)
    }

    deinit {
        coordinator?.pinnedGenerations.subtract(1, ordering: .relaxed)
    }

    /// The generation the current store reads see, if any (set by ``reading(_:)``).
    @TaskLocal static var current: QueryGeneration?

    /// Runs store reads that see this generation.
    func reading<T>(_ body: () throws -> T) rethrows -> T {
        try Self.$current.withValue(self) { try body() }
    }

    /// The version of a store this generation pinned; nil for a store added after it.
    func version<Version: PinnedStoreVersion>(of backend: some StoreBackend, as type: Version.Type) -> Version? {
        versions[ObjectIdentifier(backend)] as? Version
    }

    /// The pinned version of `backend` the current read must see, if a pinned context is reading.
    static func pinnedVersion<Version: PinnedStoreVersion>(of backend: some StoreBackend, as type: Version.Type) -> Version? {
        guard let generation = current else { return nil }
        return generation.version(of: backend, as: type)
    }
}

/// The coordinator's live generations, so that a token pins another context to the same one.
struct QueryGenerationRegistry {
    private struct Entry { weak var generation: QueryGeneration? }
    private var entries: [UInt64: Entry] = [:]

    mutating func add(_ generation: QueryGeneration) {
        entries = entries.filter { $0.value.generation != nil }
        entries[generation.token.number] = Entry(generation: generation)
    }

    func generation(for token: QueryGenerationToken) -> QueryGeneration? {
        entries[token.number]?.generation
    }
}
