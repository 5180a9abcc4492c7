import Foundation

/// A PostgreSQL store's tables, in the schema its URL names (`?schema=`, else `public`): Core Data's
/// relational layout (``CoreDataLayout``, with PostgreSQL's column types: ``SQLDialect/postgres``),
/// `Z_PRIMARYKEY` (the largest key of each entity), and `Z_METADATA` (every name quoted, so kept in
/// capitals) (the store's UUID and, as a
/// binary property list, Core Data's metadata with the model's version hashes).
///
/// Opening is one transaction, serialized between processes by an advisory lock on the schema:
/// the first process to open an empty schema creates everything (PostgreSQL's DDL is
/// transactional, so a failure leaves nothing behind); every other one reads the metadata, and a
/// store written with another model is refused.
enum PostgresStoreTables {
    static let metadataTable = CoreDataLayout.metadataTable
    static let primaryKeyTable = CoreDataLayout.primaryKeyTable
    /// The store's change log: one row per committed save (see ``PostgresChangeLog``).
    static let changeTable = "Z_OGCHANGE"
    /// The change log's count: one row, the number of the last save logged, which each save
    /// increments (see ``PostgresChangeLog``).
    static let changeCountTable = "Z_OGCHANGECOUNT"
    /// The model that wrote the store, compiled as in an SQLite store's `Z_MODELCACHE`, so that a
    /// migration knows its source model without the app keeping it.
    static let modelCacheTable = CoreDataLayout.modelCacheTable

    /// What opening found: the store's metadata, and when the store was written with another
    /// model that the caller asked to migrate from, that model's version hashes.
    struct Opened {
        var metadata: [String: any Sendable]
        var migrateFrom: [String: Data]?
        /// Whether the store's tables have the UNIQUE index of every uniqueness constraint of the
        /// model (a store written before they were made may lack some).
        var hasUniqueIndexes = true
    }

    /// `CREATE TABLE` for the change log, in the schema the statement qualifies it with.
    static func changeTableStatement(_ qualified: String) -> String {
        "CREATE TABLE IF NOT EXISTS \(qualified) (\"Z_TX\" BIGINT PRIMARY KEY, \"Z_AUTHOR\" TEXT, \"Z_TIME\" DOUBLE PRECISION, \"Z_CHANGES\" TEXT)"
    }

    /// Creates the change log's count, starting from the log's last number, in the schema of the
    /// qualified names (the caller's transaction holds the schema's advisory lock).
    static func createChangeCount(_ session: any PostgresSession, count: String, log: String) throws {
        try session.execute("CREATE TABLE \(count) (\"Z_TX\" BIGINT NOT NULL)", [])
        try session.execute("INSERT INTO \(count) (\"Z_TX\") SELECT COALESCE(MAX(\"Z_TX\"), 0) FROM \(log)", [])
    }

    /// The schema a store URL names (`?schema=NAME`), `public` when it names none.
    static func schemaName(in url: URL) -> String {
        URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems?.first { $0.name == "schema" }?.value ?? "public"
    }

