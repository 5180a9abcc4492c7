import Foundation

/// The results of a batched fetch: a random-access collection that holds only the matches'
/// primary keys and materialises objects one batch at a time (`fetchBatchSize` rows read in one
/// query when the first of them is used). The batch in use is kept; earlier batches are released
/// unless the program keeps their objects, so memory stays bounded however many rows match.
///
/// ```swift
/// let request = FetchRequest<ManagedObject>(entityName: "Item")
/// request.fetchBatchSize = 100
/// for item in try context.fetchBatched(request) { total += item.value(forKey: "i0") as! Int64 }
/// ```
///
/// It is a programmer error to use the collection off its context's queue, or after the context
/// was reset.
public final class BatchedFetchResults<Element>: RandomAccessCollection {
    public typealias Index = Int

    let context: ManagedObjectContext
    let batchSize: Int
    private let segments: [(store: PersistentStore, keys: [Int64], codes: [Int32], start: Int)]
    private let model: ManagedObjectModel
    /// The objects of the batch in use.
    private var current: (batch: Int, objects: [ManagedObject])?

    init(context: ManagedObjectContext, batchSize: Int, segments: [(PersistentStore, [Int64], [Int32])], model: ManagedObjectModel) {
        self.context = context
        self.batchSize = Swift.max(1, batchSize)
        self.model = model
        var start = 0
        var list: [(PersistentStore, [Int64], [Int32], Int)] = []
        for (store, keys, codes) in segments {
            list.append((store, keys, codes, start))
            start += keys.count
        }
        self.segments = list.map { (store: $0.0, keys: $0.1, codes: $0.2, start: $0.3) }
        self.endIndex = start
    }

    public let startIndex = 0
    public let endIndex: Int

    /// The ID of the object at a position, without materialising it.
    public func objectID(at position: Int) -> ManagedObjectID {
        precondition(position >= startIndex && position < endIndex, "BatchedFetchResults: index \(position) out of range 0..<\(endIndex)")
        var segment = segments[0]
        for candidate in segments where candidate.start <= position { segment = candidate }
        let offset = position - segment.start
        let entity = model.entitiesByCode[Int(segment.codes[offset])]
        return ManagedObjectID(entity: entity, store: segment.store, primaryKey: segment.keys[offset])
    }

    public subscript(position: Int) -> Element {
        context.assertOnQueue("BatchedFetchResults[\(position)]")
        let batch = position / batchSize
        if let current, current.batch == batch {
            return current.objects[position - batch * batchSize] as! Element
        }
        let range = (batch * batchSize)..<Swift.min(endIndex, (batch + 1) * batchSize)
        let objects = range.map { context.object(with: objectID(at: $0)) }
        context.fulfillFaults(objects)
        current = (batch, objects)
        return objects[position - range.lowerBound] as! Element
    }
}

extension ManagedObjectContext {
    /// Runs a fetch whose results are materialised one batch of `fetchBatchSize` at a time (the whole
    /// result when the request has no batch size), for walking through many rows in bounded memory.
    /// Unsaved changes are not reflected (as with Core Data's batched fetches of saved rows).
    ///
    /// - Throws: as ``fetch(_:)-(FetchRequest<T>)``.
    public func fetchBatched<T: ManagedObject>(_ request: FetchRequest<T>) throws -> BatchedFetchResults<T> {
        assertOnQueue("fetchBatched(_:)")
        let entity = try resolveEntity(request)
        try request.predicate?.validate()
        guard entity.selfAndDescendants.allSatisfy({ $0.managedObjectClass is T.Type }) else {
            throw ObjectGraphError(
                .invalidFetchRequest, "FetchRequest<\(T.self)> cannot return objects of entity '\(entity.name)', whose class is \(entity.managedObjectClass)",
                entityName: entity.name)
        }
        let segments = try parentStore.savedKeys(storeRequest(request, entity: entity, values: false), requester: storeRequester)
        let batch = request.fetchBatchSize > 0 ? request.fetchBatchSize : max(1, segments.reduce(0) { $0 + $1.1.count })
        return BatchedFetchResults(context: self, batchSize: batch, segments: segments, model: entity.managedObjectModel!)
    }
}
