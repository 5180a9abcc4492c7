import Foundation

/// A model version named by its checksum, loaded now or from a file (`NSManagedObjectModelReference`).
///
/// ```swift
/// let v1 = ManagedObjectModelReference(model: modelV1)
/// let v2 = ManagedObjectModelReference(fileURL: bundle.appendingPathComponent("Notes 2.xcdatamodel"),
///                                      versionChecksum: "u970QgYhRHEJGIt0zQr1UhuZL2ZJ1KxBS+B7rkAx0ik=")
/// ```
///
/// A migration that uses a reference whose model does not have the checksum it names is refused
/// with ``ObjectGraphError/migration`` before anything is written.
public final class ManagedObjectModelReference: Sendable, CustomStringConvertible {
    /// The model.
    public let resolvedModel: ManagedObjectModel
    /// The checksum the model must have (``ManagedObjectModel/versionChecksum``).
    public let versionChecksum: String
    /// Why the model named by a file could not be loaded (the stage using it then refuses to run).
    let loadError: ObjectGraphError?

    /// A reference to `model`, which must have the checksum `versionChecksum`.
    public init(model: ManagedObjectModel, versionChecksum: String) {
        self.resolvedModel = model
        self.versionChecksum = versionChecksum
        self.loadError = nil
    }

    /// A reference to `model`, by its own checksum.
    public convenience init(model: ManagedObjectModel) {
        self.init(model: model, versionChecksum: model.versionChecksum)
    }

    /// A reference to the model in a file (`.xcdatamodel`, `.xcdatamodeld`, `.mom`, `.momd`), which
    /// must have the checksum `versionChecksum`. The file is read now; a file that cannot be read
    /// makes the migration that uses the reference fail with ``ObjectGraphError/migration``.
    public init(fileURL: URL, versionChecksum: String) {
        self.versionChecksum = versionChecksum
        do {
            self.resolvedModel = try ManagedObjectModel(contentsOf: fileURL)
            self.loadError = nil
        } catch {
            self.resolvedModel = ManagedObjectModel(entities: [])
            self.loadError = ObjectGraphError(
                .migration, "The model at \(fileURL.path) named by a migration stage cannot be loaded: \(error)", url: fileURL)
        }
    }

    public var description: String { "ManagedObjectModelReference(\(versionChecksum))" }

    /// The model, checked against the checksum.
    ///
    /// - Throws: ``ObjectGraphError/migration`` when the file could not be read or the checksum differs.
    func checkedModel(stage: String) throws -> ManagedObjectModel {
        if let loadError { throw loadError }
        let actual = resolvedModel.versionChecksum
        guard actual == versionChecksum else {
            throw ObjectGraphError(
                .migration,
                "Migration stage \(stage) names a model with checksum \(versionChecksum), but the model given has checksum \(actual); nothing was migrated")
        }
        return resolvedModel
    }
}

/// One stage of a staged migration (`NSMigrationStage`): ``LightweightMigrationStage`` or
/// ``CustomMigrationStage``.
public class MigrationStage: @unchecked Sendable, CustomStringConvertible {  // `label` lives behind a lock
    private let storedLabel = Protected<String?>(nil)

    /// A name for the stage, shown in migration plans and errors.
    public var label: String? {
        get { storedLabel.withLock { $0 } }
        set { storedLabel.withLock { $0 = newValue } }
    }

    init() {}

    public var description: String { label ?? "\(type(of: self))" }

    /// The model versions of the stage, in order, each with how it is reached from the one before.
    func versions() throws -> [MigrationVersion] { [] }
}

/// A stage that migrates through model versions by inferred (lightweight) migrations only
/// (`NSLightweightMigrationStage`).
///
/// ```swift
/// let stage = LightweightMigrationStage([v1, v2, v3])
/// stage.label = "V1 to V3: added tags"
/// ```
public final class LightweightMigrationStage: MigrationStage, @unchecked Sendable {  // immutable but for `label`
    let references: [ManagedObjectModelReference]

    /// A stage through `models`, in order.
    public init(_ models: [ManagedObjectModel]) {
        self.references = models.map { ManagedObjectModelReference(model: $0) }
    }

    /// A stage through the models `references` name, in order.
    public init(_ references: [ManagedObjectModelReference]) {
        self.references = references
    }

    /// The checksums of the stage's models, in order.
    public var versionChecksums: [String] { references.map(\.versionChecksum) }

    override func versions() throws -> [MigrationVersion] {
        try references.map { MigrationVersion(model: try $0.checkedModel(stage: "'\(description)'"), kind: .lightweight, stage: self) }
    }
}

