import Foundation
import GRDB
import Testing

import ObjectGraph
@testable import ObjectGraphCore

/// Stores written by Apple's Core Data (shared/coredata-fixtures), each opened on a copy with the
/// model version that wrote it: what ObjectGraph reads must be what the raw tables hold, and what
/// it saves must carry Core Data's bookkeeping.
@Suite("Apple's Core Data stores: open, read, save", .needsCoreDataFixtures)
struct CoreDataStoreTests {
    @Test("every fixture store opens with the model that wrote it and counts each entity as its table does")
    func countsEqualTheRawTables() throws {
        var opened = 0
        for (fixture, url) in try CoreDataFixtures.stores() {
            let store = try CoreDataFixtures.open(url, fixture: fixture)
            defer { store.remove() }
            let numbers = try store.raw(CoreDataFixtures.entityNumbers)
            let context = store.context()
            for entity in store.model.entities {
                let request = FetchRequest<ManagedObject>(entityName: entity.name)
                request.includesSubentities = false
                let table = "Z" + entity.rootEntity.name.uppercased()
                // Z_PRIMARYKEY keeps the name an entity had before a migration renamed it.
                let raw = try store.raw { db in
                    try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM \(table) WHERE Z_ENT = ?", arguments: [numbers[entity.name] ?? entity.renamingIdentifier.flatMap { numbers[$0] }])
                }
                #expect(try context.count(for: request) == raw, "\(fixture)/\(url.lastPathComponent) \(entity.name)")
            }
            opened += 1
        }
        #expect(opened == 24)
    }

    @Test("every object's attributes and to-one relationships, and to-manys through foreign keys, read back as the raw rows hold them")
    func valuesEqualTheRawRows() throws {
        var values = 0
        for (fixture, url) in try CoreDataFixtures.stores() {
            var toManyChecks: [String: Int] = [:]
            let store = try CoreDataFixtures.open(url, fixture: fixture, readOnly: true)
            defer { store.remove() }
            let context = store.context()
            for root in store.model.entities where root.superentity == nil {
                let table = "Z" + root.name.uppercased()
                let request = FetchRequest<ManagedObject>(entityName: root.name)
                request.sortDescriptors = []
                let objects = try context.fetch(request).sorted { $0.objectID.primaryKey! < $1.objectID.primaryKey! }
                let rows = try store.raw { try Row.fetchAll($0, sql: "SELECT * FROM \(table) ORDER BY Z_PK") }
                #expect(objects.count == rows.count, "\(fixture) \(root.name)")
                for (object, row) in zip(objects, rows) {
                    #expect(object.objectID.primaryKey == row["Z_PK"], "\(fixture) \(root.name)")
                    for attribute in object.entity.attributes where !attribute.isTransient && attribute.attributeType != .transformable {
                        let column = "Z" + attribute.name.uppercased()
                        let stored = Value(databaseValue: row[column] ?? .null, type: attribute.attributeType)
                        let read = Value.converting(object.value(forKey: attribute.name), to: attribute.attributeType, valueType: nil) ?? .null
                        #expect(read == stored || (read.isNaN && stored.isNaN), "\(fixture) \(root.name).\(attribute.name) of \(row["Z_PK"] as Int64)")
                        values += 1
                    }
                    for relationship in object.entity.relationships where !relationship.isToMany {
                        let destination = object.value(forKey: relationship.name) as? ManagedObject
                        let key: Int64? = row["Z" + relationship.name.uppercased()]
                        #expect(destination?.objectID.primaryKey == key, "\(fixture) \(root.name).\(relationship.name)")
                    }
                    // To-many relationships read through their inverse's foreign key (the first objects of each table).
                    guard toManyChecks[root.name, default: 0] < 40 else { continue }
                    toManyChecks[root.name, default: 0] += 1
                    for relationship in object.entity.relationships where relationship.isToMany {
                        guard let inverse = relationship.inverseRelationship, !inverse.isToMany,
                              let destination = relationship.destinationEntity else { continue }
                        let members = (object.value(forKey: relationship.name) as? Set<ManagedObject>).map { Set($0.map { $0.objectID.primaryKey! }) }
                            ?? Set(((object.value(forKey: relationship.name) as? [ManagedObject]) ?? []).map { $0.objectID.primaryKey! })
                        let keys = try store.raw { db in
                            try Int64.fetchAll(
                                db, sql: "SELECT Z_PK FROM Z\(destination.rootEntity.name.uppercased()) WHERE Z\(inverse.name.uppercased()) = ?",
                                arguments: [object.objectID.primaryKey])
                        }
                        #expect(members == Set(keys), "\(fixture) \(root.name).\(relationship.name)")
                    }
                }
            }
        }
        #expect(values > 50_000)
    }

