import Foundation
import Testing
import ObjectGraph
@testable import ObjectGraphCore

/// The store tools on a PostgreSQL store: what they read without a model, the layout's invariants,
/// the model the store records, and a migration by URL; then the `objectgraph` tool itself, which
/// opens `postgres://` URLs when built with the package's PostgreSQL trait and says how to build
/// it otherwise.
@Suite("Store tools on PostgreSQL", .needsPostgreSQL, .needsCoreDataFixtures)
struct PostgresStoreToolTests {
    static let sampleModelV1 = "coredataplus-samplemodel/SampleModel.xcdatamodeld/SampleModel.xcdatamodel"
    static let sampleModelV2 = "coredataplus-samplemodel/SampleModel.xcdatamodeld/SampleModel2.xcdatamodel"

    /// A PostgreSQL store in schema `cars` written with SampleModel V1: three people, two cars,
    /// two sport cars and two expensive ones, each car but one owned.
    static func sampleStore() throws -> URL {
        let url = try PostgresTestServer.shared.get().makeDatabase(schema: "cars")
        let model = try ManagedObjectModel(contentsOf: CoreDataFixtures.url(sampleModelV1))
        try Migrating.with(model, .postgres, at: url) { context in
            let people = (0..<3).map { index in
                let person = context.insertNewObject(forEntityName: "Person")
                person.setValue("Person \(index)", forKey: "firstName")
                person.setValue(UUID(), forKey: "id")
                person.setValue(Date(timeIntervalSince1970: 1_700_000_000 + Double(index)), forKey: "updatedAt")
                return person
            }
            for (index, entity) in ["Car", "Car", "SportCar", "SportCar", "ExpensiveSportCar", "ExpensiveSportCar"].enumerated() {
                let car = context.insertNewObject(forEntityName: entity)
                car.setValue("PLATE-\(index)", forKey: "numberPlate")
                car.setValue("Maker \(index % 2)", forKey: "maker")
                if index > 0 { car.setValue(people[index % 3], forKey: "owner") }
            }
        }
        return url
    }

    /// The tables of the database's schema `cars`, read straight from the server.
    static func tables(_ url: URL, schema: String = "cars") throws -> [String] {
        let name = url.path.dropFirst()
        return try PostgresTestServer.shared.get()
            .psql("SELECT table_name FROM information_schema.tables WHERE table_schema = '\(schema)' ORDER BY 1", database: String(name))
            .split(separator: "\n").map(String.init)
    }

    @Test("The summary reads the store's metadata and model without writing, and an empty schema stays empty")
    func summaryReadsWithoutWriting() throws {
        let url = try Self.sampleStore()
        let summary = try PostgresStore.summary(of: url)
        #expect(summary.schemaName == "cars")
        #expect(summary.uuid?.count == 36)
        let model = try ManagedObjectModel(contentsOf: CoreDataFixtures.url(Self.sampleModelV1))
        #expect(summary.versionHashes == model.entityVersionHashesByName)
        #expect(summary.bookkeepingWarnings.isEmpty)
        let cached = try ManagedObjectModel(contentsOfStoreAt: url)
        #expect(cached.entityVersionHashesByName == model.entityVersionHashesByName)

        var empty = URLComponents(url: url, resolvingAgainstBaseURL: false)!
        empty.queryItems = [URLQueryItem(name: "schema", value: "nothing_here")]
        let error = #expect(throws: ObjectGraphError.self) { try PostgresStore.summary(of: empty.url!) }
        #expect(error?.code == .notADatabase)
        #expect(error?.message.contains("no ObjectGraph store in schema nothing_here") == true, "\(String(describing: error))")
        #expect(throws: ObjectGraphError.self) { try ManagedObjectModel(contentsOfStoreAt: empty.url!) }
        #expect(try Self.tables(url, schema: "nothing_here").isEmpty)
    }

