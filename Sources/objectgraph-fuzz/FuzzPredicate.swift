import Foundation
import ObjectGraph

/// Parses the input as a predicate format, and fetches with what parses.
enum FuzzPredicate {
    /// Stores with a few objects, made once: reading them leaves them as they were.
    private static let stores: [PersistentStoreCoordinator] = {
        let model = FuzzModel.make()
        let memory = PersistentStoreCoordinator(managedObjectModel: model)
        try! memory.addPersistentStore(type: .inMemory)
        let sqlite = PersistentStoreCoordinator(managedObjectModel: model)
        try! sqlite.addPersistentStore(
            type: .sqlite, at: FuzzScratch.directory.appendingPathComponent("predicate/store.sqlite"),
            options: [PersistentStoreOption.maximumReaderCount: 1])
        for coordinator in [memory, sqlite] {
            let context = ManagedObjectContext(concurrencyType: .confinement)
            context.persistentStoreCoordinator = coordinator
            FuzzModel.populate(context)
            try! context.save()
        }
        return [memory, sqlite]
    }()

    static func run(_ data: Data) {
        guard let format = String(data: data, encoding: .utf8) else { return }
        guard let predicate = try? FetchPredicate.parse(format: format) else { return }
        _ = try? FetchPredicate.parse(format: predicate.predicateFormat)
        for coordinator in stores { try? FuzzReader.readEverything(coordinator, predicate: predicate) }
    }
}
