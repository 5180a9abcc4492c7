import Foundation
import ObjectGraphCore

/// Parses the input as a predicate format, and fetches with what parses.
enum FuzzPredicate {
    /// Stores with a few objects, made once: reading them leaves them as they were.
    private static let stores: [PersistentStoreCoordinator] = {
        let model = FuzzModel.make()
        let memory = PersistentStoreCoordinator(managedObjectModel: model)
        try! memory.addPersistentStore(type: .inMemory)
        let sqlite = PersistentStoreCoordinator(managedObjectModel: model)
        let folder = FuzzScratch.directory.appendingPathComponent("predicate")
        try! FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try! sqlite.addPersistentStore(
            type: .sqlite, at: folder.appendingPathComponent("store.sqlite"),
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
        guard let predicate = attempt("parse", { try FetchPredicate.parse(format: format) }) else { return }
        _ = attempt("parse again") { try FetchPredicate.parse(format: predicate.predicateFormat) }
        for coordinator in stores { FuzzReader.readEverything(coordinator, entities: ["Item"], predicate: predicate) }
    }
}