    @Test("verify finds a Z_MAX below a key, a to-one pointing at nothing and a version below 1, and nothing in a sound store")
    func verifyFindsBrokenInvariants() throws {
        let url = try Self.sampleStore()
        let model = try ManagedObjectModel(contentsOfStoreAt: url)
        let sound = try PostgresStore.verify(at: url, model: model)
        #expect(sound.isValid, "\(sound.problems)")
        #expect(sound.checks.count >= 6)
        #expect(sound.integrity == StoreVerification.integrityOfTheServer)

        let database = String(url.path.dropFirst())
        let server = try PostgresTestServer.shared.get()
        try server.psql(#"UPDATE cars."Z_PRIMARYKEY" SET "Z_MAX" = 1 WHERE "Z_NAME" = 'Car'"#, database: database)
        try server.psql(#"UPDATE cars."ZCAR" SET "ZOWNER" = 999 WHERE "Z_PK" = 2"#, database: database)
        try server.psql(#"UPDATE cars."ZPERSON" SET "Z_OPT" = 0 WHERE "Z_PK" = 1"#, database: database)
        let broken = try PostgresStore.verify(at: url, model: model)
        #expect(!broken.isValid)
        let found = Set(broken.problems.map { "\($0.check) \($0.table) \($0.rows)" })
        #expect(found == ["keys ZCAR 5", "to-one ZCAR 1", "versions ZPERSON 1"], "\(broken.problems)")
        #expect(try PostgresStore.summary(of: url).bookkeepingWarnings == ["Z_PRIMARYKEY.Z_MAX of Car is 1, below its largest key 6"])
    }

    @Test("A migration plan and a migration by URL use the model the store records")
    func migrationByURL() throws {
        let url = try Self.sampleStore()
        let v2 = try ManagedObjectModel(contentsOf: CoreDataFixtures.url(Self.sampleModelV2))
        let plan = try PersistentStoreCoordinator.migrationPlan(forStoreAt: url, type: .postgres, to: v2)
        #expect(plan.steps.count == 1)
        #expect(plan.description.contains("LuxuryCar: renamed from ExpensiveSportCar"), "\(plan.description)")
        #expect(try Self.tables(url).contains("ZCAR"))

        var steps: [Int] = []
        try PersistentStoreCoordinator.migrateStore(at: url, type: .postgres, to: v2, options: nil) { steps.append($0.completed) }
        #expect(steps == [0, 1])
        #expect(try PostgresStore.summary(of: url).versionHashes == v2.entityVersionHashesByName)
        let luxury = try Migrating.value(v2, .postgres, at: url) { context in try Migrating.fetch("LuxuryCar", in: context).count }
        #expect(luxury == 2)
        #expect(try PersistentStoreCoordinator.migrationPlan(forStoreAt: url, type: .postgres, to: v2).steps.isEmpty)
    }

    #if PostgreSQL
    @Test("The tool inspects, exports, verifies and migrates a store by its postgres:// URL")
    func theToolTakesAPostgresURL() throws {
        let url = try Self.sampleStore()
        let inspect = try ToolProcess(["inspect", url.absoluteString])
        #expect(inspect.wait().status == 0, "\(inspect.errors)")
        for text in ["Store: \(url.absoluteString)", "Type: PostgreSQL", "Written by: ObjectGraph", "Version hashes match the store: yes",
                     "Car                2", "ExpensiveSportCar  2", "Person             3", "Integrity: \(StoreVerification.integrityOfTheServer)"] {
            #expect(inspect.output.contains(text), "\(text) in:\n\(inspect.output)")
        }

        let export = try ToolProcess(["export", url.absoluteString])
        #expect(export.wait().status == 0, "\(export.errors)")
        let objects = try JSONSerialization.jsonObject(with: Data(export.output.utf8)) as? [[String: Any]]
        #expect(objects?.count == 9)
        #expect(Set(objects?.compactMap { $0["entity"] as? String } ?? []) == ["Car", "SportCar", "ExpensiveSportCar", "Person"])

        let verify = try ToolProcess(["verify", url.absoluteString, "--json"])
        #expect(verify.wait().status == 0, "\(verify.errors)")
        let verification = try JSONDecoder().decode(StoreVerification.self, from: Data(verify.output.utf8))
        #expect(verification.isValid && verification.checks.count >= 6, "\(verify.output)")

        let model = try CoreDataFixtures.url(Self.sampleModelV2)
        let dry = try ToolProcess(["migrate", url.absoluteString, "--model", model.path, "--dry-run"])
        #expect(dry.wait().status == 0, "\(dry.errors)")
        #expect(dry.output.contains("LuxuryCar: renamed from ExpensiveSportCar"), "\(dry.output)")
        #expect(try PostgresStore.summary(of: url).versionHashes != (try ManagedObjectModel(contentsOf: model)).entityVersionHashesByName)
        let run = try ToolProcess(["migrate", url.absoluteString, "--model", model.path])
        #expect(run.wait().status == 0, "\(run.errors)")
        for text in ["Car: 2 → 2", "ExpensiveSportCar: 2 → -", "LuxuryCar: - → 2", "Person: 3 → 3"] {
            #expect(run.output.contains(text), "\(text) in:\n\(run.output)")
        }

        let vacuum = try ToolProcess(["vacuum", url.absoluteString])
        #expect(vacuum.wait().status == 1)
        #expect(vacuum.errors.hasPrefix("Error: vacuum works on SQLite store files"), "\(vacuum.errors)")
    }

    @Test("The tool reports a schema without a store, naming it, and creates nothing there")
    func theToolReportsAMissingStore() throws {
        let url = try PostgresTestServer.shared.get().makeDatabase(schema: "empty")
        for command in ["inspect", "export", "verify"] {
            let run = try ToolProcess([command, url.absoluteString])
            #expect(run.wait().status == 1, "\(command)")
            #expect(run.output == "" || command == "inspect")
            #expect(run.errors.contains("There is no ObjectGraph store in schema empty of \(url.absoluteString)"), "\(command): \(run.errors)")
        }
        #expect(try Self.tables(url, schema: "empty").isEmpty)
    }
    #else
    @Test("The tool built without the PostgreSQL trait says how to build it for a postgres:// URL")
    func theToolSaysHowToBuildItWithPostgreSQL() throws {
        for command in ["inspect", "export", "verify"] {
            let run = try ToolProcess([command, "postgres://postgres@127.0.0.1:5432/notes"])
            #expect(run.wait().status == 1)
            #expect(run.output == "")
            #expect(run.errors == "Error: \(Self.builtWithoutPostgreSQL)\n", "\(command): \(run.errors)")
        }
    }

    /// The message `StoreLocation` in the tool gives.
    static let builtWithoutPostgreSQL = """
        this objectgraph was built without PostgreSQL; build it with the package's PostgreSQL trait to open postgres:// stores: \
        swift run -c release --traits PostgreSQL objectgraph <command> postgres://…
        """
    #endif
}
