import Foundation

// Lightweight migration of a PostgreSQL store, in one transaction.
//
// A store added with the migration options (Core Data's two flags, or a staged migration manager)
// whose tables were written with another model is migrated as it is added: in one `READ
// COMMITTED` transaction holding the schema's advisory lock (the lock every opener takes), its
// entity tables locked against every other session, the old rows are read with the old model,
// carried over step by step (``MigrationRowTransfer``, as the atomic stores do), the old tables
// dropped, the new ones created, the rows written with their keys, and the new model recorded.
// PostgreSQL's DDL is transactional: a failure at any point, or a connection lost, rolls all of it
// back, and the store is the old one, whole. Coordinators of other processes that still use the
// old model keep waiting on the lock until the migration commits, and then fail on the tables
// they knew: a store is migrated once, by the first process of the new version of the app.

extension PostgresStore {
    /// Migrates the store from the model whose version hashes it records to ``model``.
    ///
    /// - Throws: ``ObjectGraphError/migration`` when the source model is unknown or the data breaks
    ///   a condition of the new model, ``ObjectGraphError/unsupported`` for a custom migration
    ///   stage; the store is left as it was.
    func migrate(from hashes: [String: Data], settings: MigrationSettings) throws {
        try write("migrating the store to a new model") { session in
            _ = try session.query("SELECT pg_advisory_xact_lock(hashtext($1))", [.text("ObjectGraph store " + schemaName)])
            // Another process may have migrated it while this one waited for the lock.
            let now = try storedVersionHashes(session)
            if now == model.entityVersionHashesByName { return }
            guard now == hashes else {
                throw ObjectGraphError(.migration, "The store in schema \(schemaName) of \(location) changed model while it was being opened; add it again", url: url)
            }
            let tables = try session.query(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = $1 AND table_type = 'BASE TABLE' ORDER BY table_name",
                [.text(schemaName)]
            ).compactMap { row -> String? in if case .text(let name) = row.first { name } else { nil } }
            let recorded = tables.contains(PostgresStoreTables.modelCacheTable) ? try recordedModel(session) : nil
            let plan = try MigrationPlanner.plan(
                forStoreAt: url, type: .postgres, identity: .versionHashes(hashes), to: model, settings: settings, describe: false, recorded: recorded)
            guard let first = plan.steps.first else { return }
            if let custom = plan.steps.first(where: { $0.kind == .custom }) {
                throw ObjectGraphError(
                    .unsupported,
                    "Cannot migrate the store in schema \(schemaName) of \(location): its path has a custom stage\(custom.label.map { " ('\($0)')" } ?? ""), whose handlers save through contexts, and PostgreSQL stores run lightweight stages only; the store was left as it was",
                    url: url)
            }
            // Every table of the store, locked against other sessions until the commit.
            for name in tables { try session.execute("LOCK TABLE \(table(name)) IN ACCESS EXCLUSIVE MODE", []) }

            // The old rows, read with the old model in this transaction, carried over step by step.
            let reader = PostgresStore(readingTablesOf: first.sourceModel, url: url, location: location, schemaName: schemaName, driver: driver)
            let readerStore = PersistentStore(type: .postgres, url: url, configurationName: nil, isReadOnly: true, durability: .full, backend: reader)
            let finalStore = PersistentStore(type: .postgres, url: url, configurationName: nil, isReadOnly: false, durability: .full, backend: self)
            if plan.steps.count == 1, Self.streams(first.mapping) {
                try migrateStreaming(first.mapping, from: reader, readerStore, to: finalStore, dropping: tables, session: session)
            } else {
                var rows: [StoreRow] = []
                for root in first.sourceModel.entitiesByCode where root.superentity == nil {
                    guard let layout = reader.layouts[root.entityCode] else { continue }
                    rows += try reader.fetch(StoreFetchRequest(entity: root), layout: layout, store: readerStore, session: session)
                }
                var destinations: (RelationshipDescription, [ManagedObjectID]) throws -> [ManagedObjectID: [ManagedObjectID]] = { relationship, ids in
                    try reader.readDestinations(of: relationship, for: ids, store: readerStore, session: session)
                }
                var keys = try reader.storedMaxKeys(session)
                var request = StoreSaveRequest()
                for (index, step) in plan.steps.enumerated() {
                    let isLast = index == plan.steps.count - 1
                    if isLast {
                        request = try MigrationRowTransfer.request(mapping: step.mapping, url: url, rows: rows, newStore: finalStore, destinations: destinations)
                    } else {
                        // An intermediate model version: its rows are kept in memory for the next step.
                        let staging = InMemoryStore(model: step.destinationModel, identifier: identifier, type: .postgres)
                        let stagingStore = PersistentStore(type: .postgres, url: url, configurationName: nil, isReadOnly: false, durability: .full, backend: staging)
                        let next = try MigrationRowTransfer.request(mapping: step.mapping, url: url, rows: rows, newStore: stagingStore, destinations: destinations)
                        _ = try staging.save(next, store: stagingStore)
                        rows = []
                        for root in step.destinationModel.entitiesByCode where root.superentity == nil {
                            rows += try staging.fetch(StoreFetchRequest(entity: root), store: stagingStore)
                        }
                        destinations = { relationship, ids in try staging.destinations(of: relationship, for: ids, store: stagingStore) }
                    }
                    keys = MigrationRowTransfer.maxKeys(mapping: step.mapping, old: keys)
                }

                // The old tables go, the new ones come, and the rows are written with their keys.
                for name in tables where !Self.keptByMigration.contains(name) {
                    try session.execute("DROP TABLE \(table(name)) CASCADE", [])
                }
                try session.execute("DELETE FROM \(table(PostgresStoreTables.primaryKeyTable))", [])
                try session.execute("SET LOCAL search_path TO \(CoreDataLayout.quote(schemaName))", [])
                var numbers: [Int: Int64] = [:]
                for (code, key) in keys { numbers[schema.entityNumber(for: model.entitiesByCode[code])] = key }
                try PostgresStoreTables.createEntityTables(session, schema: schema, maxKeys: numbers)
                _ = try SavePlan(request, schema: schema, tables: layouts).run(on: PostgresSaveSession(store: self, persistentStore: finalStore, session: session), store: finalStore)
            }
            var recordedMetadata = metadata
            recordedMetadata[PersistentStore.metadataIdentifierKey] = nil
            try session.execute(
                "UPDATE \(table(PostgresStoreTables.metadataTable)) SET \"Z_PLIST\" = $1", [.bytes(try CoreDataMetadata.encode(recordedMetadata))])
            try PostgresStoreTables.writeModelCache(session, model: model, schemaName: schemaName)
        }
    }

