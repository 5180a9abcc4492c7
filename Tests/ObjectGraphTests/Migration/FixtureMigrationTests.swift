import Foundation
import GRDB
import Testing
import ObjectGraph
@testable import ObjectGraphCore

/// Stores Apple's Core Data wrote, migrated (on copies) to the newest version of their app's model.
@Suite("Migrating Core Data's stores", .needsCoreDataFixtures)
struct FixtureMigrationTests {
    /// The fixtures whose `.xcdatamodeld` holds a chain of versions, the versions in the order the app shipped them.
    static let chains: [String: [String]] = [
        "bergier-rename-chain": ["v1.0.0", "v1.1.0", "v1.1.2", "v1.2.0", "v2.0.0"],
        "wibosco-migration-revised": ["CoreDataMigration_Example", "CoreDataMigration_Example 2", "CoreDataMigration_Example 3", "CoreDataMigration_Example 4"],
        "wibosco-migration-wal": ["CoreDataMigration_Example", "CoreDataMigration_Example 2", "CoreDataMigration_Example 3", "CoreDataMigration_Example 4"],
        "coredataplus-samplemodel": ["SampleModel", "SampleModel2", "SampleModel3"],
        "artsy-folio": ["ArtsyPartner", "ArtsyPartner 2", "ArtsyPartner 3", "ArtsyPartner 4", "ArtsyPartner 5",
                        "ArtsyFolio v1.4", "ArtsyFolio v1.5", "ArtsyFolio v1.7", "ArtsyFolio v2.0", "ArtsyFolio v2.1", "ArtsyFolio v2.2",
                        "ArtsyFolio v2.3", "ArtsyFolio v2.4", "ArtsyFolio v2.5", "ArtsyFolio v2.5.1", "ArtsyFolio v2.5.3",
                        "ArtsyFolio v2.6.0", "ArtsyFolio v2.6.1", "ArtsyFolio v2.7.0"],
    ]

    static func models(_ fixture: String) throws -> [ManagedObjectModel] {
        let root = try CoreDataFixtures.url(fixture)
        let bundle = try #require(try CoreDataFixtures.contents(of: root).first { $0.hasSuffix(".xcdatamodeld") })
        return try chains[fixture]!.map { version in
            let model = try ManagedObjectModel(contentsOf: root.appendingPathComponent(bundle).appendingPathComponent(version + ".xcdatamodel"))
            model.versionIdentifiers = [version]
            return model
        }
    }

    /// Rows per entity (sub-entities counted with their super-entity), read with `model`.
    static func counts(_ url: URL, model: ManagedObjectModel, options: [String: any Sendable]? = nil) throws -> [String: Int] {
        var counts: [String: Int] = [:]
        try Migrating.with(model, .sqlite, at: url, options: options) { (context: ManagedObjectContext) throws in
            for entity in model.entities { counts[entity.name] = try context.count(for: FetchRequest<ManagedObject>(entityName: entity.name)) }
        }
        return counts
    }

    /// Changes of the chains that are not inferred: Artsy's `Album.cover` went from `Artwork` to
    /// `Image` (Core Data's inferred mapping cannot map it either; the app shipped a mapping model).
    static func isInferable(_ model: ManagedObjectModel) -> Bool {
        model.entitiesByName["Album"]?.relationshipsByName["cover"]?.destinationEntityName != "Image"
    }

