import ArgumentParser
import Foundation
import ObjectGraphCore

/// `objectgraph migrate STORE --model NEW [--from OLD ...] [--dry-run]`: migrates a store to a new
/// model version, printing the plan (with the SQL on SQLite) and the rows per entity before and after
/// on standard output; the progress bar goes to standard error when it is a terminal, and a failure
/// to standard error with exit status 1.
struct Migrate: ToolCommand {
    static let configuration = CommandConfiguration(
        abstract: "Migrate a store to a new model version (lightweight, inferred), all or nothing.",
        discussion: """
            The store is a file or a postgres:// URL (with the tool built with the PostgreSQL trait). The store's own \
            model is found among --from models, among the versions of --model when it is an .xcdatamodeld, or (SQLite, \
            PostgreSQL) in the store itself (Z_MODELCACHE). With --from given several \
            times, the store migrates through each version after its own, in order. With --dry-run, the plan \
            is printed and nothing is written. The plan and the counts are printed on standard output; a progress bar \
            is drawn on standard error when it is a terminal. A migration that cannot run leaves the store as it was, \
            says why on standard error and exits with 1.
            """)

    @Argument(help: "The store file (.sqlite, or a binary or XML store), or a postgres:// URL.") var store: String
    @Option(help: "The new model: an .xcdatamodeld (its current version), .xcdatamodel, .momd or .mom.") var model: String
    @Option(help: "An earlier model version, oldest first; repeat for a chain.") var from: [String] = []
    @Option(help: "The store type of a file: sqlite, binary or xml (default: from the file's extension, else sqlite).") var type: String?
    @Flag(help: "Print the plan without migrating.") var dryRun = false

    func validate() throws {
        if let type, Self.storeType(named: type) == nil {
            throw ValidationError("Unknown store type '\(type)': use sqlite, binary or xml")
        }
    }

    func execute() throws {
        let location = try StoreLocation(store)
        let url = location.url
        let storeType: StoreType = location.isPostgreSQL ? .postgres : type.flatMap(Self.storeType(named:)) ?? Self.storeType(named: url.pathExtension) ?? .sqlite
        let newModel = try ManagedObjectModel(contentsOf: URL(fileURLWithPath: model))
        var versions = try from.map { try ManagedObjectModel(contentsOf: URL(fileURLWithPath: $0)) }
        if versions.isEmpty, model.hasSuffix(".xcdatamodeld"), storeType == .sqlite || storeType == .postgres {
            // The version of the bundle that wrote the store, when it has one.
            let hashes = try StoreFile.read(location).hashes
            let bundle = URL(fileURLWithPath: model)
            for name in try FileManager.default.contentsOfDirectory(atPath: bundle.path).sorted() where name.hasSuffix(".xcdatamodel") {
                let version = try ManagedObjectModel(contentsOf: bundle.appendingPathComponent(name))
                if version.entityVersionHashesByName == hashes { versions = [version] }
            }
        }
        var options: [String: any Sendable] = [
            PersistentStoreOption.migratePersistentStoresAutomatically: true,
            PersistentStoreOption.inferMappingModelAutomatically: true,
        ]
        if !versions.isEmpty {
            options[PersistentStoreOption.stagedMigrationManager] = StagedMigrationManager([LightweightMigrationStage(versions + [newModel])])
        }
        let plan: MigrationPlan
        do {
            plan = try PersistentStoreCoordinator.migrationPlan(forStoreAt: url, type: storeType, to: newModel, options: options)
        } catch {
            throw CommandFailure("Cannot migrate \(location.shown)", because: error)
        }
        print("Store: \(location.shown) (\(storeType))")
        if plan.steps.isEmpty {
            print("The store already has this model: nothing to do.")
            return
        }
        print("Plan: \(plan.steps.count) step\(plan.steps.count == 1 ? "" : "s")")
        print(plan.description)
        if dryRun {
            print("Dry run: nothing was written.")
            return
        }
        let before = try counts(url, storeType, model: plan.steps[0].sourceModel, options: [PersistentStoreOption.readOnly: true])
        print("Migrating…")
        let bar = TerminalProgress()
        let elapsed: Double
        do {
            elapsed = try seconds {
                try PersistentStoreCoordinator.migrateStore(at: url, type: storeType, to: newModel, options: options) { progress in
                    bar.show(progress.completed, of: progress.total, "  step \(progress.step)/\(progress.steps)")
                    if progress.completed >= progress.total { bar.finish() }
                }
            }
        } catch {
            bar.finish()
            throw CommandFailure("The migration of \(location.shown) failed and the store was left as it was", because: error)
        }
        let after = try counts(url, storeType, model: newModel, options: [:])
        print(String(format: "Migrated in %.2f s.", elapsed))
        print("Rows per entity (before → after):")
        for name in Set(before.keys).union(after.keys).sorted() {
            print("  \(name): \(before[name].map(String.init) ?? "-") → \(after[name].map(String.init) ?? "-")")
        }
    }

    /// The store type a `--type` value or a file extension names: `sqlite` (also `sqlite3`, `db` and
    /// no extension), `binary` (also `bin`) or `xml`; `nil` for any other.
    static func storeType(named name: String) -> StoreType? {
        switch name.lowercased() {
        case "xml": return .xml
        case "binary", "bin": return .binary
        case "sqlite", "sqlite3", "db", "": return .sqlite
        default: return nil
        }
    }

    /// Rows per entity (each entity's own, without sub-entities), read with `model`.
    private func counts(_ url: URL, _ type: StoreType, model: ManagedObjectModel, options: [String: any Sendable]) throws -> [String: Int] {
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        let store = try coordinator.addPersistentStore(type: type, at: url, options: options)
        defer { try? coordinator.removePersistentStore(store) }
        let context = ManagedObjectContext(concurrencyType: .confinement)
        context.persistentStoreCoordinator = coordinator
        var counts: [String: Int] = [:]
        for entity in model.entities {
            let request = FetchRequest<ManagedObject>(entityName: entity.name)
            request.includesSubentities = false
            counts[entity.name] = try context.count(for: request)
        }
        return counts
    }
}