    /// The tables a migration keeps: the store's own, not the model's.
    static let keptByMigration = [
        PostgresStoreTables.metadataTable, PostgresStoreTables.primaryKeyTable, PostgresStoreTables.changeTable, PostgresStoreTables.changeCountTable,
        PostgresStoreTables.modelCacheTable,
    ] + historyTables

    /// How many old rows a streaming migration reads, carries over and writes at a time.
    static let migrationChunk = 5_000
    /// How many chunks streaming migrations have carried over, in this process (for tests).
    static let migratedChunks = StatementCounter()

    /// Whether a one-step migration can carry the rows over a chunk at a time: each new row is made
    /// from its old row alone. Not when the new model sets conditions on the data as a whole
    /// (uniqueness, no nils, no rows, at most one destination), which every row must be read to
    /// check, or when a new to-one is read from an old to-many through its inverse, whose pairs
    /// come from rows of the other entity.
    static func streams(_ mapping: MigrationMapping) -> Bool {
        guard mapping.checks.isEmpty else { return false }
        for entity in mapping.destination.entitiesByCode {
            for relationship in entity.declaredProperties.compactMap({ $0 as? RelationshipDescription }) where !relationship.isToMany {
                if let was = mapping.source(of: relationship) as? RelationshipDescription, !was.isToMany { continue }
                if let inverse = relationship.inverseRelationship, mapping.source(of: inverse) != nil { return false }
            }
        }
        return true
    }

