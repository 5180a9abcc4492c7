import ArgumentParser
import Foundation
import ObjectGraphCore

/// The model versions of the migration crash test. `Tests/ObjectGraphTests/Migration/MigrationCrashTests.swift`
/// declares the same versions: change both together.
enum MigrationCrashModel {
    /// V1: Item(name, value).
    static func v1() -> ManagedObjectModel {
        ManagedObjectModel(entities: [EntityDescription(name: "Item", properties: [
            .attribute("name", .string), .attribute("value", .integer64, defaultValue: Int64(0)),
        ])])
    }

    /// V2: name renamed label, and a new attribute extra (default 7).
    static func v2() -> ManagedObjectModel {
        let label = PropertyDescription.attribute("label", .string)
        label.renamingIdentifier = "name"
        return ManagedObjectModel(entities: [EntityDescription(name: "Item", properties: [
            label, .attribute("value", .integer64, defaultValue: Int64(0)), .attribute("extra", .integer32, defaultValue: Int32(7)),
        ])])
    }
}

/// Migrates a store from ``MigrationCrashModel`` V1 to V2, saying `migrating` before and
/// `migrated` after, so a test can kill it in between.
struct CrashMigrator: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate", abstract: "Migrate a store from the crash tests' V1 to V2 (to be killed in the middle).")

    @Option(help: "The SQLite store's path.") var store: String
    @Option(help: "Instead of migrating, create the store with V1 and this many rows (for timing a migration).") var seed: Int?

    func run() throws {
        if let seed {
            let coordinator = PersistentStoreCoordinator(managedObjectModel: MigrationCrashModel.v1())
            let added = try coordinator.addPersistentStore(type: .sqlite, at: URL(fileURLWithPath: store))
            let context = ManagedObjectContext(concurrencyType: .confinement)
            context.persistentStoreCoordinator = coordinator
            var next = 0
            try context.execute(BatchInsertRequest(entityName: "Item", dictionaryHandler: { (row: inout [String: any Sendable]) -> Bool in
                if next == seed { return true }
                row = ["name": "item \(next)", "value": Int64(next)]
                next += 1
                return false
            }))
            try coordinator.removePersistentStore(added)
            CrashSchedule.acknowledge("seeded \(seed)")
            return
        }
        let coordinator = PersistentStoreCoordinator(managedObjectModel: MigrationCrashModel.v2())
        let options: [String: any Sendable] = [
            PersistentStoreOption.stagedMigrationManager: StagedMigrationManager([LightweightMigrationStage([MigrationCrashModel.v1()])]),
        ]
        CrashSchedule.acknowledge("migrating")
        do {
            let added = try coordinator.addPersistentStore(type: .sqlite, at: URL(fileURLWithPath: store), options: options)
            CrashSchedule.acknowledge("migrated")
            try coordinator.removePersistentStore(added)
        } catch {
            CrashSchedule.fail("migration: \(error)")
        }
    }
}
