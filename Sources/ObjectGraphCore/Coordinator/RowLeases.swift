import Foundation

/// References on row-cache rows handed to a requester: each object that keeps its row claims its
/// reference; whatever is not claimed is released when the leases go away, so a reference cannot
/// be forgotten.
final class RowLeases: @unchecked Sendable {
    // Made on the parent store's queue and handed to the waiting requester, which alone uses it
    // from then on (the hand-off through the queue orders the accesses).
    private let cache: RowCache
    private var ids: [ManagedObjectID]
    private var index: [ManagedObjectID: Int]?

    init(cache: RowCache, ids: [ManagedObjectID]) {
        self.cache = cache
        self.ids = ids
    }

    /// Takes the reference on a row; false when there is none (left) to take.
    func claim(_ id: ManagedObjectID) -> Bool {
        if ids.count <= 8 {
            guard let position = ids.firstIndex(of: id) else { return false }
            ids.swapAt(position, ids.count - 1)
            ids.removeLast()
            return true
        }
        if index == nil {
            var built: [ManagedObjectID: Int] = [:]
            built.reserveCapacity(ids.count)
            for id in ids { built[id, default: 0] += 1 }
            index = built
        }
        guard let count = index?[id], count > 0 else { return false }
        index?[id] = count - 1
        return true
    }

    deinit {
        if let index {
            let left = index.flatMap { id, count in repeatElement(id, count: count) }
            if !left.isEmpty { cache.release(left) }
        } else if !ids.isEmpty {
            cache.release(ids)
        }
    }
}
