import Foundation
import GRDB
import Testing
import ObjectGraph
@testable import ObjectGraphCore

@Suite("Store tools: verify, vacuum, checkpoint")
struct StoreToolsTests {
    /// A closed SQLite store with folders, notes and tags; returns its URL (the stack keeps the folder).
    private func seededStore(_ stack: TestStack, notes: Int = 20) throws -> URL {
        let context = stack.context()
        let folder = context.insert("Folder", ["name": "Inbox"])
        let tag = context.insert("Tag", ["name": "red"])
        for i in 0..<notes {
            let note = context.insert("Note", ["title": "note \(i)", "folder": folder])
            if i % 2 == 0 { note.setValue(Set([tag]), forKey: "tags") }
        }
        try context.save()
        try stack.coordinator.removePersistentStore(stack.store)
        return stack.storeURL
    }

    private func raw(_ url: URL, _ sql: String) throws {
        let queue = try DatabaseQueue(path: url.path)
        try queue.write { try $0.execute(sql: sql) }
        try queue.close()
    }

    @Test func aHealthyStoreVerifies() throws {
        let stack = try TestStack(.sqlite)
        let url = try seededStore(stack)
        var steps: [Int] = []
        let result = try StoreTools.verify(at: url, model: stack.model) { done, _ in steps.append(done) }
        #expect(result.integrity == "ok")
        #expect(result.problems.isEmpty, "\(result.problems)")
        #expect(result.isValid)
        // Integrity, then for each of the three tables versions, entities, keys; two to-ones
        // (Note.folder, and none else), the join table both ways.
        #expect(result.checks.count >= 1 + 3 * 3 + 1 + 2)
        #expect(steps.last == result.checks.count)
    }

    @Test func eachBrokenInvariantIsReportedWithItsTableAndRows() throws {
        let stack = try TestStack(.sqlite)
        let url = try seededStore(stack)
        let join = try DatabaseQueue(path: url.path).read { db in
            try String.fetchOne(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'Z\\_%TAGS' ESCAPE '\\'")
        }
        let joinTable = try #require(join)
        try raw(url, "UPDATE ZNOTE SET ZFOLDER = 999 WHERE Z_PK IN (1, 2)")
        try raw(url, "UPDATE ZTAG SET Z_OPT = 0")
        try raw(url, "UPDATE ZFOLDER SET Z_ENT = 77")
        try raw(url, "UPDATE Z_PRIMARYKEY SET Z_MAX = 3 WHERE Z_NAME = 'Note'")
        try raw(url, "INSERT INTO \(joinTable) SELECT \(try DatabaseQueue(path: url.path).read { db in try Row.fetchOne(db, sql: "SELECT * FROM \(joinTable)")!.columnNames.map { _ in "555" }.joined(separator: ", ") })")

        let result = try StoreTools.verify(at: url, model: stack.model)
        #expect(result.integrity == "ok")
        #expect(!result.isValid)
        let found = Dictionary(grouping: result.problems, by: \.check)
        #expect(found["to-one"]?.first?.table == "ZNOTE")
        #expect(found["to-one"]?.first?.rows == 2)
        #expect(found["versions"]?.first?.table == "ZTAG")
        #expect(found["entities"]?.first?.table == "ZFOLDER")
        #expect(found["keys"]?.first?.rows == 17)
        #expect(found["join"]?.count == 2)
        #expect(found["join"]?.allSatisfy { $0.table == joinTable && $0.rows == 1 } == true)
        #expect(result.problems.count == 6)
    }

    @Test func checkpointMovesTheLogIntoTheDatabase() throws {
        let stack = try TestStack(.sqlite)
        let context = stack.context()
        for i in 0..<200 { context.insert("Note", ["title": "note \(i)"]) }
        try context.save()
        // The stack's coordinator keeps the store open (as a running program would) while the tool runs.
        let result = try StoreTools.checkpoint(at: stack.storeURL)
        #expect(!result.busy)
        #expect(result.framesCheckpointed == result.framesInLog)
        #expect(result.walBytesAfter == 0)
        #expect(try stack.context("after").count(for: FetchRequest<ManagedObject>(entityName: "Note")) == 200)
    }

    @Test func vacuumGivesBackTheFreePagesAndKeepsTheRows() throws {
        let stack = try TestStack(.sqlite)
        let context = stack.context()
        for i in 0..<2_000 { context.insert("Note", ["title": String(repeating: "x", count: 200) + "\(i)"]) }
        try context.save()
        let survivor = context.insert("Note", ["title": "kept"])
        try context.save()
        let purge = FetchRequest<ManagedObject>(entityName: "Note")
        purge.predicate = FetchPredicate(format: "title != %@", "kept")
        try context.execute(BatchDeleteRequest(fetchRequest: purge))
        let id = survivor.objectID
        try stack.coordinator.removePersistentStore(stack.store)

        let result = try StoreTools.vacuum(at: stack.storeURL)
        #expect(result.bytesAfter < result.bytesBefore / 4, "\(result)")
        let reopened = PersistentStoreCoordinator(managedObjectModel: stack.model)
        try reopened.addPersistentStore(type: .sqlite, at: stack.storeURL)
        let reader = ManagedObjectContext(concurrencyType: .confinement)
        reader.persistentStoreCoordinator = reopened
        #expect(try reader.all("Note").map { $0.value(forKey: "title") as? String } == ["kept"])
        #expect(try StoreTools.verify(at: stack.storeURL, model: stack.model).isValid)
        #expect(try reader.existingObject(with: try #require(reopened.managedObjectID(forURIRepresentation: id.uriRepresentation()))).value(forKey: "title") as? String == "kept")
    }

    @Test func aFileThatIsNotAStoreIsRefusedByEachTool() throws {
        let directory = TemporaryDirectory()
        let url = directory.file("text.sqlite")
        try Data("this is not a database, just some text that is long enough".utf8).write(to: url)
        #expect(throws: ObjectGraphError.notADatabase) { try StoreTools.checkpoint(at: url) }
        #expect(throws: ObjectGraphError.notADatabase) { try StoreTools.vacuum(at: url) }
        #expect(throws: ObjectGraphError.io) { try StoreTools.checkpoint(at: directory.file("missing.sqlite")) }
    }

    @Test func theToolPrintsJSONAndExitsWithOneForABrokenStore() throws {
        let stack = try TestStack(.sqlite)
        let url = try seededStore(stack)
        let good = try runTool(["verify", url.path, "--json"])
        #expect(good.status == 0, "\(good.output)")
        #expect(good.output.contains("\"integrity\" : \"ok\""))
        try raw(url, "UPDATE ZNOTE SET ZFOLDER = 999")
        let bad = try runTool(["verify", url.path])
        #expect(bad.status == 1)
        #expect(bad.output.contains("Note.folder (ZFOLDER) points at no row of ZFOLDER (20 rows)"))
        let checkpoint = try runTool(["checkpoint", url.path, "--json"])
        #expect(checkpoint.status == 0, "\(checkpoint.output)")
        #expect(checkpoint.output.contains("\"busy\" : false"))
    }
}
