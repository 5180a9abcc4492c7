import Foundation
import Logging

/// What the store tools read from a PostgreSQL store before they know its model: its metadata, the
/// model that wrote it, and its bookkeeping. Read in one read-only transaction; nothing is written.
package struct PostgresStoreSummary {
    /// The store's URL without its password.
    package var location: String
    /// The PostgreSQL schema holding the store's tables.
    package var schemaName: String
    /// The store's UUID (`Z_METADATA.Z_UUID`).
    package var uuid: String?
    /// The store's metadata (Core Data's keys).
    package var metadata: [String: any Sendable]
    /// The entity version hashes the metadata records (`NSStoreModelVersionHashes`).
    package var versionHashes: [String: Data]
    /// The compiled model the store's `Z_MODELCACHE` holds (inflated), when it holds one.
    package var compiledModel: Data?
    /// The history tables the schema holds (the store was added with history tracking).
    package var historyTables: [String]
    /// Entity tables whose largest key is above the key `Z_PRIMARYKEY` records as used.
    package var bookkeepingWarnings: [String]
}

extension StoreTools {
    /// See ``PostgresStore/summary(of:)``.
    package static func postgresSummary(of url: URL) throws -> PostgresStoreSummary {
        try PostgresStore.summary(of: url)
    }

    /// See ``PostgresStore/verify(at:model:progress:)``.
    package static func verifyPostgres(at url: URL, model: ManagedObjectModel, progress: (Int, Int) -> Void = { _, _ in }) throws -> StoreVerification {
        try PostgresStore.verify(at: url, model: model, progress: progress)
    }
}

extension PostgresStore {
    /// Whether `url` names a PostgreSQL store (`postgres://` or `postgresql://`).
    static func names(_ url: URL) -> Bool {
        url.scheme == "postgres" || url.scheme == "postgresql"
    }

    /// Reads the store in the schema `url` names, without a model and without writing: unlike
    /// adding the store, which creates one in an empty schema.
    ///
    /// - Throws: ``ObjectGraphError/notADatabase`` when the schema holds no ObjectGraph store;
    ///   ``ObjectGraphError/io`` when the server cannot be reached or refuses the URL;
    ///   ``ObjectGraphError/unsupported`` when the program has not registered the PostgreSQL store.
    static func summary(of url: URL) throws -> PostgresStoreSummary {
        let schemaName = PostgresStoreTables.schemaName(in: url)
        let location = Self.location(of: url)
        return try withConnection(to: url, location: location, doing: "reading the store") { session in
            let tables = try session.query(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY table_name", [.text(schemaName)]
            ).compactMap { row -> String? in if case .text(let name) = row.first { name } else { nil } }
            let quotedSchema = CoreDataLayout.quote(schemaName)
            func qualified(_ table: String) -> String { "\(quotedSchema).\(CoreDataLayout.quote(table))" }
            guard tables.contains(PostgresStoreTables.metadataTable) else {
                throw ObjectGraphError(
                    .notADatabase,
                    tables.isEmpty
                        ? "There is no ObjectGraph store in schema \(schemaName) of \(location): the schema has no tables"
                        : "The schema \(schemaName) of \(location) holds tables (\(tables.prefix(3).joined(separator: ", "))) but no ObjectGraph store (no \(PostgresStoreTables.metadataTable))",
                    url: url)
            }
            let rows = try session.query("SELECT \"Z_UUID\", \"Z_PLIST\" FROM \(qualified(PostgresStoreTables.metadataTable)) ORDER BY \"Z_VERSION\" LIMIT 1", [])
            guard let row = rows.first, case .bytes(let plist) = row[1], let metadata = CoreDataMetadata.decode(plist) else {
                throw ObjectGraphError(.notADatabase, "The store in schema \(schemaName) of \(location) has no readable metadata", url: url)
            }
            var uuid: String?
            if case .text(let text) = row[0] { uuid = text }
            var compiledModel: Data?
            if tables.contains(PostgresStoreTables.modelCacheTable),
               case .bytes(let blob)? = try session.query("SELECT \"Z_CONTENT\" FROM \(qualified(PostgresStoreTables.modelCacheTable)) LIMIT 1", []).first?.first {
                compiledModel = try ManagedObjectModel.inflateModelCache(blob, of: url)
            }
            // Core Data's key bookkeeping: a root entity's Z_MAX is at least its table's largest key.
            var warnings: [String] = []
            if tables.contains(PostgresStoreTables.primaryKeyTable) {
                for key in try session.query("SELECT \"Z_NAME\", \"Z_MAX\" FROM \(qualified(PostgresStoreTables.primaryKeyTable)) WHERE \"Z_SUPER\" = 0", []) {
                    guard case .text(let name) = key[0] else { continue }
                    let table = "Z" + name.uppercased()  // CoreDataLayout.tableName(_:) of a root entity
                    guard tables.contains(table) else { continue }
                    let recorded = key[1].integer ?? 0
                    let largest = try session.query("SELECT MAX(\"Z_PK\") FROM \(qualified(table))", []).first?.first?.integer ?? 0
                    if largest > recorded { warnings.append("Z_PRIMARYKEY.Z_MAX of \(name) is \(recorded), below its largest key \(largest)") }
                }
            }
            return PostgresStoreSummary(
                location: location, schemaName: schemaName, uuid: uuid, metadata: metadata,
                versionHashes: CoreDataMetadata.versionHashes(in: metadata) ?? [:], compiledModel: compiledModel,
                historyTables: PostgresStore.historyTables.filter(tables.contains), bookkeepingWarnings: warnings)
        }
    }