    @Test("sample values: text, dates, decimals, UUIDs, data and a renamed attribute")
    func sampleValues() throws {
        for version in ["v1.0.0", "v1.1.0", "v1.1.2", "v1.2.0", "v2.0.0"] {
            let url = try CoreDataFixtures.url("bergier-rename-chain/stores/Example_\(version).sqlite")
            let store = try CoreDataFixtures.open(url, fixture: "bergier-rename-chain", readOnly: true)
            defer { store.remove() }
            let object = try #require(try store.context().all("BasicEntity").first)
            let name = "\(version.replacingOccurrences(of: ".", with: "_"))_name"
            #expect(object.value(forKey: name) as? String == "A Known Value", "\(version)")
        }
        let url = try CoreDataFixtures.url("coredataplus-samplemodel2-storeonly/stores/SampleModel2_V2.sqlite")
        let store = try CoreDataFixtures.open(url, fixture: "coredataplus-samplemodel2-storeonly")
        defer { store.remove() }
        let books = try store.context().all("Book")
        let book = try #require(books.first { $0.value(forKey: "title") as? String == "title 1 - author 1" })
        #expect(book.value(forKey: "price") as? Decimal == Decimal(string: "10.11"))
        #expect(book.value(forKey: "uniqueID") as? UUID == UUID(uuidString: "AE289A08-EC9E-49D5-A96B-CBDFD53D451F"))
        #expect(book.value(forKey: "publishedAt") as? Date == Date(timeIntervalSinceReferenceDate: 737057651.661061))
        let novel = try #require(books.first { $0.entity.name == "GraphicNovel" })
        #expect(novel.value(forKey: "isBlackAndWhite") as? Bool == true)
        #expect((novel.value(forKey: "pages") as? Set<ManagedObject>)?.count == 19)
    }

    @Test("relationships: many-to-many through Core Data's join tables, to-ones to sub-entities through Z<n>_ columns")
    func relationshipTraversal() throws {
        let url = try CoreDataFixtures.url("artsy-folio/stores/oss_stubbed_data.sqlite")
        let store = try CoreDataFixtures.open(url, fixture: "artsy-folio", readOnly: true)
        defer { store.remove() }
        let context = store.context()
        for album in try context.all("Album") {
            let pk = album.objectID.primaryKey!
            let artists = try store.raw { try Int64.fetchAll($0, sql: "SELECT Z_2ARTISTS FROM Z_1ARTISTS WHERE Z_1ALBUMSFEATURINGARTIST = ?", arguments: [pk]) }
            #expect(Set(((album.value(forKey: "artists") as? Set<ManagedObject>) ?? []).map { $0.objectID.primaryKey! }) == Set(artists))
            let artworks = try store.raw { try Int64.fetchAll($0, sql: "SELECT Z_3ARTWORKS FROM Z_1ARTWORKS WHERE Z_1COLLECTIONS = ?", arguments: [pk]) }
            #expect(Set(((album.value(forKey: "artworks") as? Set<ManagedObject>) ?? []).map { $0.objectID.primaryKey! }) == Set(artworks))
        }
        var covers = 0
        for show in try context.all("Show") {
            let raw = try store.raw { try Row.fetchOne($0, sql: "SELECT ZCOVER, Z7_COVER FROM ZSHOW WHERE Z_PK = ?", arguments: [show.objectID.primaryKey!]) }
            guard let number: Int = raw?["Z7_COVER"] else { continue }
            let cover = try #require(show.value(forKey: "cover") as? ManagedObject)
            let numbers = try store.raw(CoreDataFixtures.entityNumbers)
            #expect(numbers[cover.entity.name] == number)
            #expect(cover.objectID.primaryKey == raw?["ZCOVER"])
            covers += 1
        }
        #expect(covers > 0)
    }

