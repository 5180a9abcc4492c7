import Foundation

/// What a migration of a store to a model would do, step by step: a dry run, nothing written
/// (``PersistentStoreCoordinator/migrationPlan(forStoreAt:type:to:options:)``).
///
/// ```swift
/// let plan = try PersistentStoreCoordinator.migrationPlan(forStoreAt: url, type: .sqlite, to: v3)
/// for step in plan.steps { print(step.kind, step.label ?? "", step.description) }
/// ```
public struct MigrationPlan: Sendable, CustomStringConvertible {
    /// One migration from a model version to the next.
    public struct Step: Sendable, CustomStringConvertible {
        /// How a step migrates.
        public enum Kind: String, Sendable, Hashable {
            /// An inferred migration.
            case lightweight
            /// An inferred migration with a custom stage's handlers before and after it.
            case custom
        }

        /// How the step migrates.
        public let kind: Kind
        /// The model the store has before the step.
        public let sourceModel: ManagedObjectModel
        /// The model the store has after it.
        public let destinationModel: ManagedObjectModel
        /// The label of the stage the step belongs to, if any.
        public let label: String?
        /// What the step changes, one line each, and on an SQLite store the SQL it runs.
        public let description: String

        let mapping: MigrationMapping
        let willMigrate: (@Sendable (ManagedObjectContext) throws -> Void)?
        let didMigrate: (@Sendable (ManagedObjectContext) throws -> Void)?
    }

    /// The steps, in order; empty when the store already has the model.
    public let steps: [Step]

    public var description: String {
        steps.isEmpty ? "MigrationPlan: nothing to do" : steps.enumerated().map { "Step \($0 + 1): \($1.description)" }.joined(separator: "\n\n")
    }
}

extension PersistentStoreCoordinator {
    /// The steps a migration of the store at `url` to `model` would run, without running them
    /// (nothing is written to the store).
    ///
    /// ```swift
    /// let manager = StagedMigrationManager([LightweightMigrationStage([v1, v2]), CustomMigrationStage(migratingFrom: v2, to: v3)])
    /// let plan = try PersistentStoreCoordinator.migrationPlan(
    ///     forStoreAt: url, type: .sqlite, to: v3, options: [PersistentStoreOption.stagedMigrationManager: manager])
    /// ```
    ///
    /// The store's model is found among the models of a ``StagedMigrationManager`` given under
    /// ``PersistentStoreOption/stagedMigrationManager`` (by version hashes), else in the store
    /// itself (the model Core Data caches in an SQLite store, and ObjectGraph in a PostgreSQL one).
    /// A PostgreSQL store is named by its URL (`postgres://…`, with `?schema=` when it has one),
    /// and read in a read-only transaction.
    ///
    /// - Throws: ``ObjectGraphError/migration`` when the store's model cannot be found or the
    ///   migration cannot be inferred (naming the entity, the property and why); the errors of
    ///   reading the store (``ObjectGraphError/notADatabase``, ``ObjectGraphError/io``).
    public static func migrationPlan(
        forStoreAt url: URL, type: StoreType, to model: ManagedObjectModel, options: [String: any Sendable]? = nil
    ) throws -> MigrationPlan {
        try model.validate()
        if type == .postgres {
            // The store's version hashes and the model its Z_MODELCACHE holds, read without writing.
            let summary = try PostgresStore.summary(of: url)
            let recorded = try summary.compiledModel.map { try ManagedObjectModel(compiledModelData: $0, source: url) }
            return try MigrationPlanner.plan(
                forStoreAt: url, type: type, identity: .versionHashes(summary.versionHashes), to: model, settings: MigrationSettings(options),
                describe: true, recorded: recorded)
        }
        let identity = try StoredModelIdentity(ofStoreAt: url, type: type)
        return try MigrationPlanner.plan(forStoreAt: url, type: type, identity: identity, to: model, settings: MigrationSettings(options), describe: true)
    }
}

/// The model a store was written with, as the store records it.
enum StoredModelIdentity: Sendable {
    /// Core Data's entity version hashes (`NSStoreModelVersionHashes` of an SQLite store).
    case versionHashes([String: Data])
    /// ObjectGraph's model version hash (an atomic store).
    case modelHash(String)

    /// Reads what the store at `url` records, without writing to it.
    ///
    /// - Throws: ``ObjectGraphError/migration`` when the store records no model; errors reading the file.
    init(ofStoreAt url: URL, type: StoreType) throws {
        guard FileManager.default.fileExists(atPath: url.path) else {
            throw ObjectGraphError(.io, "There is no store at \(url.path) to migrate", url: url)
        }
        switch type {
        case .sqlite:
            try SQLiteStore.checkHeader(of: url)
            // Only the metadata: this runs each time a store is added with the migration options.
            let plist = try SQLiteStore.withReadOnlyConnection(to: url) { rows -> Data? in
                let tables = try rows("SELECT name FROM sqlite_master WHERE type = 'table' AND name = '\(CoreDataLayout.metadataTable)'")
                guard !tables.isEmpty, case .data(let data)? = try rows("SELECT Z_PLIST FROM \(CoreDataLayout.metadataTable) ORDER BY Z_VERSION LIMIT 1").first?.first
                else { return nil }
                return data
            }
            guard let metadata = plist.flatMap(CoreDataMetadata.decode), let hashes = CoreDataMetadata.versionHashes(in: metadata) else {
                throw ObjectGraphError(
                    .migration, "The store at \(url.path) records no model version hashes, so the model it was written with is unknown; it was left as it was",
                    url: url)
            }
            self = .versionHashes(hashes)
        case .binary, .xml:
            let data: Data
            do { data = try Data(contentsOf: url) } catch {
                throw ObjectGraphError(.io, "Cannot read the \(type) store at \(url.path): \(error)", url: url)
            }
            try AtomicFileIO.checkNesting(of: data, format: type == .xml ? .xml : .binary, url: url, type: type)
            /// The one field needed: the rows are not decoded.
            struct Header: Decodable { var modelHash: String }
            guard let header = try? PropertyListDecoder().decode(Header.self, from: data) else {
                throw ObjectGraphError(.notADatabase, "The file at \(url.path) is not an ObjectGraph \(type) store; it was left as it was", url: url)
            }
            self = .modelHash(header.modelHash)
        default:
            throw ObjectGraphError(.unsupported, "Stores of type \(type) are not migrated", url: url)
        }
    }