/// A stage from one model version to the next with code of yours before and after the inferred
/// migration between them (`NSCustomMigrationStage`).
///
/// ```swift
/// let stage = CustomMigrationStage(migratingFrom: v2, to: v3,
///     willMigrate: { context in   // the store, on model v2
///         for note in try context.fetch(FetchRequest<ManagedObject>(entityName: "Note")) { ... }
///         try context.save()
///     },
///     didMigrate: { context in    // the store, on model v3
///         ...
///     })
/// ```
///
/// A handler that throws aborts the whole migration: the store is left as it was.
public final class CustomMigrationStage: MigrationStage, @unchecked Sendable {  // handlers live behind a lock
    /// The model the stage starts from.
    public let currentModel: ManagedObjectModelReference
    /// The model the stage ends with.
    public let nextModel: ManagedObjectModelReference

    private let handlers = Protected<(
        will: (@Sendable (ManagedObjectContext) throws -> Void)?, did: (@Sendable (ManagedObjectContext) throws -> Void)?
    )>((nil, nil))

    /// Runs on a context whose coordinator has ``currentModel`` and the store as it is, before the
    /// inferred migration. Changes it saves are migrated.
    public var willMigrateHandler: (@Sendable (ManagedObjectContext) throws -> Void)? {
        get { handlers.withLock { $0.will } }
        set { handlers.withLock { $0.will = newValue } }
    }

    /// Runs on a context whose coordinator has ``nextModel`` and the migrated store.
    public var didMigrateHandler: (@Sendable (ManagedObjectContext) throws -> Void)? {
        get { handlers.withLock { $0.did } }
        set { handlers.withLock { $0.did = newValue } }
    }

    /// A stage from `currentModel` to `nextModel`.
    public init(
        migratingFrom currentModel: ManagedObjectModelReference, to nextModel: ManagedObjectModelReference,
        willMigrate: (@Sendable (ManagedObjectContext) throws -> Void)? = nil,
        didMigrate: (@Sendable (ManagedObjectContext) throws -> Void)? = nil
    ) {
        self.currentModel = currentModel
        self.nextModel = nextModel
        super.init()
        handlers.withLock { $0 = (willMigrate, didMigrate) }
    }

    /// A stage from `currentModel` to `nextModel`.
    public convenience init(
        migratingFrom currentModel: ManagedObjectModel, to nextModel: ManagedObjectModel,
        willMigrate: (@Sendable (ManagedObjectContext) throws -> Void)? = nil,
        didMigrate: (@Sendable (ManagedObjectContext) throws -> Void)? = nil
    ) {
        self.init(
            migratingFrom: ManagedObjectModelReference(model: currentModel), to: ManagedObjectModelReference(model: nextModel),
            willMigrate: willMigrate, didMigrate: didMigrate)
    }

    override func versions() throws -> [MigrationVersion] {
        let name = "'\(description)'"
        let (will, did) = handlers.withLock { ($0.will, $0.did) }
        return [
            MigrationVersion(model: try currentModel.checkedModel(stage: name), kind: .lightweight, stage: self),
            MigrationVersion(model: try nextModel.checkedModel(stage: name), kind: .custom, stage: self, willMigrate: will, didMigrate: did),
        ]
    }
}

/// The stages of a staged migration, in order (`NSStagedMigrationManager`).
///
/// ```swift
/// let manager = StagedMigrationManager([
///     LightweightMigrationStage([v1, v2]),
///     CustomMigrationStage(migratingFrom: v2, to: v3, willMigrate: { context in ... }),
/// ])
/// description.setOption(manager, forKey: PersistentStoreOption.stagedMigrationManager)
/// ```
///
/// A store at any version of the stages runs only the stages after its own version.
public final class StagedMigrationManager: Sendable, CustomStringConvertible {
    /// The stages, in order.
    public let stages: [MigrationStage]

    /// A manager running `stages` in order.
    public init(_ stages: [MigrationStage]) {
        self.stages = stages
    }

    public var description: String { "StagedMigrationManager(\(stages.map(\.description).joined(separator: ", ")))" }
}

/// One model version of a staged migration, and how it is reached from the version before it.
struct MigrationVersion: Sendable {
    var model: ManagedObjectModel
    var kind: MigrationPlan.Step.Kind
    var stage: MigrationStage?
    var willMigrate: (@Sendable (ManagedObjectContext) throws -> Void)? = nil
    var didMigrate: (@Sendable (ManagedObjectContext) throws -> Void)? = nil
}
