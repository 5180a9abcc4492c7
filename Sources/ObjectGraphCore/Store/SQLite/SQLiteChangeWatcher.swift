import Foundation
import GRDB
#if canImport(Glibc)
import Glibc
#endif

/// Hears every commit to an SQLite store file — by this process or another — and reports it.
///
/// A dedicated read-only connection compares SQLite's `PRAGMA data_version`, which changes when
/// any other connection commits. It is asked when the file or its `-wal` changes (inotify, on
/// Linux: a commit is heard within about a millisecond and an idle watcher costs nothing but a
/// check every ``fallbackInterval``) or, where there is no inotify, every ``pollInterval``.
/// With history, each new transaction is read and reported on its own; without, one change is
/// reported per check that sees a new version (commits close together are reported once).
final class SQLiteChangeWatcher: @unchecked Sendable {
    // `stopped` and `lastNumber`/`lastVersion` are used by the watcher's thread only, but `stop()`,
    // which writes to the wake-up pipe; the pipe's file descriptors never change after init.

    /// What the watcher heard: the transactions committed since the last report (nil without history).
    typealias Report = @Sendable (_ transactions: [PersistentHistoryTransaction]?) -> Void

    static let fallbackInterval: Int32 = 1000  // milliseconds, with inotify
    static let pollInterval: Int32 = 20  // milliseconds, without

    private let url: URL
    private let backend: SQLiteStore
    private let store: PersistentStore
    private let readsChanges: Bool
    private let report: Report
    private let connection: DatabaseQueue
    private let wakeRead: Int32
    private let wakeWrite: Int32
    private let notify: Int32
    private let done = DispatchSemaphore(value: 0)
    private let running = Protected(true)
    private let thread = Protected<pthread_t?>(nil)
    private var lastVersion: Int64 = 0
    private var lastNumber: Int64 = 0
    /// Whether the last check failed and the next comes after ``pollInterval`` rather than an event.
    private var retrySoon = false
    /// Checks left, one a millisecond, for a commit whose -wal write was heard to become visible.
    private var pendingChecks = 0
    static let settlingChecks = 250

    /// - Parameter readsChanges: whether reported transactions carry their changes (to merge them).
    init(store: PersistentStore, backend: SQLiteStore, readsChanges: Bool, report: @escaping Report) throws {
        self.url = backend.url
        self.backend = backend
        self.store = store
        self.readsChanges = readsChanges
        self.report = report
        var configuration = Configuration()
        configuration.readonly = true
        configuration.label = "ObjectGraph.SQLiteChangeWatcher"
        connection = try DatabaseQueue(path: url.path, configuration: configuration)
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw ObjectGraphError(.io, "Cannot watch \(url.path) for remote changes: pipe() failed (errno \(errno))", url: url) }
        wakeRead = fds[0]
        wakeWrite = fds[1]
        #if os(Linux)
        notify = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        if notify >= 0 {
            let mask = UInt32(IN_MODIFY | IN_CLOSE_WRITE | IN_CREATE | IN_MOVED_TO)
            _ = inotify_add_watch(notify, url.deletingLastPathComponent().path, mask)
        }
        #else
        notify = -1
        #endif
        lastVersion = try version()
        if backend.tracksHistory { lastNumber = try backend.lastTransactionNumber() ?? 0 }
        ThreadOfItsOwn.start { [self] in run() }
    }

    /// Stops the watcher and waits for its thread to finish (it reports nothing after), unless
    /// called from that thread (a report that released the last reference to the coordinator).
    func stop() {
        guard running.withLock({ let was = $0; $0 = false; return was }) else { return }
        var byte: UInt8 = 1
        _ = write(wakeWrite, &byte, 1)
        let onWatcherThread = thread.withLock { $0.map { pthread_equal($0, pthread_self()) != 0 } ?? false }
        if !onWatcherThread { done.wait() }
    }

    private func version() throws -> Int64 {
        try connection.inDatabase { db in try Int64.fetchOne(db, sql: "PRAGMA data_version") ?? 0 }
    }

    private func run() {
        thread.withLock { $0 = pthread_self() }
        defer {
            close(wakeRead)
            close(wakeWrite)
            if notify >= 0 { close(notify) }
            try? connection.close()
            done.signal()
        }
        let names = [url.lastPathComponent, url.lastPathComponent + "-wal", url.lastPathComponent + "-journal"]
        while running.withLock({ $0 }) {
            var descriptors = [pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)]
            if notify >= 0 { descriptors.append(pollfd(fd: notify, events: Int16(POLLIN), revents: 0)) }
            // A commit writes its frames to the -wal (the event) before it is visible (the
            // shared-memory index, which raises no event, is updated after the sync): until the
            // commit shows, the watcher looks again every millisecond, for at most `settling`.
            let settling = pendingChecks > 0
            let timeout = settling ? 1 : notify >= 0 && !retrySoon ? Self.fallbackInterval : Self.pollInterval
            retrySoon = false
            let ready = poll(&descriptors, nfds_t(descriptors.count), timeout)
            guard running.withLock({ $0 }) else { return }
            let event = ready > 0 && descriptors.count > 1 && descriptors[1].revents != 0
            if event && !drainNotifications(about: names) && !settling { continue }
            if check() {
                pendingChecks = 0
            } else if event {
                pendingChecks = Self.settlingChecks
            } else if pendingChecks > 0 {
                pendingChecks -= 1
            }
        }
    }

    /// Reads pending inotify events; true when one is about the store's files.
    private func drainNotifications(about names: [String]) -> Bool {
        #if os(Linux)
        var relevant = false
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(notify, $0.baseAddress, $0.count) }
            guard count > 0 else { break }
            var offset = 0
            buffer.withUnsafeBytes { bytes in
                while offset + 16 <= count {
                    let length = Int(bytes.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self))
                    let nameBytes = bytes[(offset + 16)..<min(count, offset + 16 + length)].prefix { $0 != 0 }
                    if names.contains(String(decoding: nameBytes, as: UTF8.self)) { relevant = true }
                    offset += 16 + length
                }
            }
        }
        return relevant
        #else
        return true
        #endif
    }

    /// Reports what was committed since the last check, if anything; false when nothing was.
    @discardableResult
    private func check() -> Bool {
        guard let current = try? version() else {
            retrySoon = true
            return false
        }
        guard current != lastVersion else { return false }
        lastVersion = current
        guard backend.tracksHistory else {
            report(nil)
            return true
        }
        let transactions: [PersistentHistoryTransaction]
        do {
            transactions = try backend.historyTransactions(after: lastNumber, orAfter: nil, withChanges: readsChanges, store: store)
        } catch let error as ObjectGraphError where error.code == .historyTokenExpired {
            // History after `lastNumber` was purged meanwhile: what it held cannot be reported one by
            // one any more; report the commit and go on from the end.
            if let number = try? backend.lastTransactionNumber() { lastNumber = number }
            report([])
            return true
        } catch {
            // A read that failed (the store busy, say) is tried again soon: nothing may be skipped.
            lastVersion = -1
            retrySoon = true
            return false
        }
        // A commit that recorded no transaction (keys reserved for permanent IDs, a consumer's
        // token) has nothing to report.
        guard let last = transactions.last else { return true }
        lastNumber = last.transactionNumber
        report(transactions)
        return true
    }
}
