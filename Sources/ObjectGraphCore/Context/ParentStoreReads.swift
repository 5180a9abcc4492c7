import Foundation

// What a parent store answers a context's reads with.

extension StoreFetchRequest {
    /// The same fetch without offset and limit, for rows that are paged after they are merged.
    var unpaged: StoreFetchRequest {
        var request = self
        request.fetchLimit = 0
        request.fetchOffset = 0
        return request
    }

    /// How many rows this fetch returns, given how many it matches before offset and limit.
    func pagedCount(ofUnpaged total: Int) -> Int {
        let remaining = max(0, total - fetchOffset)
        return fetchLimit > 0 ? min(fetchLimit, remaining) : remaining
    }
}

/// Snapshots handed to a requester, with the row-cache references it may claim.
struct ViewedSnapshots: Sendable {
    var snapshots: [ManagedObjectID: Snapshot] = [:]
    /// References on row-cache rows, for the requester's objects to claim; released when dropped.
    var leases: RowLeases?
}

/// The rows of a fetch, as a parent store returns them.
struct FetchedRows: Sendable {
    var rows: [StoreRow]
    /// Whether the rows are sorted, offset and limited as the request asked (the store did it);
    /// false when unsaved changes were applied on the way, and the requester must do it.
    var isOrdered: Bool
    /// References on the rows' row-cache entries, when asked for.
    var leases: RowLeases?
    /// The rows of the destinations of the request's ``StoreFetchRequest/prefetchedToOnes``
    /// that the store read with the rows (none when it did not), with references in `leases`.
    var destinations: [StoreRow] = []
}
