import Foundation
import GRDB

extension PersistentStoreCoordinator {
    /// Migrates the store at `url` to this coordinator's model when the options ask for it
    /// (``PersistentStoreOption/migratePersistentStoresAutomatically`` and
    /// ``PersistentStoreOption/inferMappingModelAutomatically``, or a
    /// ``PersistentStoreOption/stagedMigrationManager``) and the store has another model.
    /// Otherwise does nothing: the store then refuses the model as before.
    ///
    /// - Throws: ``ObjectGraphError/migration`` (the store left as it was), a custom stage's error.
    func migrateStoreIfNeeded(type: StoreType, at url: URL?, options: [String: any Sendable]?) throws {
        let settings = try MigrationSettings(options)
        guard settings.migrates, !settings.readOnly, let url, url.isFileURL, [StoreType.sqlite, .binary, .xml].contains(type),
              ((try? FileManager.default.attributesOfItem(atPath: url.path)[.size] as? Int) ?? 0) > 0,
              // A file that is not a store is the store's to refuse, with its own error.
              let identity = try? StoredModelIdentity(ofStoreAt: url, type: type),
              !identity.matches(managedObjectModel) else { return }
        let plan = try MigrationPlanner.plan(forStoreAt: url, type: type, identity: identity, to: managedObjectModel, settings: settings, describe: false)
        guard !plan.steps.isEmpty else { return }
        let steps = plan.steps.map { "\($0.kind)" }.joined(separator: ", ")
        logger.info("migrating \(url.path): \(plan.steps.count) step\(plan.steps.count == 1 ? "" : "s") (\(steps))", metadata: ["coordinator": "\(name ?? "unnamed")"])
        try instrumentation.span("ObjectGraph migration") { span in
            span?.attributes["objectgraph.store"] = url.lastPathComponent
            span?.attributes["objectgraph.steps"] = plan.steps.count
            try measured(nil, describe: { (_: Void?) in "migration of \(url.lastPathComponent) (\(steps))" }) {
                try MigrationRunner.run(plan, storeAt: url, type: type)
            }
        }
        instrumentation.metrics?.migrations.increment()
        logger.info("migrated \(url.path)", metadata: ["coordinator": "\(name ?? "unnamed")"])
    }

    /// Migrates the store at `url` to `model` as ``addPersistentStore(type:configuration:at:options:)``
    /// would with `options`, telling `progress` of each statement or file written (for the
    /// command-line tool's progress bar). Does nothing when the store has the model.
    package static func migrateStore(
        at url: URL, type: StoreType, to model: ManagedObjectModel, options: [String: any Sendable]?,
        progress: (MigrationProgress) -> Void
    ) throws {
        try model.validate()
        if type == .postgres {
            // A PostgreSQL store migrates as it is added with the migration options, in one transaction.
            let plan = try migrationPlan(forStoreAt: url, type: type, to: model, options: options)
            guard !plan.steps.isEmpty else { return }
            var migrating = options ?? [:]
            migrating[PersistentStoreOption.migratePersistentStoresAutomatically] = true
            migrating[PersistentStoreOption.inferMappingModelAutomatically] = true
            let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
            progress(MigrationProgress(step: 1, steps: plan.steps.count, completed: 0, total: 1, text: "migrating in one transaction"))
            let store = try coordinator.addPersistentStore(type: .postgres, at: url, options: migrating)
            try coordinator.removePersistentStore(store)
            progress(MigrationProgress(step: plan.steps.count, steps: plan.steps.count, completed: 1, total: 1, text: "migrated"))
            return
        }
        let identity = try StoredModelIdentity(ofStoreAt: url, type: type)
        let plan = try MigrationPlanner.plan(forStoreAt: url, type: type, identity: identity, to: model, settings: MigrationSettings(options), describe: false)
        try MigrationRunner.run(plan, storeAt: url, type: type, progress: progress)
    }
}

/// How far a migration is: the step, and the statements (or files) of the step done so far.
package struct MigrationProgress: Sendable {
    package var step: Int
    package var steps: Int
    package var completed: Int
    package var total: Int
    package var text: String
}

/// Runs a migration plan, all or nothing.
///
/// - Lightweight steps only, on SQLite: in place, every step in one SQLite transaction. A failure
///   or a crash (even `kill -9`) rolls it back, and the file is as it was.
/// - With a custom stage (whose handlers save through contexts, outside any transaction of ours),
///   or on an atomic store: on a copy beside the store; the copy is renamed over the store at the
///   end (a rename is atomic), and removed on failure. The store is never half-migrated.
enum MigrationRunner {
    static func run(_ plan: MigrationPlan, storeAt url: URL, type: StoreType, progress: (MigrationProgress) -> Void = { _ in }) throws {
        guard !plan.steps.isEmpty else { return }
        if type == .sqlite && plan.steps.allSatisfy({ $0.kind == .lightweight }) {
            try SQLiteMigration.migrate(storeAt: url, through: plan.steps.map(\.mapping), progress: progress)
        } else if type != .sqlite && plan.steps.count == 1 && plan.steps[0].kind == .lightweight {
            try AtomicStoreMigration.migrate(storeAt: url, type: type, mapping: plan.steps[0].mapping)
            progress(MigrationProgress(step: 1, steps: 1, completed: 1, total: 1, text: "rewrote \(url.lastPathComponent)"))
        } else {
            try runOnCopy(plan, storeAt: url, type: type, progress: progress)
        }
    }

