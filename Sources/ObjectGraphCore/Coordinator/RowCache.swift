import Foundation
import Synchronization

/// The coordinator's row cache: snapshots shared by every context on the coordinator, so a second
/// context faulting an object another context fetched does not touch the store.
///
/// Entries are reference-counted by the contexts that use them (an object holding the row's data,
/// or a context that fetched the row's ID with its values) and dropped when none does, so memory
/// follows what contexts hold.
///
/// A row another coordinator or a batch request changed is evicted: nobody reads it from the cache
/// any more. But one that is referenced stays, marked stale, for its holders alone: an object a
/// fetch returned as a fault fills itself from the snapshot the fetch read (``heldSnapshot(for:maximumAge:)``),
/// as in Core Data, rather than going back to the store from an accessor that cannot throw.
final class RowCache: Sendable {
    struct Entry {
        var snapshot: Snapshot
        var references: Int
        var timestamp: Double
        /// Evicted while referenced: kept for its holders only, until a newer read or save replaces it.
        var isStale = false
    }

    private let entries = Protected<[ManagedObjectID: Entry]>([:])
    /// How many evictions there have been (changed under the entries' lock).
    private let evictions = Atomic<UInt64>(0)
    let hits = Atomic<Int>(0)
    let misses = Atomic<Int>(0)

    var count: Int { entries.withLock { $0.count } }

    /// Noted by a read before it reads the store: rows read since an eviction may predate the
    /// write that caused it.
    /// (Acquiring: a read that sees an eviction's count reads after the write it followed.)
    var evictionMark: UInt64 { evictions.load(ordering: .acquiring) }

    /// Adds rows read from a store, keeping the newer snapshot when one is already cached; each row
    /// gains a reference when `retain` is true. Rows of a read that started (`readSince`, its
    /// ``evictionMark``) before an eviction are not cached: they may be what a batch request changed.
    func register(_ rows: [StoreRow], retain: Bool, readSince mark: UInt64? = nil) {
        let now = Date.timeIntervalSinceReferenceDate
        entries.withLock { entries in
            if let mark, evictions.load(ordering: .relaxed) != mark { return }
            for row in rows {
                guard let snapshot = row.snapshot else { continue }
                if var entry = entries[row.id] {
                    // A stale entry's row was read again after its eviction (else `mark` stopped it).
                    if entry.isStale || snapshot.version >= entry.snapshot.version {
                        entry.snapshot = snapshot
                        entry.timestamp = now
                        entry.isStale = false
                    }
                    if retain { entry.references += 1 }
                    entries[row.id] = entry
                } else {
                    entries[row.id] = Entry(snapshot: snapshot, references: retain ? 1 : 0, timestamp: now)
                }
            }
        }
    }

    /// The cached snapshot of an object no older than `maximumAge` seconds (nil: any age), taking a
    /// reference on it when found.
    func retainSnapshot(for id: ManagedObjectID, maximumAge: Double? = nil) -> Snapshot? {
        let now = Date.timeIntervalSinceReferenceDate
        let snapshot: Snapshot? = entries.withLock { entries in
            guard var entry = entries[id], !entry.isStale else { return nil }
            if let maximumAge, now - entry.timestamp > maximumAge { return nil }
            entry.references += 1
            entries[id] = entry
            return entry.snapshot
        }
        if snapshot == nil { misses.add(1, ordering: .relaxed) } else { hits.add(1, ordering: .relaxed) }
        return snapshot
    }

    /// The snapshot of a row the caller already holds a reference on (an object fetched as a
    /// fault), stale or not, no older than `maximumAge` seconds (nil: any age); no reference is taken.
    func heldSnapshot(for id: ManagedObjectID, maximumAge: Double?) -> Snapshot? {
        let now = Date.timeIntervalSinceReferenceDate
        let snapshot: Snapshot? = entries.withLock { entries in
            guard let entry = entries[id], entry.references > 0 else { return nil }
            if let maximumAge, now - entry.timestamp > maximumAge { return nil }
            return entry.snapshot
        }
        if snapshot != nil { hits.add(1, ordering: .relaxed) }
        return snapshot
    }

    /// Takes a reference on each cached row of `ids`.
    func retain(_ ids: [ManagedObjectID]) {
        entries.withLock { entries in
            for id in ids { entries[id]?.references += 1 }
        }
    }

    /// Drops a reference on each row; a row nobody references leaves the cache.
    func release(_ ids: some Sequence<ManagedObjectID>) {
        entries.withLock { entries in
            for id in ids {
                guard var entry = entries[id] else { continue }
                entry.references -= 1
                if entry.references <= 0 { entries[id] = nil } else { entries[id] = entry }
            }
        }
    }

    /// Records what a save wrote: new snapshots replace cached ones (keeping their references),
    /// deleted rows leave.
    func didSave(snapshots: [ManagedObjectID: Snapshot], deleted: [ManagedObjectID]) {
        let now = Date.timeIntervalSinceReferenceDate
        entries.withLock { entries in
            for (id, snapshot) in snapshots {
                if var entry = entries[id] {
                    entry.snapshot = snapshot
                    entry.timestamp = now
                    entry.isStale = false
                    entries[id] = entry
                }
            }
            for id in deleted { entries[id] = nil }
        }
    }

    /// Drops rows a write without snapshots (a batch request, another coordinator's commit)
    /// changed, once it is committed: a referenced row stays for its holders only, marked stale.
    /// Reads that started before cache nothing they read.
    func evict(_ ids: [ManagedObjectID], _ more: [ManagedObjectID] = []) {
        entries.withLock { entries in
            evictions.add(1, ordering: .releasing)
            if entries.isEmpty { return }  // a batch request's 10,000 IDs, hashed for nothing
            for id in ids { Self.evict(id, from: &entries) }
            for id in more { Self.evict(id, from: &entries) }
        }
    }

    private static func evict(_ id: ManagedObjectID, from entries: inout [ManagedObjectID: Entry]) {
        if let entry = entries[id] { entries[id] = evicted(entry) }
    }

    /// An entry once evicted: kept stale while referenced, gone otherwise.
    private static func evicted(_ entry: Entry) -> Entry? {
        guard entry.references > 0 else { return nil }
        var entry = entry
        entry.isStale = true
        return entry
    }

    /// Drops every cached row of an entity tree in one store: what a batch request that changed rows
    /// without listing them (``StoreBatchResult/unlistedEntities``) needs, once it is committed.
    func evict(entityTreeOf entity: EntityDescription, in store: PersistentStore) {
        let root = entity.rootEntity
        entries.withLock { entries in
            evictions.add(1, ordering: .releasing)
            let evicted = entries.keys.filter { $0.entity.rootEntity === root && $0.persistentStore === store }
            for id in evicted { Self.evict(id, from: &entries) }
        }
    }

    /// Evicts every row, as ``evict(_:_:)`` does: for commits that may have changed any row (another
    /// process's, unnamed by history or a purged change log).
    func evictAll() {
        entries.withLock { entries in
            evictions.add(1, ordering: .releasing)
            entries = entries.compactMapValues(Self.evicted)
        }
    }
}
