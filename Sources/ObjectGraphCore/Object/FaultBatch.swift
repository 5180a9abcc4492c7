import Foundation

/// Objects of one batch of a batched fetch, fulfilled together when the first of them fires.
final class FaultBatch {
    var ids: [ManagedObjectID]
    init(ids: [ManagedObjectID]) { self.ids = ids }
}
