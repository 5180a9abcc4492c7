import Foundation
import Logging
import Testing
import ObjectGraph
@testable import ObjectGraphCore

/// A PostgreSQL store's tables: made whole in an empty schema (Core Data's layout with PostgreSQL's
/// types), found again by every later opener, kept apart per schema, and refused to another model.
@Suite("PostgreSQL store tables", .needsPostgreSQL)
struct PostgresStoreTablesTests {
    private func connect(_ url: URL) throws -> any PostgresDriver {
        try PostgresDrivers.factory().connect(url: url, maximumConnections: 4, logger: Logger(label: "test"))
    }

    /// TestModels.notes(), with a uniqueness constraint on Tag.name.
    private static func model() -> ManagedObjectModel { TestModels.notes(uniqueTagNames: true) }

    private func open(_ driver: any PostgresDriver, _ url: URL, _ model: ManagedObjectModel = Self.model()) throws -> [String: any Sendable] {
        try PostgresStoreTables.open(driver, schema: CoreDataLayout(model: model), schemaName: PostgresStoreTables.schemaName(in: url), location: url.absoluteString).metadata
    }

    private func strings(_ driver: any PostgresDriver, _ sql: String, _ parameters: [PostgresValue] = []) throws -> [String] {
        try driver.transaction(isolation: .readCommitted, readOnly: true) { try $0.query(sql, parameters) }.map { row in
            row.map { if case .text(let t) = $0 { t } else { "\($0)" } }.joined(separator: " ")
        }
    }

    @Test func anEmptySchemaGetsCoreDatasTablesWithPostgreSQLsTypes() throws {
        let url = try PostgresTestServer.shared.get().makeDatabase()
        let driver = try connect(url)
        defer { driver.close() }
        let metadata = try open(driver, url)
        let identifier = try #require(metadata[PersistentStore.metadataIdentifierKey] as? String)
        #expect(metadata[PersistentStore.metadataTypeKey] as? String == "PostgreSQL")
        #expect(metadata[PersistentStore.metadataModelHashKey] as? String == Self.model().versionHash)
        let model = Self.model()
        let schema = CoreDataLayout(model: model)
        let tables = try strings(driver, "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 1")
        guard case .joinTable(let join, _, _, _, _) = schema.storage(forToMany: model.entitiesByName["Note"]!.relationshipsByName["tags"]!) else {
            Issue.record("Note.tags has no join table")
            return
        }
        let expected = Set(["Z_METADATA", "Z_PRIMARYKEY", "Z_OGCHANGE", "Z_OGCHANGECOUNT", "Z_MODELCACHE", join] + model.entitiesByCode.map { schema.tableName(for: $0) })
        #expect(Set(tables) == expected)
        let note = schema.tableName(for: model.entitiesByName["Note"]!)
        let columns = try strings(
            driver, "SELECT column_name, data_type, coalesce(collation_name, '') FROM information_schema.columns WHERE table_name = $1 ORDER BY ordinal_position",
            [.text(note)])
        #expect(columns.prefix(3) == ["Z_PK bigint ", "Z_ENT bigint ", "Z_OPT bigint "])
        #expect(columns.contains("ZTITLE text C"))
        #expect(columns.contains("ZRANK bigint "))
        #expect(columns.contains("ZCREATED double precision "))
        #expect(columns.contains("ZFOLDER bigint "))
        // The uniqueness constraint is a unique index; Z_PRIMARYKEY has a row per entity.
        let indexes = try strings(driver, "SELECT indexdef FROM pg_indexes WHERE schemaname = 'public' AND indexname LIKE 'Z_Tag_UNIQUE%'")
        #expect(indexes.count == 1 && indexes[0].contains("UNIQUE") && indexes[0].contains("(\"ZNAME\")"), "\(indexes)")
        #expect(try strings(driver, "SELECT count(*) FROM \"Z_PRIMARYKEY\"") == ["\(PostgresValue.int(3))"])
        // Opened again (by another process, say), the store is found, not made again.
        let again = try connect(url)
        defer { again.close() }
        #expect(try open(again, url)[PersistentStore.metadataIdentifierKey] as? String == identifier)
    }

    @Test func eachSchemaIsAStoreOfItsOwn() throws {
        let server = try PostgresTestServer.shared.get()
        let base = try server.makeDatabase()
        let a = URL(string: base.absoluteString + "?schema=tenant_a")!, b = URL(string: base.absoluteString + "?schema=Tenant B")!
        let driver = try connect(base)
        defer { driver.close() }
        let first = try open(driver, a)[PersistentStore.metadataIdentifierKey] as? String
        let second = try open(driver, b)[PersistentStore.metadataIdentifierKey] as? String
        #expect(first != nil && second != nil && first != second)
        #expect(try strings(driver, "SELECT DISTINCT table_schema FROM information_schema.tables WHERE table_name = 'Z_METADATA' ORDER BY 1") == ["Tenant B", "tenant_a"])
        #expect(try strings(driver, "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'") == ["\(PostgresValue.int(0))"])
    }

