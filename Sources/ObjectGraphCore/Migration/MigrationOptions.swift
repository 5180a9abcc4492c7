import Foundation

extension ObjectGraphError.Code {
    /// A migration that cannot run: what cannot be inferred, a stage that does not fit, data the
    /// new model refuses. The store is left as it was.
    public static let migration = ObjectGraphError.Code("migration")
}

extension ObjectGraphError {
    /// A migration that cannot run; the store is left as it was. The description names the
    /// entity, the property and the reason.
    public static let migration = ObjectGraphError(.migration, "The store cannot be migrated to the model.")
}

extension PersistentStoreOption {
    /// A `Bool`: migrate a store written with another model version when it is added
    /// (Core Data's `NSMigratePersistentStoresAutomaticallyOption`). Default: false for
    /// `addPersistentStore`, true for a ``PersistentStoreDescription``.
    public static let migratePersistentStoresAutomatically = "NSMigratePersistentStoresAutomaticallyOption"
    /// A `Bool`: infer the mapping between the store's model and the coordinator's (lightweight
    /// migration; Core Data's `NSInferMappingModelAutomaticallyOption`). Default: false for
    /// `addPersistentStore`, true for a ``PersistentStoreDescription``.
    public static let inferMappingModelAutomatically = "NSInferMappingModelAutomaticallyOption"
    /// A ``StagedMigrationManager``: the model versions to migrate through, with custom stages
    /// (Core Data's `NSPersistentStoreStagedMigrationManagerOptionKey`).
    public static let stagedMigrationManager = "NSPersistentStoreStagedMigrationManagerOptionKey"
}

extension PersistentStoreDescription {
    /// Whether a store written with another model version is migrated when it is added; true
    /// unless set. The ``PersistentStoreOption/migratePersistentStoresAutomatically`` option.
    public var shouldMigrateStoreAutomatically: Bool {
        get { (options[PersistentStoreOption.migratePersistentStoresAutomatically] as? Bool) ?? true }
        set { setOption(newValue, forKey: PersistentStoreOption.migratePersistentStoresAutomatically) }
    }

    /// Whether the mapping between model versions is inferred (lightweight migration); true unless
    /// set. The ``PersistentStoreOption/inferMappingModelAutomatically`` option.
    public var shouldInferMappingModelAutomatically: Bool {
        get { (options[PersistentStoreOption.inferMappingModelAutomatically] as? Bool) ?? true }
        set { setOption(newValue, forKey: PersistentStoreOption.inferMappingModelAutomatically) }
    }

    /// The options a container adds the store with: ``options`` and the two migration options'
    /// values (true unless set, as in Core Data).
    var optionsForAdding: [String: any Sendable] {
        var options = options
        options[PersistentStoreOption.migratePersistentStoresAutomatically] = shouldMigrateStoreAutomatically
        options[PersistentStoreOption.inferMappingModelAutomatically] = shouldInferMappingModelAutomatically
        return options
    }
}

/// The migration options of `addPersistentStore`, read once.
struct MigrationSettings {
    var migrate = false
    var infer = false
    var manager: StagedMigrationManager?
    var readOnly = false

    init(_ options: [String: any Sendable]?) throws {
        guard let options else { return }
        func flag(_ key: String) throws -> Bool {
            guard let value = options[key] else { return false }
            if let flag = value as? Bool { return flag }
            if let number = value as? Int { return number != 0 }
            throw ObjectGraphError(.unsupported, "Store option \(key) must be a Bool, not \(type(of: value)) \(value)", key: key)
        }
        migrate = try flag(PersistentStoreOption.migratePersistentStoresAutomatically)
        infer = try flag(PersistentStoreOption.inferMappingModelAutomatically)
        readOnly = (options[PersistentStoreOption.readOnly] as? Bool) ?? false
        if let value = options[PersistentStoreOption.stagedMigrationManager] {
            guard let manager = value as? StagedMigrationManager else {
                throw ObjectGraphError(
                    .unsupported, "Store option \(PersistentStoreOption.stagedMigrationManager) must be a StagedMigrationManager, not \(type(of: value))",
                    key: PersistentStoreOption.stagedMigrationManager)
            }
            self.manager = manager
        }
    }

    /// Whether a store written with another model is migrated: with a staged migration manager,
    /// or when both migration options are true (Core Data's rule; given neither, it is not).
    var migrates: Bool { manager != nil || (migrate && infer) }
}
