import Foundation

extension Notification.Name {
    /// Posted by a coordinator (the notification's object) for every commit to one of its stores
    /// added with ``PersistentStoreOption/remoteChangeNotificationPost`` — by this coordinator,
    /// another one in this process, or another process (`NSPersistentStoreRemoteChange`). The user
    /// info has "historyToken" (a ``PersistentHistoryToken``, when the store keeps history),
    /// "storeUUID" (a `String`) and "storeURL" (a `URL`). Posted on a thread of ObjectGraph's own.
    public static let persistentStoreRemoteChange = Notification.Name("NSPersistentStoreRemoteChangeNotification")
}

/// One commit to a store, heard by its coordinator (ObjectGraph's own form of
/// `Notification.Name.persistentStoreRemoteChange`). See <doc:HistoryAndMultipleProcesses>.
public struct RemoteChange: Sendable, Hashable {
    /// The UUID of the store committed to.
    public let storeUUID: String
    /// The store's file.
    public let storeURL: URL?
    /// The position just after the commit, when the store keeps history.
    public let historyToken: PersistentHistoryToken?

    /// The user info of the notification.
    var userInfo: [AnyHashable: Any] {
        var info: [AnyHashable: Any] = ["storeUUID": storeUUID]
        if let storeURL { info["storeURL"] = storeURL }
        if let historyToken { info["historyToken"] = historyToken }
        return info
    }
}

/// What hears a store's commits for its coordinator: ``SQLiteChangeWatcher``, ``PostgresChangeListener``.
protocol RemoteChangeWatcher: AnyObject, Sendable {
    /// Stops hearing; nothing is reported after it returns (unless called from a report).
    func stop()
}

extension SQLiteChangeWatcher: RemoteChangeWatcher {}

/// A coordinator's watchers and the continuations of its `remoteChanges` streams.
struct RemoteChangeState {
    var watchers: [ObjectIdentifier: any RemoteChangeWatcher] = [:]
    var streams: [Int: AsyncStream<RemoteChange>.Continuation] = [:]
    var nextStream = 0
}

extension PersistentStoreCoordinator {
    /// Every commit to the coordinator's stores added with
    /// ``PersistentStoreOption/remoteChangeNotificationPost``, as it is heard (one stream per access;
    /// it ends when the coordinator goes away).
    ///
    /// ```swift
    /// for await change in coordinator.remoteChanges {
    ///     let history = PersistentHistoryChangeRequest.fetchHistory(after: lastToken)
    ///     …
    /// }
    /// ```
    public var remoteChanges: AsyncStream<RemoteChange> {
        let (stream, continuation) = AsyncStream<RemoteChange>.makeStream(bufferingPolicy: .unbounded)
        let key = remoteState.withLock { state in
            state.nextStream += 1
            state.streams[state.nextStream] = continuation
            return state.nextStream
        }
        continuation.onTermination = { [weak self] _ in _ = self?.remoteState.withLock { $0.streams.removeValue(forKey: key) } }
        return stream
    }

    /// - Throws: ``ObjectGraphError/io`` when the watcher's connection or pipe cannot be opened.
    func startWatchingRemoteChanges(of store: PersistentStore, backend: SQLiteStore, merging: Bool) throws {
        // From now on the store remembers its own transactions, for the watcher to tell them from others'.
        backend.ownTransactions.withLock { if $0 == nil { $0 = [] } }
        let url = store.url
        let identifier = store.identifier
        let watcher: SQLiteChangeWatcher
        do {
            watcher = try SQLiteChangeWatcher(store: store, backend: backend, readsChanges: merging) { [weak self, weak backend] transactions in
                guard let self, let backend else { return }
                self.heard(transactions, store: identifier, url: url, backend: backend, merging: merging)
            }
        } catch let error as ObjectGraphError {
            throw error
        } catch {
            throw ObjectGraphError(.io, "Cannot watch the store at \(url?.path ?? identifier) for remote changes: \(error)", url: url)
        }
        remoteState.withLock { $0.watchers[ObjectIdentifier(store)] = watcher }
    }

    func stopWatchingRemoteChanges(of store: PersistentStore) {
        remoteState.withLock { $0.watchers.removeValue(forKey: ObjectIdentifier(store)) }?.stop()
    }

    /// Stops every watcher (when the coordinator goes away) and ends the streams.
    func stopAllRemoteChangeWatchers() {
        let (watchers, streams) = remoteState.withLock { state in
            defer { state.watchers = [:]; state.streams = [:] }
            return (Array(state.watchers.values), Array(state.streams.values))
        }
        for watcher in watchers { watcher.stop() }
        for stream in streams { stream.finish() }
    }