    /// Creates the store's tables in an empty schema, or checks the model of the store the schema
    /// holds; returns the store's metadata (its UUID under ``PersistentStore/metadataIdentifierKey``).
    ///
    /// - Throws: ``ObjectGraphError/incompatibleModel`` for a store written with another model, or
    ///   a schema that holds other tables; ``ObjectGraphError/io`` when the server cannot be reached.
    /// - Parameter migrates: whether a store written with another model is reported to be migrated
    ///   (``Opened/migrateFrom``) rather than refused.
    static func open(
        _ driver: any PostgresDriver, schema: CoreDataLayout, schemaName: String, location: String, migrates: Bool = false, history: Bool = false
    ) throws -> Opened {
        do {
            return try driver.transaction(isolation: .readCommitted, readOnly: false) { session in
                let quotedSchema = CoreDataLayout.quote(schemaName)
                // One opener at a time per schema (the lock ends with the transaction).
                _ = try session.query("SELECT pg_advisory_xact_lock(hashtext($1))", [.text("ObjectGraph store " + schemaName)])
                try session.execute("CREATE SCHEMA IF NOT EXISTS \(quotedSchema)", [])
                let tables = try session.query(
                    "SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY table_name", [.text(schemaName)]
                ).compactMap { row -> String? in if case .text(let name) = row.first { name } else { nil } }
                if tables.isEmpty {
                    let metadata = try create(session, schema: schema, schemaName: schemaName)
                    if history { try PostgresStore.createHistoryTables(session, schemaName: schemaName) }
                    return Opened(metadata: metadata)
                }
                guard tables.contains(metadataTable) else {
                    throw ObjectGraphError(
                        .incompatibleModel,
                        "The schema \(schemaName) of \(location) holds tables (\(tables.prefix(3).joined(separator: ", "))) but no ObjectGraph store; give the store a schema of its own (?schema=NAME)")
                }
                let rows = try session.query("SELECT \"Z_UUID\", \"Z_PLIST\" FROM \(quotedSchema).\(CoreDataLayout.quote(metadataTable)) ORDER BY \"Z_VERSION\" LIMIT 1", [])
                guard let row = rows.first, case .text(let identifier) = row[0], case .bytes(let plist) = row[1],
                      var metadata = CoreDataMetadata.decode(plist)
                else {
                    throw ObjectGraphError(.incompatibleModel, "The store in schema \(schemaName) of \(location) has no readable metadata")
                }
                metadata[PersistentStore.metadataIdentifierKey] = identifier
                if let hashes = CoreDataMetadata.versionHashes(in: metadata),
                   let problem = CoreDataMetadata.incompatibility(of: hashes, with: schema.model) {
                    if migrates { return Opened(metadata: metadata, migrateFrom: hashes) }
                    throw ObjectGraphError(
                        .incompatibleModel, "The store in schema \(schemaName) of \(location) was written with another model (\(problem))")
                }
                // Stores created before the change log and the model cache existed get them now.
                let log = "\(quotedSchema).\(CoreDataLayout.quote(changeTable))"
                if !tables.contains(changeTable) {
                    try session.execute(changeTableStatement(log), [])
                }
                if !tables.contains(changeCountTable) {
                    try createChangeCount(session, count: "\(quotedSchema).\(CoreDataLayout.quote(changeCountTable))", log: log)
                }
                if !tables.contains(modelCacheTable) {
                    try writeModelCache(session, model: schema.model, schemaName: schemaName)
                }
                if history && !PostgresStore.historyTables.allSatisfy(tables.contains) {
                    try PostgresStore.createHistoryTables(session, schemaName: schemaName)
                }
                return Opened(metadata: metadata, hasUniqueIndexes: try hasUniqueIndexes(session, schema: schema, schemaName: schemaName))
            }
        } catch let error as PostgresDriverError {
            throw translate(error, location: location, while: "opening the store")
        }
    }

    /// Whether every UNIQUE index the model's uniqueness constraints have in a new store is in
    /// the schema (by name).
    private static func hasUniqueIndexes(_ session: any PostgresSession, schema: CoreDataLayout, schemaName: String) throws -> Bool {
        let names = schema.uniquenessIndexNames
        guard !names.isEmpty else { return true }
        let present = Set(try session.query("SELECT indexname FROM pg_indexes WHERE schemaname = $1", [.text(schemaName)]).compactMap { row -> String? in
            if case .text(let name) = row.first { name } else { nil }
        })
        // PostgreSQL cuts a name to 63 bytes.
        return names.allSatisfy { present.contains($0) || present.contains(String(decoding: $0.utf8.prefix(63), as: UTF8.self)) }
    }

