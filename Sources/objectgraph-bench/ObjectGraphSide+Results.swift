import Foundation
import ObjectGraph
import ObjectGraphBenchCore

/// Counts what a fetched results controller tells its delegate, and when it said it was done.
final class ResultsChangeCounter: FetchedResultsControllerDelegate {
    /// Object changes (inserts, deletes, moves, updates) since the last `reset()`.
    private(set) var objectChanges = 0
    /// When `controllerDidChangeContent(_:)` was last called.
    private(set) var didChangeContent: ContinuousClock.Instant?

    func reset() {
        objectChanges = 0
        didChangeContent = nil
    }

    func controller(
        _ controller: FetchedResultsController<ManagedObject>, didChange anObject: ManagedObject,
        at indexPath: IndexPath?, for type: FetchedResultsChangeType, newIndexPath: IndexPath?
    ) {
        objectChanges += 1
    }

    func controllerDidChangeContent(_ controller: FetchedResultsController<ManagedObject>) {
        didChangeContent = ContinuousClock.now
    }
}

/// `frc_merge` through ObjectGraph's public API: a `FetchedResultsController` in a
/// main-queue context, as a list view would have it, and a private-queue context that saves.
extension ObjectGraphSide {
    func resultsMerge(rows: Int, changes: BenchResultsChanges) throws -> BenchSample? {
        let (coordinator, _, remove) = try newStore("frc")
        defer { remove() }
        try seedWithBatchInserts(coordinator, rows: rows)

        // The view's context: the main queue (the benchmark runs on the main thread, so its
        // blocks run inline).
        let main = ManagedObjectContext(concurrencyType: .mainQueue)
        main.name = "main"
        main.persistentStoreCoordinator = coordinator
        let counter = ResultsChangeCounter()
        let controller = try main.performAndWait {
            let request = FetchRequest<ManagedObject>(entityName: "Item")
            request.sortDescriptors = [FetchSortDescriptor(key: "i0"), FetchSortDescriptor(key: "i1")]
            request.returnsObjectsAsFaults = false
            let controller = FetchedResultsController(fetchRequest: request, managedObjectContext: main)
            controller.delegate = counter
            try controller.performFetch()
            return controller
        }
        guard controller.fetchedObjects?.count == rows else { throw BenchError("frc_merge: the controller has \(controller.fetchedObjects?.count ?? 0) objects, expected \(rows)") }

        let background = newContext(coordinator, name: "background")
        let notification = try didSaveNotification(of: background, workload: "frc_merge") {
            try Self.save(changes, in: background)
        }

        // Timed: from the merge to the delegate's controllerDidChangeContent.
        let (seconds, call) = try main.performAndWait {
            counter.reset()
            let start = ContinuousClock.now
            main.mergeChanges(fromContextDidSave: notification)
            let end = ContinuousClock.now
            guard let done = counter.didChangeContent else { throw BenchError("frc_merge: the controller did not report the merge") }
            return ((done - start).seconds, (end - start).seconds)
        }
        let checksum = main.performAndWait {
            BenchResultsChanges.checksum((controller.fetchedObjects ?? []).lazy.map { $0.value(forKey: "i1") as! Int64 })
        }
        return BenchSample(seconds: seconds, rows: counter.objectChanges, checksum: checksum, figures: [.mergeCallSeconds: call])
    }

    /// Deletes, updates and inserts the items `changes` names, and saves.
    private static func save(_ changes: BenchResultsChanges, in context: ManagedObjectContext) throws {
        let request = FetchRequest<ManagedObject>(entityName: "Item")
        request.predicate = FetchPredicate(format: "i1 IN %@", (changes.deleted + changes.updated.map(\.row)).map(Int64.init))
        request.returnsObjectsAsFaults = false
        var byRow: [Int64: ManagedObject] = [:]
        for item in try context.fetch(request) { byRow[item.value(forKey: "i1") as! Int64] = item }
        for row in changes.deleted {
            guard let item = byRow[Int64(row)] else { throw BenchError("frc_merge: no item \(row) to delete") }
            context.delete(item)
        }
        for update in changes.updated {
            guard let item = byRow[Int64(update.row)] else { throw BenchError("frc_merge: no item \(update.row) to update") }
            item.setValue(update.key, forKey: "i0")
        }
        for insert in changes.inserted {
            let item = context.insertNewObject(forEntityName: "Item")
            for key in BenchData.itemKeys { item.setValue(Int64(insert.row), forKey: key) }
            item.setValue(insert.key, forKey: "i0")
        }
        try context.save()
    }
}
