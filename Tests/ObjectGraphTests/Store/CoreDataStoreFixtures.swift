import Foundation
import GRDB
import Testing

import ObjectGraph
@testable import ObjectGraphCore

/// A fixture store opened on a copy, with the model version that wrote it.
struct OpenedFixture {
    let fixture: String
    let original: URL
    let copy: URL
    let model: ManagedObjectModel
    let coordinator: PersistentStoreCoordinator
    let store: PersistentStore

    var backend: SQLiteStore { store.backend as! SQLiteStore }

    /// A confinement context on the store.
    func context() -> ManagedObjectContext {
        let context = ManagedObjectContext(concurrencyType: .confinement)
        context.persistentStoreCoordinator = coordinator
        return context
    }

    /// Reads the copy with a connection of its own (the store may be open).
    func raw<T>(_ body: (Database) throws -> T) throws -> T {
        let queue = try DatabaseQueue(path: copy.path)
        defer { try? queue.close() }
        return try queue.read(body)
    }

    /// Removes the copy's folder.
    func remove() {
        try? coordinator.removePersistentStore(store)
        try? FileManager.default.removeItem(at: copy.deletingLastPathComponent())
    }
}

extension CoreDataFixtures {
    /// The model version of the fixture's `.xcdatamodeld` whose hashes are the store's, or the model
    /// cached in the store when the fixture has no model files.
    static func modelThatWrote(_ store: URL, fixture: String) throws -> ManagedObjectModel {
        let hashes = try versionHashes(ofStore: store)
        if let bundle = try modelBundles().first(where: { $0.fixture == fixture })?.bundle {
            for version in try versions(of: bundle) {
                let model = try ManagedObjectModel(contentsOf: version)
                if model.entityVersionHashesByName == hashes { return model }
            }
        }
        let copy = try copyOfStore(store)
        defer { try? FileManager.default.removeItem(at: copy.deletingLastPathComponent()) }
        return try ManagedObjectModel(contentsOfStoreAt: copy)
    }

    /// Opens a copy of a fixture store with the model that wrote it (read-only when asked, or when
    /// the store records persistent history).
    static func open(_ store: URL, fixture: String, readOnly: Bool = false) throws -> OpenedFixture {
        let model = try modelThatWrote(store, fixture: fixture)
        let copy = try copyOfStore(store)
        let hasHistory = try DatabaseQueue(path: copy.path).read { try $0.tableExists("ATRANSACTION") }
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        let added = try coordinator.addPersistentStore(
            type: .sqlite, at: copy, options: readOnly || hasHistory ? [PersistentStoreOption.readOnly: true] : [:])
        return OpenedFixture(fixture: fixture, original: store, copy: copy, model: model, coordinator: coordinator, store: added)
    }

    /// `Z_PRIMARYKEY` of a database: Z_ENT by entity name.
    static func entityNumbers(_ db: Database) throws -> [String: Int] {
        var result: [String: Int] = [:]
        for row in try Row.fetchAll(db, sql: "SELECT Z_ENT, Z_NAME FROM Z_PRIMARYKEY") { result[row[1]] = row[0] }
        return result
    }
}
