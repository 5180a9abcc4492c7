import Foundation

/// A fetched results controller's results as a value that crosses queues: the sections' object
/// IDs, and what changed since the previous snapshot of the same stream.
///
/// ```swift
/// for await snapshot in controller.snapshots {
///     let ids = snapshot.objectIDs                     // all sections, in order
///     let changes = snapshot.difference               // from the previous snapshot's objectIDs
/// }
/// ```
public struct ResultsSnapshot: Sendable, Hashable {
    /// A section: its name, index title and objects' IDs in order.
    public struct Section: Sendable, Hashable {
        public var name: String
        public var indexTitle: String?
        public var objectIDs: [ManagedObjectID]

        public init(name: String, indexTitle: String?, objectIDs: [ManagedObjectID]) {
            self.name = name
            self.indexTitle = indexTitle
            self.objectIDs = objectIDs
        }
    }

    /// The sections, in order.
    public var sections: [Section]
    /// What changed from the previous snapshot's ``objectIDs`` (from an empty list for a stream's
    /// first snapshot): applying it to them gives these.
    public var difference: CollectionDifference<ManagedObjectID>

    /// Every section's object IDs, section after section.
    public var objectIDs: [ManagedObjectID] { sections.flatMap(\.objectIDs) }

    public init(sections: [Section], difference: CollectionDifference<ManagedObjectID>) {
        self.sections = sections
        self.difference = difference
    }
}

extension ManagedObjectContext {
    /// The IDs of a descriptor's results, now and after every change of the context (SwiftData's
    /// `@Query`, as a stream): the current IDs first. The stream ends when its consumer stops.
    ///
    /// Call it on the context's queue; the IDs can be read anywhere.
    ///
    /// ```swift
    /// for await ids in context.results(for: FetchDescriptor<Note>(sortBy: [SortDescriptor(\.rank)])) { … }
    /// ```
    ///
    /// Without sort descriptors the fetch's order is kept and new results go last. A descriptor
    /// that cannot be fetched ends the stream at once.
    public func results<T: ManagedObject>(for descriptor: FetchDescriptor<T>) -> AsyncStream<[ManagedObjectID]> {
        assertOnQueue("results(for:)")
        let (stream, continuation) = AsyncStream<[ManagedObjectID]>.makeStream(bufferingPolicy: .bufferingNewest(1))
        do {
            let request = try descriptor.fetchRequest(entityName: try entityName(for: T.self), as: T.self)
            let controller = FetchedResultsController(fetchRequest: request, managedObjectContext: self)
            controller.allowsUnsortedResults = true
            try controller.performFetch()
            let holder = ControllerHolder(controller)
            let snapshots = controller.snapshots
            let task = Task {
                for await snapshot in snapshots { continuation.yield(snapshot.objectIDs) }
                continuation.finish()
            }
            continuation.onTermination = { [weak self] _ in
                task.cancel()
                // The controller is released on its context's queue.
                // After its container shut down, the context takes no work: the holder then goes
                // away with this closure.
                self?.enqueue { holder.release() }
            }
        } catch {
            continuation.finish()
        }
        return stream
    }
}

/// Keeps a results stream's controller alive until the stream ends.
private final class ControllerHolder: @unchecked Sendable {  // touched only on the controller's context's queue
    private var controller: AnyObject?
    init(_ controller: AnyObject) { self.controller = controller }
    func release() { controller = nil }
}
