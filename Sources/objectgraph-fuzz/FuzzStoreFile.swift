import Foundation
import ObjectGraphCore

/// Adds a store file made of the input to a coordinator, and reads all of it.
enum FuzzStoreFile {
    static let model = FuzzModel.make()

    static func run(_ data: Data, type: StoreType) {
        let url = FuzzScratch.write(data, to: "store.\(type.rawValue)")
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        let options: [String: any Sendable] = type == .sqlite ? [PersistentStoreOption.maximumReaderCount: 1] : [:]
        guard let store = attempt("add", { try coordinator.addPersistentStore(type: type, at: url, options: options) }) else { return }
        FuzzReader.readEverything(coordinator)
        _ = attempt("remove") { try coordinator.removePersistentStore(store) }
    }
}

/// Loads a model file made of the input.
enum FuzzModelFile {
    static func run(_ data: Data, name: String) {
        let url = FuzzScratch.write(data, to: name)
        let modelURL = name.hasSuffix("/contents") ? url.deletingLastPathComponent() : url
        guard let model = attempt("load", { try ManagedObjectModel(contentsOf: modelURL) }) else { return }
        _ = model.entityVersionHashesByName
        _ = model.validationErrors
        _ = model.unsupportedFeatures
        // A model that validates is one a store can be made with.
        guard attempt("validate", { try model.validate() }) != nil else { return }
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        guard let store = attempt("add", { try coordinator.addPersistentStore(type: .inMemory) }) else { return }
        FuzzReader.readEverything(coordinator)
        _ = attempt("remove") { try coordinator.removePersistentStore(store) }
    }
}
