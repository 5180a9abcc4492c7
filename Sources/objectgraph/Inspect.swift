import ArgumentParser
import Foundation
import GRDB
import ObjectGraphCore

/// `objectgraph inspect STORE [--model MODEL]`: a Core Data store's metadata, the model that wrote
/// it, its entities with their counts, and an integrity check: an SQLite file, or a PostgreSQL
/// store's URL. Reads only: the store is opened read-only.
struct Inspect: ToolCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print a Core Data store's metadata, model version, entities with counts, and check its integrity.",
        discussion: """
            The store is an SQLite file, written by Apple's Core Data or by ObjectGraph, or a PostgreSQL store's URL \
            (postgres://user@host:port/database[?schema=NAME], with the tool built with the PostgreSQL trait); it is opened \
            read-only. Without --model, the model the store caches (Z_MODELCACHE) is used. \
            Exits with 1 when the model does not match the store or the integrity check fails.
            """)

    @Argument(help: "The store's .sqlite file (its -wal and -shm beside it are read too), or a postgres:// URL.") var store: String
    @Option(help: "The model: an .xcdatamodeld, .xcdatamodel, .momd or .mom.") var model: String?

    func execute() throws {
        let location = try StoreLocation(store)
        let url = location.url
        let file = try StoreFile.read(location)
        print("Store: \(location.shown)")
        print("  UUID: \(file.uuid ?? "none")")
        print("  Type: \(file.metadata["NSStoreType"] as? String ?? "unknown")")
        if file.metadata["ObjectGraphModelVersionHash"] != nil {
            print("  Written by: ObjectGraph")
        } else if let version = file.metadata["NSPersistenceFrameworkVersion"] as? Int {
            print("  Written by: Core Data (framework version \(version))")
        }
        let identifiers = (file.metadata["NSStoreModelVersionIdentifiers"] as? [Any] ?? []).map { "\($0)" }.filter { !$0.isEmpty }
        print("  Model version identifiers: \(identifiers.isEmpty ? "none" : identifiers.joined(separator: ", "))")
        if let checksum = file.metadata["NSStoreModelVersionChecksumKey"] as? String { print("  Model checksum: \(checksum)") }
        print("  Entities in the metadata: \(file.hashes.count)")
        if !file.historyTables.isEmpty { print("  Persistent history: \(file.historyTables.joined(separator: ", ")) (add the store with NSPersistentHistoryTrackingKey to write it)") }

        let loaded: ManagedObjectModel
        if let model {
            loaded = try ManagedObjectModel(contentsOf: URL(fileURLWithPath: model))
            print("Model: \(model)")
        } else {
            loaded = try ManagedObjectModel(contentsOfStoreAt: url)
            print("Model: cached in the store (Z_MODELCACHE)")
        }
        let matches = loaded.entityVersionHashesByName == file.hashes
        print("  Version hashes match the store: \(matches ? "yes" : "no")")
        var failed = !matches
        if !matches {
            let own = loaded.entityVersionHashesByName
            for name in Set(own.keys).union(file.hashes.keys).sorted() where own[name] != file.hashes[name] {
                print("    \(name): \(own[name] == nil ? "not in the model" : file.hashes[name] == nil ? "not in the store" : "differs")")
            }
        }

        if matches {
            let coordinator = PersistentStoreCoordinator(managedObjectModel: loaded, logger: ToolLogging.quiet)
            try coordinator.addPersistentStore(type: location.isPostgreSQL ? .postgres : .sqlite, at: url, options: [PersistentStoreOption.readOnly: true])
            let context = ManagedObjectContext(concurrencyType: .confinement)
            context.persistentStoreCoordinator = coordinator
            print("Entities:")
            let width = loaded.entities.map(\.name.count).max() ?? 0
            for entity in loaded.entities.sorted(by: { $0.name < $1.name }) {
                let request = FetchRequest<ManagedObject>(entityName: entity.name)
                request.includesSubentities = false
                let count = try context.count(for: request)
                let kind = entity.isAbstract ? " (abstract)" : entity.superentity.map { " (a \($0.name))" } ?? ""
                print("  \(entity.name.padding(toLength: width, withPad: " ", startingAt: 0))  \(count)\(kind)")
            }
        }

        print("Integrity: \(file.integrity)")
        if file.integrity != "ok" && file.integrity != StoreVerification.integrityOfTheServer { failed = true }
        for warning in file.bookkeepingWarnings { print("  \(warning)") }
        if failed { throw ExitCode(1) }
    }
}