    /// Checks the invariants of the layout the server does not enforce (``CoreDataLayout/verificationChecks(primaryKeyTable:table:)``),
    /// in one read-only transaction. The server's own pages are PostgreSQL's to check.
    ///
    /// - Parameter progress: called with (checks done, checks in all) as it goes.
    /// - Throws: the errors of ``summary(of:)``; ``ObjectGraphError/incompatibleModel`` when the
    ///   store was written with another model.
    static func verify(at url: URL, model: ManagedObjectModel, progress: (Int, Int) -> Void = { _, _ in }) throws -> StoreVerification {
        let summary = try summary(of: url)
        let schema = CoreDataLayout(model: model)
        if let problem = CoreDataMetadata.incompatibility(of: summary.versionHashes, with: model) {
            throw ObjectGraphError(.incompatibleModel, "The store in schema \(summary.schemaName) of \(summary.location) was written with another model (\(problem))", url: url)
        }
        let quotedSchema = CoreDataLayout.quote(summary.schemaName)
        let checks = schema.verificationChecks(primaryKeyTable: "\(quotedSchema).\(CoreDataLayout.quote(PostgresStoreTables.primaryKeyTable))") {
            "\(quotedSchema).\(CoreDataLayout.quote($0))"
        }
        progress(0, checks.count)
        return try withConnection(to: url, location: summary.location, doing: "verifying the store") { session in
            var result = StoreVerification(integrity: StoreVerification.integrityOfTheServer)
            for (i, check) in checks.enumerated() {
                result.checks.append("\(check.check) \(check.table)")
                let rows = Int(try session.query(check.sql, []).first?.first?.integer ?? 0)
                if rows > 0 { result.problems.append(.init(check: check.check, table: check.table, detail: check.detail, rows: rows)) }
                progress(i + 1, checks.count)
            }
            return result
        }
    }

    /// The URL without its password, for messages.
    static func location(of url: URL) -> String {
        var shown = URLComponents(url: url, resolvingAgainstBaseURL: false)
        if shown?.password != nil { shown?.password = "…" }
        return shown?.string ?? "the PostgreSQL database"
    }

    /// Runs `body` in a read-only `REPEATABLE READ` transaction of one connection to `url`'s
    /// server, closed afterwards.
    private static func withConnection<T>(to url: URL, location: String, doing: String, _ body: (any PostgresSession) throws -> T) throws -> T {
        var logger = Logger(label: "objectgraph.postgres.tools")
        logger.logLevel = .error
        let driver: any PostgresDriver
        do {
            driver = try PostgresDrivers.factory().connect(url: url, maximumConnections: 1, logger: logger)
        } catch let error as PostgresDriverError {
            throw PostgresStoreTables.translate(error, location: location, while: doing)
        }
        defer { driver.close() }
        do {
            return try driver.transaction(isolation: .repeatableRead, readOnly: true, body)
        } catch let error as PostgresDriverError {
            throw PostgresStoreTables.translate(error, location: location, while: doing)
        }
    }
}