    /// A one-step migration that never holds more than ``migrationChunk`` rows: the new tables are
    /// made in a schema of their own in the migration's transaction, each old table is read in
    /// key order a chunk at a time and its rows written there with their keys, then the old
    /// tables are dropped and the new ones moved into the store's schema. All in the caller's
    /// transaction: a failure leaves the store as it was.
    private func migrateStreaming(
        _ mapping: MigrationMapping, from reader: PostgresStore, _ readerStore: PersistentStore, to finalStore: PersistentStore,
        dropping tables: [String], session: any PostgresSession
    ) throws {
        let staging = schemaName + "_og_migrating"
        let quotedStaging = CoreDataLayout.quote(staging)
        try session.execute("DROP SCHEMA IF EXISTS \(quotedStaging) CASCADE", [])
        try session.execute("CREATE SCHEMA \(quotedStaging)", [])
        try session.execute("SET LOCAL search_path TO \(quotedStaging)", [])
        try session.execute(
            "CREATE TABLE \(CoreDataLayout.quote(PostgresStoreTables.primaryKeyTable)) (\"Z_ENT\" BIGINT PRIMARY KEY, \"Z_NAME\" TEXT, \"Z_SUPER\" BIGINT, \"Z_MAX\" BIGINT)", [])
        var numbers: [Int: Int64] = [:]
        for (code, key) in MigrationRowTransfer.maxKeys(mapping: mapping, old: try reader.storedMaxKeys(session)) {
            numbers[schema.entityNumber(for: model.entitiesByCode[code])] = key
        }
        try PostgresStoreTables.createEntityTables(session, schema: schema, maxKeys: numbers)
        let writer = PostgresStore(readingTablesOf: model, url: url, location: location, schemaName: staging, driver: driver)
        let destinations: (RelationshipDescription, [ManagedObjectID]) throws -> [ManagedObjectID: [ManagedObjectID]] = { relationship, ids in
            try reader.readDestinations(of: relationship, for: ids, store: readerStore, session: session)
        }
        for root in mapping.source.entitiesByCode where root.superentity == nil {
            guard let layout = reader.layouts[root.entityCode] else { continue }
            var after = Int64.min
            while true {
                count()
                let rows = try session.query(
                    "SELECT \(layout.selectList) FROM \(layout.table) AS t0 WHERE t0.\"Z_PK\" > $1 ORDER BY t0.\"Z_PK\" LIMIT \(Self.migrationChunk)", [.int(after)]
                ).compactMap { layout.read($0, store: readerStore) }
                guard let last = rows.last?.id.primaryKey else { break }
                after = last
                let request = try MigrationRowTransfer.request(mapping: mapping, url: url, rows: rows, newStore: finalStore, destinations: destinations)
                _ = try SavePlan(request, schema: writer.schema, tables: writer.layouts)
                    .run(on: PostgresSaveSession(store: writer, persistentStore: finalStore, session: session), store: finalStore)
                Self.migratedChunks.add(1)
                if rows.count < Self.migrationChunk { break }
            }
        }
        // The old tables go; the new ones, and the new keys, take their place.
        for name in tables where !Self.keptByMigration.contains(name) {
            try session.execute("DROP TABLE \(table(name)) CASCADE", [])
        }
        try session.execute("DELETE FROM \(table(PostgresStoreTables.primaryKeyTable))", [])
        try session.execute(
            "INSERT INTO \(table(PostgresStoreTables.primaryKeyTable)) SELECT * FROM \(quotedStaging).\(CoreDataLayout.quote(PostgresStoreTables.primaryKeyTable))", [])
        let moved = try session.query(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = $1 AND table_name <> $2", [.text(staging), .text(PostgresStoreTables.primaryKeyTable)]
        ).compactMap { row -> String? in if case .text(let name) = row.first { name } else { nil } }
        for name in moved {
            try session.execute("ALTER TABLE \(quotedStaging).\(CoreDataLayout.quote(name)) SET SCHEMA \(CoreDataLayout.quote(schemaName))", [])
        }
        try session.execute("DROP SCHEMA \(quotedStaging) CASCADE", [])
        try session.execute("SET LOCAL search_path TO \(CoreDataLayout.quote(schemaName))", [])
    }

    /// The version hashes the store's metadata records, read in `session`.
    private func storedVersionHashes(_ session: any PostgresSession) throws -> [String: Data]? {
        let rows = try session.query("SELECT \"Z_PLIST\" FROM \(table(PostgresStoreTables.metadataTable)) ORDER BY \"Z_VERSION\" LIMIT 1", [])
        guard case .bytes(let plist)? = rows.first?.first, let metadata = CoreDataMetadata.decode(plist) else { return nil }
        return CoreDataMetadata.versionHashes(in: metadata)
    }

    /// The model the store's `Z_MODELCACHE` records as the one that wrote it, or nil when the table is empty.
    private func recordedModel(_ session: any PostgresSession) throws -> ManagedObjectModel? {
        guard case .bytes(let blob)? = try session.query("SELECT \"Z_CONTENT\" FROM \(table(PostgresStoreTables.modelCacheTable)) LIMIT 1", []).first?.first
        else { return nil }
        return try ManagedObjectModel(compiledModelData: ManagedObjectModel.inflateModelCache(blob, of: url), source: url)
    }

    /// The largest key of each root entity (by entity code), as `Z_PRIMARYKEY` records them.
    private func storedMaxKeys(_ session: any PostgresSession) throws -> [Int: Int64] {
        var keys: [Int: Int64] = [:]
        for row in try session.query("SELECT \"Z_NAME\", \"Z_MAX\" FROM \(table(PostgresStoreTables.primaryKeyTable))", []) {
            guard case .text(let name) = row[0], let entity = model.entitiesByName[name], entity.superentity == nil else { continue }
            keys[entity.entityCode] = row[1].integer ?? 0
        }
        return keys
    }
}