/// What `inspect` reads from a store without a model, through a read-only connection.
struct StoreFile {
    var uuid: String?
    var metadata: [String: Any]
    var hashes: [String: Data]
    var historyTables: [String]
    var integrity: String
    var bookkeepingWarnings: [String]

    /// Reads the store: its metadata, integrity (an SQLite file's) and key bookkeeping.
    ///
    /// - Throws: what ``read(_:)-(URL)`` and `StoreTools.postgresSummary(of:)` throw.
    static func read(_ location: StoreLocation) throws -> StoreFile {
        guard case .postgres(let url) = location else { return try read(location.url) }
        let summary = try StoreTools.postgresSummary(of: url)
        return StoreFile(
            uuid: summary.uuid, metadata: summary.metadata, hashes: summary.versionHashes, historyTables: summary.historyTables,
            integrity: StoreVerification.integrityOfTheServer, bookkeepingWarnings: summary.bookkeepingWarnings)
    }

    /// Reads the SQLite store at `url`: its metadata, integrity and key bookkeeping.
    ///
    /// - Throws: ``CommandFailure`` naming the file when there is none, when it is not an SQLite
    ///   database or not a Core Data store, or when SQLite cannot read it.
    static func read(_ url: URL) throws -> StoreFile {
        guard FileManager.default.fileExists(atPath: url.path) else {
            throw CommandFailure("There is no file at \(url.path)")
        }
        do {
            return try readDatabase(url)
        } catch let error as DatabaseError where error.resultCode == .SQLITE_NOTADB {
            throw CommandFailure("\(url.path) is not an SQLite database")
        } catch let error as DatabaseError {
            throw CommandFailure("Cannot read \(url.path)", because: error)
        }
    }

    private static func readDatabase(_ url: URL) throws -> StoreFile {
        var configuration = Configuration()
        configuration.readonly = true
        let queue = try DatabaseQueue(path: url.path, configuration: configuration)
        defer { try? queue.close() }
        return try queue.read { db in
            guard try db.tableExists("Z_METADATA") else {
                throw CommandFailure("\(url.path) is not a Core Data store: it has no Z_METADATA table")
            }
            let row = try Row.fetchOne(db, sql: "SELECT Z_UUID, Z_PLIST FROM Z_METADATA ORDER BY Z_VERSION LIMIT 1")
            let plist: Data? = row?["Z_PLIST"]
            let metadata = plist.flatMap { try? PropertyListSerialization.propertyList(from: $0, options: [], format: nil) } as? [String: Any] ?? [:]
            let hashes = (metadata["NSStoreModelVersionHashes"] as? [String: Any] ?? [:]).compactMapValues { $0 as? Data }
            let history = try ["ATRANSACTION", "ACHANGE", "ATRANSACTIONSTRING"].filter { try db.tableExists($0) }
            let integrity = try String.fetchAll(db, sql: "PRAGMA integrity_check").joined(separator: "; ")
            // Core Data's key bookkeeping: a root entity's Z_MAX is at least its table's largest key.
            var warnings: [String] = []
            for entity in try Row.fetchAll(db, sql: "SELECT Z_NAME, Z_MAX FROM Z_PRIMARYKEY WHERE Z_SUPER = 0 AND Z_ENT < 16000") {
                let name: String = entity["Z_NAME"], max: Int64 = entity["Z_MAX"] ?? 0
                let table = "Z" + name.uppercased()
                guard try db.tableExists(table), max >= 0 else { continue }
                let largest = try Int64.fetchOne(db, sql: "SELECT MAX(Z_PK) FROM \"\(table)\"") ?? 0
                if largest > max { warnings.append("Z_PRIMARYKEY.Z_MAX of \(name) is \(max), below its largest key \(largest)") }
            }
            return StoreFile(
                uuid: row?["Z_UUID"], metadata: metadata, hashes: hashes, historyTables: history,
                integrity: integrity, bookkeepingWarnings: warnings)
        }
    }
}
