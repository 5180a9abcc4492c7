import Foundation

/// How a ``PersistentContainer`` adds one store: where, of which type, with which options
/// (`NSPersistentStoreDescription`).
///
/// ```swift
/// let description = PersistentStoreDescription(url: url)
/// description.type = .sqlite
/// description.durability = .normal              // synchronous = NORMAL: faster, survives a crash but not power loss
/// description.shouldAddStoreAsynchronously = true
/// container.persistentStoreDescriptions = [description]
/// ```
///
/// A description is a class, as in Core Data: the container holds the same instances you configure,
/// and hands them back to the completion handler of
/// ``PersistentContainer/loadPersistentStores(completionHandler:)``. It is `Sendable`: its properties
/// are guarded by a lock, so it may be configured on one thread and read on another. Changing a
/// description after its store was loaded has no effect on that store.
///
/// ``isReadOnly``, ``durability`` and ``timeout`` are views of ``options`` (under the
/// ``PersistentStoreOption`` keys), so setting an option by key and setting the property are the same.
public final class PersistentStoreDescription: Sendable, CustomStringConvertible {
    private struct Values {
        var url: URL?
        var type: StoreType
        var configuration: String?
        var shouldAddStoreAsynchronously = false
        var options: [String: any Sendable] = [:]
    }

    private let values: Protected<Values>

    /// A description of an SQLite store at `url`.
    ///
    /// ```swift
    /// let description = PersistentStoreDescription(url: URL(fileURLWithPath: "/var/lib/notes/Notes.sqlite"))
    /// ```
    public init(url: URL) {
        values = Protected(Values(url: url, type: .sqlite))
    }

    /// A description with no location yet: set ``url`` (or ``type`` to ``StoreType/inMemory``)
    /// before loading.
    public init() {
        values = Protected(Values(url: nil, type: .sqlite))
    }

    /// Where the store lives. For an ``StoreType/inMemory`` store it may be nil; a file store
    /// (SQLite, binary, XML) needs one.
    public var url: URL? {
        get { values.withLock { $0.url } }
        set { values.withLock { $0.url = newValue } }
    }

    /// The store's type; ``StoreType/sqlite`` unless set.
    public var type: StoreType {
        get { values.withLock { $0.type } }
        set { values.withLock { $0.type = newValue } }
    }

    /// The model configuration (set of entities) the store holds; nil for every entity.
    public var configuration: String? {
        get { values.withLock { $0.configuration } }
        set { values.withLock { $0.configuration = newValue } }
    }

    /// Whether ``PersistentContainer/loadPersistentStores(completionHandler:)`` adds this store on a
    /// background queue and calls the completion handler there (false: the store is added, and the
    /// handler called, before `loadPersistentStores` returns). The throwing
    /// ``PersistentContainer/loadPersistentStores()`` always waits.
    public var shouldAddStoreAsynchronously: Bool {
        get { values.withLock { $0.shouldAddStoreAsynchronously } }
        set { values.withLock { $0.shouldAddStoreAsynchronously = newValue } }
    }

    /// The options passed to ``PersistentStoreCoordinator/addPersistentStore(type:configuration:at:options:)``,
    /// keyed by ``PersistentStoreOption`` constants.
    public var options: [String: any Sendable] {
        get { values.withLock { $0.options } }
        set { values.withLock { $0.options = newValue } }
    }

    /// Sets one option (nil removes it).
    ///
    /// ```swift
    /// description.setOption(3, forKey: PersistentStoreOption.maximumReaderCount)
    /// ```
    public func setOption(_ option: (any Sendable)?, forKey key: String) {
        values.withLock { $0.options[key] = option }
    }

    /// Whether the store is opened read-only (a save then throws ``ObjectGraphError/readOnly``).
    /// The ``PersistentStoreOption/readOnly`` option.
    public var isReadOnly: Bool {
        get { (options[PersistentStoreOption.readOnly] as? Bool) ?? false }
        set { setOption(newValue, forKey: PersistentStoreOption.readOnly) }
    }

    /// What an acknowledged save survives: ``StoreDurability/full`` (`synchronous = FULL`, the
    /// default: power loss) or ``StoreDurability/normal`` (`synchronous = NORMAL`: a crash of the
    /// process). The ``PersistentStoreOption/durability`` option; SQLite stores only.
    public var durability: StoreDurability {
        get {
            let value = options[PersistentStoreOption.durability]
            if let durability = value as? StoreDurability { return durability }
            if let raw = value as? String, let durability = StoreDurability(rawValue: raw.lowercased()) { return durability }
            return .full
        }
        set { setOption(newValue, forKey: PersistentStoreOption.durability) }
    }

    /// How long (seconds) a save waits on a lock held by another process before it fails with
    /// ``ObjectGraphError/busy``. The ``PersistentStoreOption/busyTimeout`` option; 5 unless set.
    public var timeout: TimeInterval {
        get { (options[PersistentStoreOption.busyTimeout] as? Double) ?? 5 }
        set { setOption(newValue, forKey: PersistentStoreOption.busyTimeout) }
    }

    public var description: String {
        let (url, type, configuration, asynchronous) = values.withLock {
            ($0.url, $0.type, $0.configuration, $0.shouldAddStoreAsynchronously)
        }
        var text = "PersistentStoreDescription(\(type), \(url?.path ?? "no URL")"
        if let configuration { text += ", configuration \(configuration)" }
        if isReadOnly { text += ", read-only" }
        if type == .sqlite { text += ", durability \(durability)" }
        if asynchronous { text += ", added asynchronously" }
        return text + ")"
    }
}