    @Test(arguments: chains.keys.sorted())
    func everyStoreOfAChainOpensWithTheNewestModelAndKeepsItsRows(_ fixture: String) throws {
        let models = try Self.models(fixture)
        let stores = try CoreDataFixtures.stores().filter { $0.fixture == fixture }.map(\.store)
        #expect(!stores.isEmpty)
        for store in stores {
            let copy = try CoreDataFixtures.copyOfStore(store)
            defer { try? FileManager.default.removeItem(at: copy.deletingLastPathComponent()) }
            let hashes = try CoreDataFixtures.versionHashes(ofStore: store)
            let start = try #require(models.firstIndex { $0.entityVersionHashesByName == hashes }, "\(store.lastPathComponent) matches a version")
            var chain = Array(models[start...])
            if Self.isInferable(chain[0]) && !chain.allSatisfy(Self.isInferable) {
                // The chain crosses a change that is not inferred: refused, naming it, the store left as it was…
                Migrating.expectRefusal(.migration, at: copy, mentioning: ["Album.cover", "destination changed from Artwork to Image"]) {
                    try Migrating.with(models.last!, .sqlite, at: copy, options: Migrating.staged(StagedMigrationManager([LightweightMigrationStage(models)]))) { _ in }
                }
                // … and the store migrates to the newest version before that change.
                chain = Array(chain.prefix(while: Self.isInferable))
            }
            let newest = chain.last!
            let before = try Self.counts(copy, model: models[start], options: [PersistentStoreOption.readOnly: true])
            let options = Migrating.staged(StagedMigrationManager([LightweightMigrationStage(models)]))
            let after: [String: Int]
            do {
                after = try Self.counts(copy, model: newest, options: options)
            } catch {
                Issue.record("\(fixture)/\(store.lastPathComponent): \(error)")
                continue
            }
            // Every entity both versions have keeps its rows (renamed ones are checked by the chains' own tests).
            let common = Set(before.keys).intersection(after.keys)
            #expect(!common.isEmpty)
            for name in common.sorted() {
                #expect(after[name] == before[name], "\(fixture)/\(store.lastPathComponent): \(name) had \(before[name]!) rows, has \(after[name] ?? -1)")
            }
            // And opens again without migrating.
            #expect(try Self.counts(copy, model: newest) == after)
        }
    }

    @Test func theRenamedAttributeOfTheBergierChainKeepsItsValueThroughEveryVersion() throws {
        let models = try Self.models("bergier-rename-chain")
        let store = try CoreDataFixtures.url("bergier-rename-chain/stores/Example_v1.0.0.sqlite")
        let copy = try CoreDataFixtures.copyOfStore(store)
        defer { try? FileManager.default.removeItem(at: copy.deletingLastPathComponent()) }
        let newest = models.last!
        try Migrating.with(newest, .sqlite, at: copy, options: Migrating.staged(StagedMigrationManager([LightweightMigrationStage(models)]))) {
            (context: ManagedObjectContext) throws in
            var values: [String] = []
            for entity in newest.entities {
                for object in try context.fetch(FetchRequest<ManagedObject>(entityName: entity.name)) {
                    for attribute in entity.attributesByName.keys { if let text = object.value(forKey: attribute) as? String { values.append(text) } }
                }
            }
            #expect(values.contains("A Known Value"), "\(values)")
        }
    }

    @Test func appleStoresMigrateWithTheModelTheyKeepWhenTheAppGivesOnlyTheNewest() throws {
        // SampleModel_V1 keeps its model in Z_MODELCACHE: the two options are enough, as in Core Data.
        let models = try Self.models("coredataplus-samplemodel")
        let store = try CoreDataFixtures.url("coredataplus-samplemodel/stores/SampleModel_V1.sqlite")
        let copy = try CoreDataFixtures.copyOfStore(store)
        defer { try? FileManager.default.removeItem(at: copy.deletingLastPathComponent()) }
        let before = try Self.counts(copy, model: models[0], options: [PersistentStoreOption.readOnly: true])
        let plan = try PersistentStoreCoordinator.migrationPlan(forStoreAt: copy, type: .sqlite, to: models[1])
        #expect(plan.steps.count == 1)
        #expect(plan.steps[0].description.contains("LuxuryCar: renamed from ExpensiveSportCar"), "\(plan.steps[0].description)")
        let after = try Self.counts(copy, model: models[1], options: Migrating.automatic)
        #expect(after["Car"] == before["Car"] && after["Person"] == before["Person"])
        #expect(after["LuxuryCar"] == before["ExpensiveSportCar"])
    }

