import Foundation
import GRDB
import Testing

import ObjectGraph
@testable import ObjectGraphCore

/// Saving to Apple's stores with Core Data's bookkeeping, and the layout of the stores ObjectGraph
/// creates compared with Apple's for the same model.
@Suite("Core Data's SQLite layout: saves and new stores", .needsCoreDataFixtures)
struct CoreDataStoreLayoutTests {
    @Test("inserts, updates and deletes save to Apple's store with Z_MAX, Z_OPT and join rows, and the store reopens")
    func saveKeepsCoreDataBookkeeping() throws {
        let url = try CoreDataFixtures.url("artsy-folio/stores/ArtsyPartner_1.4.sqlite")
        let store = try CoreDataFixtures.open(url, fixture: "artsy-folio")
        defer { store.remove() }
        let before = try store.raw { db in
            (maxArtist: try Int64.fetchOne(db, sql: "SELECT Z_MAX FROM Z_PRIMARYKEY WHERE Z_NAME = 'Artist'"),
             artists: try Int64.fetchOne(db, sql: "SELECT MAX(Z_PK) FROM ZARTIST") ?? 0,
             users: try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM ZUSER") ?? 0)
        }
        #expect(before.maxArtist == -1)  // as Core Data left it
        let context = store.context()
        let album = try #require(try context.all("Album", sortedBy: "name").first)
        let albumKey = try #require(album.objectID.primaryKey)
        let albumVersion = try store.raw { try Int64.fetchOne($0, sql: "SELECT Z_OPT FROM ZALBUM WHERE Z_PK = ?", arguments: [albumKey]) }
        let artist = context.insert("Artist", ["name": "ObjectGraph", "slug": "objectgraph", "createdAt": Date(timeIntervalSinceReferenceDate: 7.5)])
        var artists = (album.value(forKey: "artists") as? Set<ManagedObject>) ?? []
        artists.insert(artist)
        album.setValue(artists, forKey: "artists")
        album.setValue("Renamed by ObjectGraph", forKey: "name")
        let user = try #require(try context.all("User").first)
        let userKey = try #require(user.objectID.primaryKey)
        context.delete(user)
        try context.save()

        let artistKey = try #require(artist.objectID.primaryKey)
        #expect(artistKey == before.artists + 1)
        try store.raw { db in
            #expect(try Int64.fetchOne(db, sql: "SELECT Z_MAX FROM Z_PRIMARYKEY WHERE Z_NAME = 'Artist'") == artistKey)
            let row = try #require(try Row.fetchOne(db, sql: "SELECT Z_ENT, Z_OPT, ZNAME, ZCREATEDAT FROM ZARTIST WHERE Z_PK = ?", arguments: [artistKey]))
            #expect(row["Z_ENT"] as Int64 == 2 && row["Z_OPT"] as Int64 == 1 && row["ZNAME"] as String == "ObjectGraph")
            #expect(row["ZCREATEDAT"] as Double == 7.5)
            #expect(try Int64.fetchOne(db, sql: "SELECT Z_OPT FROM ZALBUM WHERE Z_PK = ?", arguments: [albumKey]) == albumVersion.map { $0 + 1 })
            #expect(try String.fetchOne(db, sql: "SELECT ZNAME FROM ZALBUM WHERE Z_PK = ?", arguments: [albumKey]) == "Renamed by ObjectGraph")
            #expect(try Int.fetchOne(
                db, sql: "SELECT COUNT(*) FROM Z_1ARTISTS WHERE Z_1ALBUMSFEATURINGARTIST = ? AND Z_2ARTISTS = ?", arguments: [albumKey, artistKey]) == 1)
            #expect(try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM ZUSER WHERE Z_PK = ?", arguments: [userKey]) == 0)
            #expect(try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM ZUSER") == before.users - 1)
            #expect(try String.fetchOne(db, sql: "PRAGMA integrity_check") == "ok")
        }