    /// Creates everything in the (empty) schema, in the caller's transaction.
    private static func create(_ session: any PostgresSession, schema: CoreDataLayout, schemaName: String) throws -> [String: any Sendable] {
        let quotedSchema = CoreDataLayout.quote(schemaName)
        // Unqualified names below are the schema's.
        try session.execute("SET LOCAL search_path TO \(quotedSchema)", [])
        try session.execute("CREATE TABLE \(CoreDataLayout.quote(primaryKeyTable)) (\"Z_ENT\" BIGINT PRIMARY KEY, \"Z_NAME\" TEXT, \"Z_SUPER\" BIGINT, \"Z_MAX\" BIGINT)", [])
        try session.execute("CREATE TABLE \(CoreDataLayout.quote(metadataTable)) (\"Z_VERSION\" BIGINT PRIMARY KEY, \"Z_UUID\" TEXT, \"Z_PLIST\" BYTEA)", [])
        try session.execute(changeTableStatement(CoreDataLayout.quote(changeTable)), [])
        try createChangeCount(session, count: CoreDataLayout.quote(changeCountTable), log: CoreDataLayout.quote(changeTable))
        try writeModelCache(session, model: schema.model, schemaName: schemaName)
        try createEntityTables(session, schema: schema, maxKeys: [:])
        let identifier = UUID().uuidString
        var metadata = CoreDataMetadata.new(model: schema.model)
        metadata[PersistentStore.metadataTypeKey] = StoreType.postgres.rawValue
        try session.execute(
            "INSERT INTO \(CoreDataLayout.quote(metadataTable)) (\"Z_VERSION\", \"Z_UUID\", \"Z_PLIST\") VALUES (1, $1, $2)",
            [.text(identifier), .bytes(try CoreDataMetadata.encode(metadata))])
        metadata[PersistentStore.metadataIdentifierKey] = identifier
        return metadata
    }

    /// Creates the tables of the model's entities and relationships, and its rows of
    /// `Z_PRIMARYKEY` (with `maxKeys` by root entity code, else 0), in the schema `search_path` names.
    static func createEntityTables(_ session: any PostgresSession, schema: CoreDataLayout, maxKeys: [Int: Int64]) throws {
        for statement in schema.createStatements(.postgres) + schema.userIndexStatements(.postgres) {
            try session.execute(statement, [])
        }
        for (number, name, superentity) in schema.primaryKeyRows() {
            let key = maxKeys[number] ?? 0
            try session.execute(
                "INSERT INTO \(CoreDataLayout.quote(primaryKeyTable)) (\"Z_ENT\", \"Z_NAME\", \"Z_SUPER\", \"Z_MAX\") VALUES ($1, $2, $3, $4)",
                [.int(Int64(number)), .text(name), .int(Int64(superentity)), .int(key)])
        }
    }

    /// Records `model` as the store's (the table is made when missing; its row replaced).
    static func writeModelCache(_ session: any PostgresSession, model: ManagedObjectModel, schemaName: String) throws {
        let table = "\(CoreDataLayout.quote(schemaName)).\(CoreDataLayout.quote(modelCacheTable))"
        try session.execute("CREATE TABLE IF NOT EXISTS \(table) (\"Z_CONTENT\" BYTEA)", [])
        try session.execute("DELETE FROM \(table)", [])
        try session.execute("INSERT INTO \(table) (\"Z_CONTENT\") VALUES ($1)", [.bytes(try CompiledModelWriter.modelCacheContent(model))])
    }

    /// A driver error as an ObjectGraphError that says where and while doing what.
    static func translate(_ error: PostgresDriverError, location: String, while doing: String) -> ObjectGraphError {
        switch error.kind {
        case .connection:
            return ObjectGraphError(.io, "The PostgreSQL server of \(location) could not be reached while \(doing): \(error.message)")
        case .server where error.sqlState == "3D000" || error.sqlState == "28000" || error.sqlState == "28P01":
            return ObjectGraphError(.io, "The PostgreSQL server refused \(location) while \(doing): \(error.message)")
        case .server, .other, .poolExhausted:
            return ObjectGraphError(.io, "PostgreSQL failed while \(doing) in \(location): \(error)")
        }
    }
}