    @Test func ourMigrationOfSampleModelV1EqualsApplesObjectForObject() throws {
        let models = try Self.models("coredataplus-samplemodel")
        let mine = try CoreDataFixtures.copyOfStore(try CoreDataFixtures.url("coredataplus-samplemodel/stores/SampleModel_V1.sqlite"))
        let apple = try CoreDataFixtures.copyOfStore(try CoreDataFixtures.url("coredataplus-samplemodel/stores/SampleModel_V2.sqlite"))
        defer {
            try? FileManager.default.removeItem(at: mine.deletingLastPathComponent())
            try? FileManager.default.removeItem(at: apple.deletingLastPathComponent())
        }
        func dump(_ url: URL, options: [String: any Sendable]?) throws -> [String] {
            var lines: [String] = []
            let model = models[1]
            try Migrating.with(model, .sqlite, at: url, options: options) { (context: ManagedObjectContext) throws in
                for entity in model.entitiesByCode {
                    let request = FetchRequest<ManagedObject>(entityName: entity.name)
                    request.includesSubentities = false
                    for object in try context.fetch(request) {
                        var fields = ["\(entity.name) p\(object.objectID.primaryKey ?? -1)"]
                        for name in entity.propertiesByName.keys.sorted() {
                            let value = object.value(forKey: name)
                            switch value {
                            case let set as Set<ManagedObject>: fields.append("\(name)=\(set.compactMap { $0.objectID.primaryKey }.sorted())")
                            case let related as ManagedObject: fields.append("\(name)=p\(related.objectID.primaryKey ?? -1)")
                            case let data as Data: fields.append("\(name)=\(data.count)B")
                            case nil: fields.append("\(name)=nil")
                            default: fields.append("\(name)=\(value!)")
                            }
                        }
                        lines.append(fields.joined(separator: " "))
                    }
                }
            }
            return lines.sorted()
        }
        let ours = try dump(mine, options: Migrating.automatic)
        let theirs = try dump(apple, options: [PersistentStoreOption.readOnly: true])
        #expect(ours.count == theirs.count)
        #expect(ours.count > 100)
        for (a, b) in zip(ours, theirs) where a != b {
            Issue.record("ours: \(a)\nApple's: \(b)")
            break
        }
    }
}

/// A custom stage on a store whose data is only in its WAL: the WAL is folded in before the copy.
@Suite("Migrating Core Data's stores with custom stages", .needsCoreDataFixtures)
struct FixtureCustomStageTests {
    @Test func aCustomStageOnAStoreWhoseDataIsInItsWALKeepsTheData() throws {
        let versions = try FixtureMigrationTests.models("wibosco-migration-wal")
        let store = try CoreDataFixtures.url("wibosco-migration-wal/stores/CoreDataMigration_Example_WAL.sqlite")
        let copy = try CoreDataFixtures.copyOfStore(store)
        defer { try? FileManager.default.removeItem(at: copy.deletingLastPathComponent()) }
        let hashes = try CoreDataFixtures.versionHashes(ofStore: store)
        let start = try #require(versions.firstIndex { $0.entityVersionHashesByName == hashes })
        // The store is at the newest version: the next one adds an attribute to every entity.
        let next = ManagedObjectModel(entities: versions[start].entities.map { entity in
            EntityDescription(
                name: entity.name, superentity: entity.superentityName, isAbstract: entity.isAbstract,
                properties: entity.declaredProperties.map { $0.copy() } + [.attribute("migrationNote", .string, defaultValue: "staged")],
                uniquenessConstraints: entity.uniquenessConstraints, indexes: entity.indexes)
        })
        let models = Array(versions[...start]) + [next]
        let before = try FixtureMigrationTests.counts(copy, model: models[start], options: [PersistentStoreOption.readOnly: true])
        #expect(before.values.reduce(0, +) > 0)
        let seen = Protected<[Int]>([])
        let stage = CustomMigrationStage(
            migratingFrom: models[start], to: models[start + 1],
            willMigrate: { context in
                let counts = try models[start].entities.map { try context.count(for: FetchRequest<ManagedObject>(entityName: $0.name)) }
                seen.withLock { $0.append(counts.reduce(0, +)) }
            })
        let after = try FixtureMigrationTests.counts(copy, model: models[start + 1], options: Migrating.staged(StagedMigrationManager([stage])))
        #expect(seen.withLock { $0 } == [before.values.reduce(0, +)], "willMigrate saw the rows of the WAL")
        for name in Set(before.keys).intersection(after.keys) { #expect(after[name] == before[name], "\(name)") }
        #expect(!FileManager.default.fileExists(atPath: copy.path + "-wal") || ((try? Data(contentsOf: URL(fileURLWithPath: copy.path + "-wal")))?.isEmpty ?? true))
    }
}