    /// Posts what a watcher heard and, with `merging`, hands commits made elsewhere to the contexts
    /// that merge automatically.
    private func heard(_ transactions: [PersistentHistoryTransaction]?, store identifier: String, url: URL?, backend: SQLiteStore, merging: Bool) {
        var changes: [RemoteChange] = []
        if let transactions, !transactions.isEmpty {
            changes = transactions.map { RemoteChange(storeUUID: identifier, storeURL: url, historyToken: $0.token) }
        } else {
            let token = transactions == nil ? nil : currentPersistentHistoryToken(fromStores: persistentStores.filter { $0.identifier == identifier })
            changes = [RemoteChange(storeUUID: identifier, storeURL: url, historyToken: token)]
        }
        // Commits made elsewhere: the row cache no longer serves their rows, and, when asked, contexts merge them.
        let own = backend.ownTransactions.withLock { own -> Set<Int64> in
            guard var pending = own else { return [] }
            let numbers = Set((transactions ?? []).map(\.transactionNumber))
            let mine = pending.intersection(numbers)
            pending.subtract(numbers)
            if let last = transactions?.last?.transactionNumber { pending = pending.filter { $0 > last } }
            own = pending
            return mine
        }
        let foreign = (transactions ?? []).filter { !own.contains($0.transactionNumber) }
        // A commit that cannot be named row by row — a store without history, or history purged
        // before it was read (the watcher reports no transaction) — may have changed any row.
        if transactions?.isEmpty ?? true { rowCache.evictAll() }
        absorb(foreign.compactMap { ManagedObjectContext.SaveChanges($0.objectIDNotification()) }, merging: merging)
        post(changes)
    }

    /// Posts `.persistentStoreRemoteChange` and yields on every `remoteChanges` stream, for each change.
    private func post(_ changes: [RemoteChange]) {
        let continuations = remoteState.withLock { Array($0.streams.values) }
        for change in changes {
            NotificationCenter.default.post(name: .persistentStoreRemoteChange, object: self, userInfo: change.userInfo)
            for continuation in continuations { continuation.yield(change) }
        }
    }

    /// Commits made elsewhere: their rows leave the row cache and, with `merging`, the contexts
    /// that merge automatically get them as one change.
    private func absorb(_ saves: [ManagedObjectContext.SaveChanges], merging: Bool) {
        guard !saves.isEmpty else { return }
        var inserted = Set<ManagedObjectID>(), updated = Set<ManagedObjectID>(), deleted = Set<ManagedObjectID>()
        var keys: [ManagedObjectID: Set<String>] = [:]
        for saved in saves {
            inserted.formUnion(saved.insertedObjectIDs)
            updated.formUnion(saved.updatedObjectIDs)
            deleted.formUnion(saved.deletedObjectIDs)
            keys.merge(saved.changedKeys) { $0.union($1) }
        }
        updated.subtract(deleted)
        inserted.subtract(deleted)
        rowCache.evict(Array(updated) + Array(deleted))
        if merging && !(inserted.isEmpty && updated.isEmpty && deleted.isEmpty) {
            didWriteWithoutContext(ManagedObjectContext.SaveChanges(
                insertedObjectIDs: inserted, updatedObjectIDs: updated, deletedObjectIDs: deleted, changedKeys: keys))
        }
    }

    /// Listens for the commits of every coordinator to a PostgreSQL store (see ``PostgresChangeLog``).
    ///
    /// - Throws: ``ObjectGraphError/io`` when the listening connection cannot be made.
    func startListeningForChanges(of store: PersistentStore, backend: PostgresStore) throws {
        let url = store.url
        let identifier = store.identifier
        let own = backend.instanceID
        let listener = try PostgresChangeListener(backend: backend, store: store) { [weak self] entries in
            guard let self else { return }
            guard let entries else {
                // Commits the log no longer names: any row may have changed.
                self.rowCache.evictAll()
                self.post([RemoteChange(storeUUID: identifier, storeURL: url, historyToken: nil)])
                return
            }
            let foreign = entries.filter { $0.author != own }.map {
                ManagedObjectContext.SaveChanges(
                    insertedObjectIDs: Set($0.inserted), updatedObjectIDs: Set($0.updated), deletedObjectIDs: Set($0.deleted), changedKeys: $0.changedKeys)
            }
            self.absorb(foreign, merging: true)
            self.post(entries.map {
                RemoteChange(storeUUID: identifier, storeURL: url, historyToken: PersistentHistoryToken(store: identifier, transactionNumber: $0.number))
            })
        }
        remoteState.withLock { $0.watchers[ObjectIdentifier(store)] = listener }
    }
}