    private static func runOnCopy(_ plan: MigrationPlan, storeAt url: URL, type: StoreType, progress: (MigrationProgress) -> Void) throws {
        let files = FileManager.default
        let copy = url.deletingLastPathComponent().appendingPathComponent(".\(url.lastPathComponent).migrating-\(UUID().uuidString)")
        func removeCopy() { for suffix in ["", "-wal", "-shm", "-journal"] { try? files.removeItem(atPath: copy.path + suffix) } }
        // The store's committed WAL content goes into its main file first, so the copy has it all
        // and the store's WAL is empty when the copy replaces it.
        if type == .sqlite { try SQLiteMigration.checkpoint(storeAt: url) }
        do {
            do { try files.copyItem(at: url, to: copy) } catch {
                throw ObjectGraphError(.io, "Cannot copy the store at \(url.path) to migrate it: \(error); it was left as it was", url: url)
            }
            for (index, step) in plan.steps.enumerated() {
                if let handler = step.willMigrate { try runHandler(handler, model: step.sourceModel, storeAt: copy, type: type) }
                if type == .sqlite {
                    try SQLiteMigration.migrate(storeAt: copy, through: [step.mapping], firstStep: index, steps: plan.steps.count, progress: progress)
                } else {
                    try AtomicStoreMigration.migrate(storeAt: copy, type: type, mapping: step.mapping)
                    progress(MigrationProgress(step: index + 1, steps: plan.steps.count, completed: 1, total: 1, text: "rewrote the store"))
                }
                if let handler = step.didMigrate { try runHandler(handler, model: step.destinationModel, storeAt: copy, type: type) }
            }
            for suffix in ["-wal", "-shm", "-journal"] { try? files.removeItem(atPath: copy.path + suffix) }
            guard rename(copy.path, url.path) == 0 else {
                let code = errno
                throw ObjectGraphError(.io, "Cannot put the migrated store in place of \(url.path): \(String(cString: strerror(code))); it was left as it was", url: url)
            }
        } catch {
            removeCopy()
            throw error
        }
        // The old file's (empty) WAL and shared memory belong to the file that was replaced.
        for suffix in ["-wal", "-shm"] { try? files.removeItem(atPath: url.path + suffix) }
    }

    /// Runs a custom stage's handler on a private-queue context over the store with `model`.
    private static func runHandler(
        _ handler: @Sendable (ManagedObjectContext) throws -> Void, model: ManagedObjectModel, storeAt url: URL, type: StoreType
    ) throws {
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model, name: "migration")
        let store = try coordinator.addPersistentStore(type: type, at: url)
        defer { try? coordinator.removePersistentStore(store) }
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.name = "migration"
        context.persistentStoreCoordinator = coordinator
        try context.performAndWait { try handler(context) }
    }
}

/// Runs lightweight migration steps on an SQLite store, in one transaction.
enum SQLiteMigration {
    static func migrate(
        storeAt url: URL, through mappings: [MigrationMapping], firstStep: Int = 0, steps: Int? = nil,
        progress: (MigrationProgress) -> Void = { _ in }
    ) throws {
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)
        configuration.label = "ObjectGraph.Migration"
        let queue: DatabaseQueue
        do { queue = try DatabaseQueue(path: url.path, configuration: configuration) } catch {
            throw SQLiteStore.translate(error, url: url, while: "opening the store to migrate it")
        }
        do {
            try queue.inTransaction(.exclusive) { db in
                for (i, mapping) in mappings.enumerated() {
                    let state = try SQLiteFileState.read(db, url: url)
                    // Another process or coordinator may have migrated the store since it was planned.
                    let hashes = CoreDataMetadata.versionHashes(in: state.metadata)
                    if i == 0, let last = mappings.last, hashes == last.destination.entityVersionHashesByName { return .commit }
                    guard hashes == mapping.source.entityVersionHashesByName else {
                        throw ObjectGraphError(
                            .migration, "The store at \(url.path) changed while it was being migrated (another process or coordinator wrote it); nothing was migrated, add it again",
                            url: url)
                    }
                    try SQLiteMigrationScript(mapping: mapping, state: state).run(in: db, url: url) { completed, total, text in
                        progress(MigrationProgress(step: firstStep + i + 1, steps: steps ?? mappings.count, completed: completed, total: total, text: text))
                    }
                }
                return .commit
            }
            try queue.writeWithoutTransaction { db in _ = try Row.fetchAll(db, sql: "PRAGMA wal_checkpoint(TRUNCATE)") }
            try queue.close()
        } catch {
            try? queue.close()
            throw SQLiteStore.translate(error, url: url, while: "migrating the store")
        }
    }

    /// Folds the store's WAL into its main file, when it has one with content.
    static func checkpoint(storeAt url: URL) throws {
        let size = (try? FileManager.default.attributesOfItem(atPath: url.path + "-wal")[.size] as? Int) ?? 0
        guard size > 0 else { return }
        do {
            let queue = try DatabaseQueue(path: url.path)
            try queue.writeWithoutTransaction { db in _ = try Row.fetchAll(db, sql: "PRAGMA wal_checkpoint(TRUNCATE)") }
            try queue.close()
        } catch {
            throw SQLiteStore.translate(error, url: url, while: "checkpointing the store before migrating it")
        }
    }
}
