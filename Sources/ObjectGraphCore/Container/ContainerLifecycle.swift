/// A container's lifecycle as a value: each step says what it found, and the container does what
/// the step returns. The container keeps it in a `Protected` lock; nothing here blocks or does I/O.
///
/// ```
/// open ──shutdown──▶ draining ──all work finished──▶ closed
///                      │  ▲
///                      └──┘ time limit passed: stores stay open, shutdown may be called again
/// ```
struct ContainerLifecycle {
    enum Phase: Equatable {
        /// Stores may be loaded; contexts and background tasks are handed out.
        case open
        /// A shutdown is waiting for outstanding work; new work is still accepted (and waited for),
        /// so work that schedules more work can finish.
        case draining
        /// The stores are closed; the container takes no new work.
        case closed
    }

    private(set) var phase = Phase.open
    /// The stores added for descriptions, in the order they were loaded.
    private(set) var stores: [(description: ObjectIdentifier, store: PersistentStore)] = []
    /// Descriptions whose store is being added.
    private var loading: Set<ObjectIdentifier> = []

    var acceptsWork: Bool { phase != .closed }

    enum LoadAction: Equatable {
        /// Add the store.
        case add
        /// The description's store is already added (or being added): nothing to do.
        case alreadyLoaded
        /// The container was shut down.
        case refuse
    }

    mutating func beginLoading(_ description: ObjectIdentifier) -> LoadAction {
        guard phase != .closed else { return .refuse }
        if loading.contains(description) || stores.contains(where: { $0.description == description }) { return .alreadyLoaded }
        loading.insert(description)
        return .add
    }

    /// Records a store added for a description. Returns false when the container was closed while
    /// the store was being added: the caller must remove it again.
    mutating func finishLoading(_ description: ObjectIdentifier, store: PersistentStore?) -> Bool {
        loading.remove(description)
        guard let store else { return true }
        guard phase != .closed else { return false }
        stores.append((description, store))
        return true
    }

    enum ShutdownAction: Equatable {
        /// Wait for the outstanding work, then call ``finishShutdown(allWorkFinished:)``.
        case wait
        /// Another shutdown already closed the stores.
        case alreadyClosed
    }

    mutating func beginShutdown() -> ShutdownAction {
        if phase == .closed { return .alreadyClosed }
        phase = .draining
        return .wait
    }

    /// Ends a wait. When all work finished, the container closes and the stores it returns are
    /// the caller's to close (none when a concurrent shutdown closed them first); otherwise the
    /// container stays draining with its stores open.
    mutating func finishShutdown(allWorkFinished: Bool) -> [PersistentStore] {
        guard allWorkFinished, phase == .draining else { return [] }
        phase = .closed
        defer { stores = [] }
        return stores.map(\.store)
    }
}