    @Test func aStoreOfAnotherModelOrASchemaOfOtherTablesIsRefused() throws {
        let url = try PostgresTestServer.shared.get().makeDatabase()
        let driver = try connect(url)
        defer { driver.close() }
        _ = try open(driver, url)
        let other = ManagedObjectModel(entities: [EntityDescription(name: "Note", properties: [.attribute("title", .string)])])
        do {
            _ = try open(driver, url, other)
            Issue.record("opened with another model")
        } catch let error as ObjectGraphError {
            #expect(error.code == .incompatibleModel)
            #expect(error.message.contains("Folder") && error.message.contains("Note"), "\(error.message)")
        }
        let foreign = URL(string: url.absoluteString + "?schema=theirs")!
        try driver.transaction(isolation: .readCommitted, readOnly: false) { session in
            try session.execute("CREATE SCHEMA theirs", [])
            try session.execute("CREATE TABLE theirs.accounts (id bigint)", [])
        }
        do {
            _ = try open(driver, foreign)
            Issue.record("made a store among other tables")
        } catch let error as ObjectGraphError {
            #expect(error.code == .incompatibleModel)
            #expect(error.message.contains("accounts"), "\(error.message)")
        }
        // Nothing was added to their schema.
        #expect(try strings(driver, "SELECT table_name FROM information_schema.tables WHERE table_schema = 'theirs'") == ["accounts"])
    }

    @Test func processesOpeningAnEmptySchemaAtOnceGetOneStore() throws {
        let url = try PostgresTestServer.shared.get().makeDatabase()
        let drivers = try (0..<4).map { _ in try connect(url) }
        defer { drivers.forEach { $0.close() } }
        let identifiers = Protected<[String]>([])
        DispatchQueue.concurrentPerform(iterations: drivers.count) { i in
            do {
                let metadata = try open(drivers[i], url)
                identifiers.withLock { $0.append(metadata[PersistentStore.metadataIdentifierKey] as? String ?? "?") }
            } catch {
                Issue.record("opener \(i): \(error)")
            }
        }
        #expect(identifiers.withLock { Set($0).count } == 1)
        #expect(identifiers.withLock { $0.count } == drivers.count)
    }

    /// Every save takes the next number of the change log from its count, in commit order: saves
    /// of two coordinators at once get the numbers 1, 2, 3, … with none twice and none skipped. A
    /// store written before the count existed gets one at its next opening, starting at the
    /// log's last number.
    @Test func savesNumberTheChangeLogFromItsCountAndAnOlderStoreGetsOne() throws {
        let server = try PostgresTestServer.shared.get()
        let url = try server.makeDatabase()
        let coordinators = try (0..<2).map { _ in
            let coordinator = PersistentStoreCoordinator(managedObjectModel: TestModels.notes())
            try coordinator.addPersistentStore(type: .postgres, at: url)
            return coordinator
        }
        let savesEach = 12
        DispatchQueue.concurrentPerform(iterations: 4) { worker in
            let context = ManagedObjectContext(concurrencyType: .confinement)
            context.persistentStoreCoordinator = coordinators[worker % 2]
            for index in 0..<savesEach {
                context.insert("Folder", ["name": "w\(worker) f\(index)"])
                do { try context.save() } catch { Issue.record("worker \(worker), save \(index): \(error)") }
            }
        }
        func numbers() throws -> [String] {
            try server.psql("SELECT \"Z_TX\" FROM \"Z_OGCHANGE\" ORDER BY 1", database: url.lastPathComponent)
                .split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        }
        #expect(try numbers() == (1...(4 * savesEach)).map(String.init))

        // As a store written before the count: its count dropped, then opened again.
        _ = try server.psql("DROP TABLE \"Z_OGCHANGECOUNT\"", database: url.lastPathComponent)
        let later = PersistentStoreCoordinator(managedObjectModel: TestModels.notes())
        try later.addPersistentStore(type: .postgres, at: url)
        let context = ManagedObjectContext(concurrencyType: .confinement)
        context.persistentStoreCoordinator = later
        context.insert("Folder", ["name": "after"])
        try context.save()
        #expect(try numbers() == (1...(4 * savesEach + 1)).map(String.init))
    }

    @Test func anUnreachableServerIsAnIOErrorNamingIt() throws {
        do {
            _ = try connect(URL(string: "postgres://postgres@127.0.0.1:1/nothing")!)
            Issue.record("connected to port 1")
        } catch let error as PostgresDriverError {
            #expect(error.kind == .connection, "\(error)")
            let translated = PostgresStoreTables.translate(error, location: "postgres://127.0.0.1:1/nothing", while: "opening the store")
            #expect(translated.code == .io)
            #expect(translated.message.contains("127.0.0.1:1"))
        }
    }
}
