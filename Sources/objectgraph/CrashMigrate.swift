import ArgumentParser
import Foundation
import ObjectGraphCore
import ObjectGraphCrashModels

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
