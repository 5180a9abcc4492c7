import Foundation
import GRDB
import Testing
import ObjectGraph
@testable import ObjectGraphCore

/// Refusing a file never changes it: a store that cannot be opened is left byte for byte as it
/// was, with no journal or shared-memory file left beside it.
@Suite("A refused store file is left as it was")
struct StoreFileRefusalTests {
    /// Writes an SQLite store with a few notes, and closes it.
    private func writeNotesStore(at url: URL) throws {
        let coordinator = PersistentStoreCoordinator(managedObjectModel: TestModels.notes())
        let store = try coordinator.addPersistentStore(type: .sqlite, at: url)
        let context = ManagedObjectContext(concurrencyType: .confinement)
        context.persistentStoreCoordinator = coordinator
        for i in 0..<50 { _ = context.insert("Note", ["title": "note \(i)", "rank": Int64(i)]) }
        try context.save()
        try coordinator.removePersistentStore(store)
    }

    /// Adds an SQLite store at `url`, expecting `code`, and checks the folder is as it was.
    private func expectRefusal(at url: URL, model: ManagedObjectModel = TestModels.notes(), _ code: ObjectGraphError.Code) throws {
        let before = try FileFingerprint(url)
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        let error = try #require(throws: ObjectGraphError.self) { try coordinator.addPersistentStore(type: .sqlite, at: url) }
        #expect(error.code == code)
        #expect(error.message.contains(url.path))
        #expect(coordinator.persistentStores.isEmpty)
        let after = try FileFingerprint(url)
        #expect(after.siblings == before.siblings)
        #expect(after.bytes == before.bytes, "the refused file changed (\(before.bytes.count) → \(after.bytes.count) bytes)")
    }

    @Test func aDamagedStoreIsRefusedAsNotADatabaseAndLeftAsItWas() throws {
        let directory = TemporaryDirectory()
        let url = directory.file("notes.sqlite")
        try writeNotesStore(at: url)
        var bytes = try Data(contentsOf: url)
        let rawPageSize = Int(bytes[16]) << 8 | Int(bytes[17])
        let pageSize = rawPageSize == 1 ? 65536 : rawPageSize
        #expect(bytes.count > 2 * pageSize)
        for i in pageSize..<bytes.count { bytes[i] = 0 }
        for i in 0..<12 { bytes[pageSize + i] = 0x7F }  // page 2's header: no valid page type
        try bytes.write(to: url)
        try expectRefusal(at: url, .notADatabase)
    }

    @Test func aStoreWrittenWithAnotherModelIsRefusedAndLeftAsItWas() throws {
        let directory = TemporaryDirectory()
        let url = directory.file("notes.sqlite")
        try writeNotesStore(at: url)
        let other = ManagedObjectModel(entities: [EntityDescription(name: "Other", properties: [.attribute("x", .string)])])
        try expectRefusal(at: url, model: other, .incompatibleModel)
    }

    @Test func aStoreWithoutItsModelVersionIsRefusedAndLeftAsItWas() throws {
        let directory = TemporaryDirectory()
        let url = directory.file("notes.sqlite")
        try writeNotesStore(at: url)
        let queue = try DatabaseQueue(path: url.path)
        try queue.write { db in
            // Core Data's metadata without its model version hashes (NSStoreModelVersionHashes).
            let blob = try #require(try Data.fetchOne(db, sql: "SELECT Z_PLIST FROM \(CoreDataLayout.metadataTable)"))
            var metadata = try #require(try PropertyListSerialization.propertyList(from: blob, options: [], format: nil) as? [String: Any])
            #expect(metadata.removeValue(forKey: "NSStoreModelVersionHashes") != nil)
            let stripped = try PropertyListSerialization.data(fromPropertyList: metadata, format: .binary, options: 0)
            try db.execute(sql: "UPDATE \(CoreDataLayout.metadataTable) SET Z_PLIST = ?", arguments: [stripped])
        }
        try queue.close()
        try expectRefusal(at: url, .incompatibleModel)
    }

    @Test func aForeignSQLiteDatabaseIsRefusedAndKeepsItsJournalMode() throws {
        let directory = TemporaryDirectory()
        let url = directory.file("people.sqlite")
        let queue = try DatabaseQueue(path: url.path)
        try queue.write { db in
            try db.execute(sql: "CREATE TABLE people (id INTEGER PRIMARY KEY, name TEXT)")
            for i in 0..<100 { try db.execute(sql: "INSERT INTO people (name) VALUES (?)", arguments: ["person \(i)"]) }
        }
        try queue.close()
        try expectRefusal(at: url, .incompatibleModel)
        let reader = try DatabaseQueue(path: url.path, configuration: { var c = Configuration(); c.readonly = true; return c }())
        #expect(try reader.read { try String.fetchOne($0, sql: "PRAGMA journal_mode") } == "delete")
    }

    @Test func aStoreThatOpensIsStillUsableAfterTheChecks() throws {
        let directory = TemporaryDirectory()
        let url = directory.file("notes.sqlite")
        try writeNotesStore(at: url)
        let coordinator = PersistentStoreCoordinator(managedObjectModel: TestModels.notes())
        let store = try coordinator.addPersistentStore(type: .sqlite, at: url)
        let context = ManagedObjectContext(concurrencyType: .confinement)
        context.persistentStoreCoordinator = coordinator
        #expect(try context.all("Note").count == 50)
        _ = context.insert("Note", ["title": "one more"])
        try context.save()
        #expect(try (store.backend as? SQLiteStore)?.synchronousLevel() == 2)
    }

    @Test(arguments: [StoreType.sqlite, .binary, .xml])
    func aURLThatIsNotAFileIsRefusedNamingTheURLAndTheStoreType(_ type: StoreType) throws {
        let name = "objectgraph-\(UUID().uuidString).store"
        let url = try #require(URL(string: "https://example.com/\(name)"))
        let coordinator = PersistentStoreCoordinator(managedObjectModel: TestModels.notes())
        let error = try #require(throws: ObjectGraphError.self) { try coordinator.addPersistentStore(type: type, at: url) }
        #expect(error.code == .unsupported)
        #expect(error.message.contains(url.absoluteString))
        #expect(error.message.contains(type.rawValue))
        #expect(!FileManager.default.fileExists(atPath: "/\(name)"))
    }
}