    @Test("a store whose data is only in its -wal reads it all")
    func walOnlyStore() throws {
        let url = try CoreDataFixtures.url("wibosco-migration-wal/stores/CoreDataMigration_Example_WAL.sqlite")
        let store = try CoreDataFixtures.open(url, fixture: "wibosco-migration-wal", readOnly: true)
        defer { store.remove() }
        let posts = try store.context().all("Post")
        let raw = try store.raw { try Int.fetchOne($0, sql: "SELECT COUNT(*) FROM ZPOST") }
        #expect(posts.count == raw)
        #expect(posts.count > 0)
    }

    @Test("a store whose model is only in Z_MODELCACHE opens with the model read from it; its history tables make it read-only")
    func modelCacheOnlyStore() throws {
        let url = try CoreDataFixtures.url("coredataplus-samplemodel2-storeonly/stores/SampleModel2_V2.sqlite")
        let copy = try CoreDataFixtures.copyOfStore(url)
        defer { try? FileManager.default.removeItem(at: copy.deletingLastPathComponent()) }
        let model = try ManagedObjectModel(contentsOfStoreAt: copy)
        #expect(model.entityVersionHashesByName == (try CoreDataFixtures.versionHashes(ofStore: url)))
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        let error = try #require(throws: ObjectGraphError.self) { try coordinator.addPersistentStore(type: .sqlite, at: copy) }
        #expect(error.code == .readOnly)
        #expect(error.message.contains("ATRANSACTION") && error.message.contains(PersistentStoreOption.persistentHistoryTracking) && error.message.contains("read-only"))
        let store = try coordinator.addPersistentStore(type: .sqlite, at: copy, options: [PersistentStoreOption.readOnly: true])
        let context = ManagedObjectContext(concurrencyType: .confinement)
        context.persistentStoreCoordinator = coordinator
        #expect(try context.all("Book").count == 3)
        #expect(store.metadata["NSStoreUUID"] as? String != nil)
        // A store without a cached model says so.
        let old = try CoreDataFixtures.copyOfStore(try CoreDataFixtures.url("artsy-folio/stores/ArtsyPartner_1.4.sqlite"))
        defer { try? FileManager.default.removeItem(at: old.deletingLastPathComponent()) }
        let missing = try #require(throws: ObjectGraphError.self) { try ManagedObjectModel(contentsOfStoreAt: old) }
        #expect(missing.code == .invalidModel && missing.message.contains("Z_MODELCACHE"))
    }

    @Test("a store opened with another model version is refused, naming the entities that differ")
    func anotherVersionIsRefused() throws {
        let url = try CoreDataFixtures.url("coredataplus-samplemodel3/stores/SampleModel3_V1.sqlite")
        let copy = try CoreDataFixtures.copyOfStore(url)
        defer { try? FileManager.default.removeItem(at: copy.deletingLastPathComponent()) }
        let other = try ManagedObjectModel(
            contentsOf: CoreDataFixtures.url("coredataplus-samplemodel3/SampleModel3.xcdatamodeld/SampleModel3_v2.xcdatamodel"))
        let error = try #require(throws: ObjectGraphError.self) {
            try PersistentStoreCoordinator(managedObjectModel: other).addPersistentStore(type: .sqlite, at: copy)
        }
        #expect(error.code == .incompatibleModel && error.message.contains("User"))
    }
}