    /// Whether `model` is the store's model.
    func matches(_ model: ManagedObjectModel) -> Bool {
        switch self {
        case .versionHashes(let hashes): hashes == model.entityVersionHashesByName
        case .modelHash(let hash): hash == model.versionHash
        }
    }
}

/// Finds the path of model versions from a store's model to the destination, and infers each step.
enum MigrationPlanner {
    static func plan(
        forStoreAt url: URL, type: StoreType, identity: StoredModelIdentity, to model: ManagedObjectModel,
        settings: MigrationSettings, describe: Bool, recorded: ManagedObjectModel? = nil
    ) throws -> MigrationPlan {
        if identity.matches(model) { return MigrationPlan(steps: []) }
        func same(_ a: ManagedObjectModel, _ b: ManagedObjectModel) -> Bool {
            a.versionHash == b.versionHash && a.entityVersionHashesByName == b.entityVersionHashesByName
        }
        // The staged versions, in order, without repeating a model two stages share.
        var versions: [MigrationVersion] = []
        for stage in settings.manager?.stages ?? [] {
            for version in try stage.versions() {
                if let last = versions.last, same(last.model, version.model) { continue }
                versions.append(version)
            }
        }
        var path: [MigrationVersion]
        if let start = versions.lastIndex(where: { identity.matches($0.model) }) {
            let rest = versions[(start + 1)...]
            if let end = rest.firstIndex(where: { same($0.model, model) }) {
                path = Array(versions[start...end])
            } else {
                path = Array(versions[start...]) + [MigrationVersion(model: model, kind: .lightweight, stage: nil)]
            }
        } else {
            guard let source = try sourceModel(ofStoreAt: url, type: type, identity: identity, among: versions.map(\.model) + (recorded.map { [$0] } ?? [])) else {
                let known = settings.manager == nil ? "" : " nor any model of the staged migration's stages"
                throw ObjectGraphError(
                    .migration,
                    "Cannot migrate the store at \(url.path): the model it was written with is unknown (the store holds no copy of it\(known)); add the store with that model version, or give it in a LightweightMigrationStage",
                    url: url)
            }
            path = [MigrationVersion(model: source, kind: .lightweight, stage: nil), MigrationVersion(model: model, kind: .lightweight, stage: nil)]
        }

        var steps: [MigrationPlan.Step] = []
        var sqliteState: SQLiteFileState? = describe && type == .sqlite ? try SQLiteFileState.read(storeAt: url) : nil
        for i in 1..<path.count {
            let (from, to) = (path[i - 1], path[i])
            if same(from.model, to.model) { continue }
            let mapping = try MigrationMapping(from: from.model, to: to.model)
            var text = "\(to.kind) migration \(name(of: from.model)) → \(name(of: to.model))"
            if let label = to.stage?.label { text += " (\(label))" }
            if to.kind == .custom {
                text += "\n  willMigrate: \(to.willMigrate == nil ? "none" : "runs on the old model"), didMigrate: \(to.didMigrate == nil ? "none" : "runs on the new model")"
            }
            text += mapping.changes.map { "\n  - \($0)" }.joined()
            if let state = sqliteState {
                let script = SQLiteMigrationScript(mapping: mapping, state: state)
                text += "\n  SQL:\n" + script.text.split(separator: "\n").map { "    " + $0 }.joined(separator: "\n")
                sqliteState = SQLiteFileState.after(CoreDataLayout(model: to.model), state: state)
            }
            steps.append(MigrationPlan.Step(
                kind: to.kind, sourceModel: from.model, destinationModel: to.model, label: to.stage?.label, description: text,
                mapping: mapping, willMigrate: to.willMigrate, didMigrate: to.didMigrate))
        }
        return MigrationPlan(steps: steps)
    }

    /// A short name for a model version in plans: its version identifiers, else its checksum's start.
    static func name(of model: ManagedObjectModel) -> String {
        model.versionIdentifiers.isEmpty ? "model \(model.versionChecksum.prefix(8))" : model.versionIdentifiers.sorted().joined(separator: ",")
    }

    /// The model the store at `url` was written with: one of `candidates` (the models the app
    /// gives, matched by the store's version hashes, as Core Data does), else the copy the store
    /// records (`Z_MODELCACHE` in an SQLite store, Core Data's or ObjectGraph's; the model inside a
    /// binary or XML file; a PostgreSQL store's is read by the store and given among the candidates).
    /// Nil when neither has it.
    ///
    /// The one place a store's own record of its model is read: a store that records its model in
    /// another way (an atomic store's embedded model) is read here.
    static func sourceModel(
        ofStoreAt url: URL, type: StoreType, identity: StoredModelIdentity, among candidates: [ManagedObjectModel]
    ) throws -> ManagedObjectModel? {
        if let model = candidates.last(where: identity.matches) { return model }
        guard [.sqlite, .binary, .xml].contains(type),
              let model = try? PersistentStore.storedModel(at: url, type: type), identity.matches(model) else { return nil }
        return model
    }
}