        // Reopened by another coordinator, the saved graph reads back.
        try store.coordinator.removePersistentStore(store.store)
        let coordinator = PersistentStoreCoordinator(managedObjectModel: store.model)
        try coordinator.addPersistentStore(type: .sqlite, at: store.copy)
        let reader = ManagedObjectContext(concurrencyType: .confinement)
        reader.persistentStoreCoordinator = coordinator
        let request = FetchRequest<ManagedObject>(entityName: "Artist")
        request.predicate = FetchPredicate(format: "name == 'ObjectGraph'")
        let saved = try #require(try reader.fetch(request).first)
        let albums = try #require(saved.value(forKey: "albumsFeaturingArtist") as? Set<ManagedObject>)
        #expect(albums.map { $0.value(forKey: "name") as? String } == ["Renamed by ObjectGraph"])
        // A second insert continues from Z_MAX.
        _ = reader.insert("Artist", ["name": "Second"])
        try reader.save()
        let maxKey = try DatabaseQueue(path: store.copy.path).read { try Int64.fetchOne($0, sql: "SELECT Z_MAX FROM Z_PRIMARYKEY WHERE Z_NAME = 'Artist'") }
        #expect(maxKey == artistKey + 1)
    }

    @Test("a duplicate refused by a UNIQUE index Core Data created is a constraint conflict, and nothing is written")
    func uniqueIndexesReportConstraintConflicts() throws {
        let url = try CoreDataFixtures.url("coredataplus-samplemodel/stores/SampleModel_V1.sqlite")
        let store = try CoreDataFixtures.open(url, fixture: "coredataplus-samplemodel")
        defer { store.remove() }
        let context = store.context()
        let plate = try #require(try store.raw { try String.fetchOne($0, sql: "SELECT ZNUMBERPLATE FROM ZCAR WHERE Z_ENT = 1 LIMIT 1") })
        let before = try store.raw { try Int.fetchOne($0, sql: "SELECT COUNT(*) FROM ZCAR") }
        _ = context.insert("Person", ["firstName": "Ada", "lastName": "ObjectGraph", "id": UUID(), "updatedAt": Date()])
        _ = context.insert("Car", ["numberPlate": plate, "maker": "ObjectGraph"])
        let error = try #require(throws: ObjectGraphError.self) { try context.save() }
        #expect(error.code == .constraintConflict, "\(error.message)")
        #expect(try store.raw { try Int.fetchOne($0, sql: "SELECT COUNT(*) FROM ZCAR") } == before)
        #expect(try store.raw { try Int.fetchOne($0, sql: "SELECT COUNT(*) FROM ZPERSON WHERE ZLASTNAME = 'ObjectGraph'") } == 0)
    }

    @Test("the triggers Core Data writes for derived attributes run on ObjectGraph's saves and keep the derived value")
    func derivedAttributeTriggersRun() throws {
        let url = try CoreDataFixtures.url("coredataplus-samplemodel2-storeonly/stores/SampleModel2_V2.sqlite")
        let copy = try CoreDataFixtures.copyOfStore(url)
        defer { try? FileManager.default.removeItem(at: copy.deletingLastPathComponent()) }
        let model = try ManagedObjectModel(contentsOfStoreAt: copy)
        // Without its history tables the store may be written (the history is what makes it read-only).
        try DatabaseQueue(path: copy.path).write { db in
            for table in ["ATRANSACTION", "ACHANGE", "ATRANSACTIONSTRING"] { try db.execute(sql: "DROP TABLE \(table)") }
            try db.execute(sql: "DELETE FROM Z_PRIMARYKEY WHERE Z_ENT > 16000")
        }
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        try coordinator.addPersistentStore(type: .sqlite, at: copy)
        let context = ManagedObjectContext(concurrencyType: .confinement)
        context.persistentStoreCoordinator = coordinator
        let books = try context.all("Book")
        let from = try #require(books.first { $0.value(forKey: "title") as? String == "title 1 - author 1" })
        let to = try #require(books.first { $0.value(forKey: "title") as? String == "title 2 - author 1" })
        func count(_ book: ManagedObject) throws -> Int? {
            try DatabaseQueue(path: copy.path).read {
                try Int.fetchOne($0, sql: "SELECT ZPAGESCOUNT FROM ZBOOK WHERE Z_PK = ?", arguments: [book.objectID.primaryKey])
            }
        }
        let (fromBefore, toBefore) = (try #require(try count(from)), try #require(try count(to)))
        let page = try #require((from.value(forKey: "pages") as? Set<ManagedObject>)?.first)
        page.setValue(to, forKey: "book")
        try context.save()
        #expect(try count(from) == fromBefore - 1)
        #expect(try count(to) == toBefore + 1)
    }

    @Test("a store ObjectGraph creates from a fixture's model has the tables, columns, entity numbers and metadata keys of Apple's store")
    func newStoresHaveApplesLayout() throws {
        var compared = 0
        for (fixture, url) in try CoreDataFixtures.stores() where !url.lastPathComponent.contains("oss_stubbed") {
            let model = try CoreDataFixtures.modelThatWrote(url, fixture: fixture)
            let directory = TemporaryDirectory()
            let created = directory.file("new.sqlite")
            let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
            let store = try coordinator.addPersistentStore(type: .sqlite, at: created)
            try coordinator.removePersistentStore(store)
            func layout(_ db: Database) throws -> (columns: [String: Set<String>], entities: [[String]], keys: Set<String>, hashes: [String: Data]) {
                let skipped: Set<String> = ["ATRANSACTION", "ACHANGE", "ATRANSACTIONSTRING"]
                var columns: [String: Set<String>] = [:]
                for table in try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
                where !skipped.contains(table) {
                    columns[table] = Set(try String.fetchAll(db, sql: "SELECT name FROM pragma_table_info(?)", arguments: [table]))
                }
                let entities = try Row.fetchAll(db, sql: "SELECT Z_ENT, Z_NAME, Z_SUPER FROM Z_PRIMARYKEY WHERE Z_ENT < 16000 ORDER BY Z_ENT")
                    .map { ["\($0[0] as Int64)", $0[1] as String, "\($0[2] as Int64)"] }
                let plist = try #require(try Data.fetchOne(db, sql: "SELECT Z_PLIST FROM Z_METADATA"))
                let metadata = try #require(try PropertyListSerialization.propertyList(from: plist, options: [], format: nil) as? [String: Any])
                let hashes = (metadata["NSStoreModelVersionHashes"] as? [String: Any] ?? [:]).compactMapValues { $0 as? Data }
                return (columns, entities, Set(metadata.keys), hashes)
            }
            var ours = try DatabaseQueue(path: created.path).read(layout)
            let apples = try CoreDataFixtures.withCopy(of: url, layout)
            let name = "\(fixture)/\(url.lastPathComponent)"
            // Every store ObjectGraph creates caches its model; Core Data did from iOS 9 on.
            #expect(ours.columns["Z_MODELCACHE"] == ["Z_CONTENT"], "\(name)")
            if apples.columns["Z_MODELCACHE"] == nil { ours.columns["Z_MODELCACHE"] = nil }
            #expect(ours.columns == apples.columns, "\(name)")
            // Entity numbers: Apple's, except where a migration kept an entity's old name.
            if fixture != "coredataplus-samplemodel" || url.lastPathComponent.contains("V1") {
                #expect(ours.entities == apples.entities, "\(name)")
            }
            // Every key Apple wrote (but a migration's class name), and ObjectGraph's model hash.
            let expectedKeys = apples.keys.subtracting(["migrationManagerClass"])
                .union(["NSStoreModelVersionChecksumKey", "NSStoreModelVersionHashesDigest", "ObjectGraphModelVersionHash"])
            #expect(ours.keys == expectedKeys, "\(name)")
            #expect(!ours.hashes.isEmpty && ours.hashes == apples.hashes, "\(name)")
            compared += 1
        }
        #expect(compared == 23)
    }
}
