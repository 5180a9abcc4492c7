import Foundation
import Testing
import ObjectGraph
@testable import ObjectGraphCore

/// Batch inserts and deletes on PostgreSQL as a few set-based statements: an insert of unnested
/// arrays per 10,000 rows; a delete as one `DELETE`, its delete rules applied set-wise. The rows,
/// versions, relationships and change log are those of the row-by-row path.
@Suite("PostgreSQL batch inserts and deletes are set-based", .needsPostgreSQL)
struct PostgresSetBasedBatchTests {
    /// Folders whose notes are nullified (not cascaded) on delete, and tags shared by notes.
    static let model = ManagedObjectModel(entities: [
        EntityDescription(name: "Folder", properties: [
            .attribute("name", .string),
            .relationship("notes", destination: "Note", toMany: true, inverse: "folder", deleteRule: .nullify),
        ]),
        EntityDescription(name: "Note", properties: [
            .attribute("title", .string),
            .attribute("rank", .integer64, defaultValue: Int64(0)),
            .attribute("flag", .boolean, defaultValue: false),
            .attribute("score", .double),
            .attribute("amount", .decimal),
            .attribute("uid", .uuid),
            .attribute("body", .binaryData),
            .relationship("folder", destination: "Folder", inverse: "notes", deleteRule: .nullify),
            .relationship("tags", destination: "Tag", toMany: true, inverse: "notes"),
        ]),
        EntityDescription(name: "Tag", properties: [
            .attribute("name", .string),
            .relationship("notes", destination: "Note", toMany: true, inverse: "tags"),
        ]),
    ])

    @Test func aBatchInsertIsOneStatementPer10000RowsWithEveryTypeAndNil() async throws {
        let stack = try TestStack(.postgres, model: Self.model)
        let other = PersistentStoreCoordinator(managedObjectModel: Self.model)
        _ = try other.addPersistentStore(type: .postgres, at: stack.storeURL)
        var heard = other.remoteChanges.makeAsyncIterator()
        let uid = UUID()
        let rows: [[String: any Sendable]] = (0..<25_000).map { i in
            i == 7
                ? ["title": "every type", "rank": Int64(7), "flag": true, "score": Double.nan, "amount": Decimal(string: "12.345")!,
                   "uid": uid, "body": Data([0, 1, 2])]
                : ["title": "n\(i)", "rank": Int64(i)]
        }
        let request = BatchInsertRequest(entityName: "Note", objects: rows)
        request.resultType = .objectIDs
        let context = stack.context("batch")
        let before = stack.coordinator.statistics.sqlStatements
        let ids = try #require((try context.execute(request) as? BatchInsertResult)?.result as? [ManagedObjectID])
        let statements = stack.coordinator.statistics.sqlStatements - before
        #expect(ids.count == 25_000)
        #expect(statements <= 8, "a batch insert of 25,000 rows ran \(statements) statements")
        let stored = try stack.stored("Note", sortedBy: "rank")
        #expect(stored.count == 25_000)
        #expect(Set(stored.map(\.objectID)) == Set(ids))
        let seven = try #require(stored.first { $0.value(forKey: "rank") as? Int64 == 7 })
        #expect(seven.value(forKey: "title") as? String == "every type")
        #expect(seven.value(forKey: "flag") as? Bool == true)
        #expect((seven.value(forKey: "score") as? Double)?.isNaN == true)
        #expect(seven.value(forKey: "amount") as? Decimal == Decimal(string: "12.345"))
        #expect(seven.value(forKey: "uid") as? UUID == uid)
        #expect(seven.value(forKey: "body") as? Data == Data([0, 1, 2]))
        let eight = try #require(stored.first { $0.value(forKey: "rank") as? Int64 == 8 })
        #expect(eight.value(forKey: "flag") as? Bool == false)
        for key in ["score", "uid", "amount", "folder"] { #expect(eight.value(forKey: key) == nil, "\(key)") }
        // Keys continue after the batch: a save inserts past them.
        let later = stack.context("later")
        let note = later.insert("Note", ["title": "after"])
        try later.save()
        #expect(!ids.contains(note.objectID))
        let change = try #require(await heard.next())
        #expect(change.storeUUID == stack.store.identifier)
        withExtendedLifetime(other) {}
    }

    @Test func aBatchDeleteIsOneDeleteAndItsRulesAreAppliedSetWise() throws {
        let stack = try TestStack(.postgres, model: Self.model)
        let seed = stack.context("seed")
        let inbox = seed.insert("Folder", ["name": "Inbox"])
        let archive = seed.insert("Folder", ["name": "Archive"])
        let red = seed.insert("Tag", ["name": "red"])
        for i in 0..<300 {
            let note = seed.insert("Note", ["title": "n\(i)", "rank": Int64(i), "folder": i % 2 == 0 ? inbox : archive])
            if i % 3 == 0 { note.setValue(Set([red]), forKey: "tags") }
        }
        try seed.save()
        // A context holding a note of the Inbox: the delete of the folder changes the note's version.
        let holder = stack.context("holder")
        let held = try #require(try holder.fetch(FetchRequest<ManagedObject>(entityName: "Note")).first { $0.value(forKey: "rank") as? Int64 == 4 })

        // Notes through a key path (a join): one DELETE, and the tags' join rows go with them.
        let context = stack.context("batch")
        let deleteNotes = BatchDeleteRequest(fetchRequest: FetchRequest<ManagedObject>(entityName: "Note"))
        deleteNotes.fetchRequest.predicate = FetchPredicate(format: "folder.name == 'Archive' AND rank >= 100")
        deleteNotes.resultType = .count
        var before = stack.coordinator.statistics.sqlStatements
        #expect((try context.execute(deleteNotes) as? BatchDeleteResult)?.result as? Int == 100)
        #expect(stack.coordinator.statistics.sqlStatements - before <= 10)
        let notes = try stack.stored("Note", sortedBy: "rank")
        #expect(notes.count == 200)
        let ranks = notes.map { $0.value(forKey: "rank") as? Int64 ?? -1 }
        let kept = (0..<300).filter { $0 < 100 || $0 % 2 == 0 }
        #expect(ranks == kept.map(Int64.init))
        let tag = try #require(try stack.stored("Tag", sortedBy: "name").first)
        let tagged = tag.value(forKey: "notes") as? Set<ManagedObject>
        #expect(tagged?.count == kept.filter { $0 % 3 == 0 }.count)

        // A folder: its notes' to-one is cleared set-wise, with a new version.
        let deleteFolder = BatchDeleteRequest(fetchRequest: FetchRequest<ManagedObject>(entityName: "Folder"))
        deleteFolder.fetchRequest.predicate = FetchPredicate(format: "name == 'Inbox'")
        deleteFolder.resultType = .objectIDs
        before = stack.coordinator.statistics.sqlStatements
        let deleted = try #require((try context.execute(deleteFolder) as? BatchDeleteResult)?.result as? [ManagedObjectID])
        #expect(deleted == [inbox.objectID])
        #expect(stack.coordinator.statistics.sqlStatements - before <= 10)
        let orphans = try stack.stored("Note", sortedBy: "rank").filter { ($0.value(forKey: "rank") as! Int64) % 2 == 0 }
        #expect(orphans.count == 150)
        #expect(orphans.allSatisfy { $0.value(forKey: "folder") == nil })
        held.setValue("mine", forKey: "title")
        #expect(throws: (any Error).self) { try holder.save() }
    }

    @Test func aCascadeOrAPredicateLeftToMemoryTakesTheRowByRowPath() throws {
        let stack = try TestStack(.postgres)  // Folder.notes cascades
        let seed = stack.context("seed")
        let inbox = seed.insert("Folder", ["name": "Inbox"])
        for i in 0..<20 { seed.insert("Note", ["title": "n\(i)", "rank": Int64(i), "folder": inbox]) }
        try seed.save()
        let context = stack.context("batch")
        let deleteFolder = BatchDeleteRequest(fetchRequest: FetchRequest<ManagedObject>(entityName: "Folder"))
        deleteFolder.resultType = .count
        _ = try context.execute(deleteFolder)
        #expect(try stack.stored("Note", sortedBy: "rank").isEmpty)
        let again = stack.context("again")
        let folder = again.insert("Folder", ["name": "Inbox"])
        for i in 0..<20 { again.insert("Note", ["title": "n\(i)", "rank": Int64(i), "folder": folder]) }
        try again.save()
        let deleteNotes = BatchDeleteRequest(fetchRequest: FetchRequest<ManagedObject>(entityName: "Note"))
        deleteNotes.fetchRequest.predicate = FetchPredicate(format: "title BEGINSWITH[c] 'N1'")
        deleteNotes.resultType = .count
        #expect((try context.execute(deleteNotes) as? BatchDeleteResult)?.result as? Int == 11)
        #expect(try stack.stored("Note", sortedBy: "rank").count == 9)
    }
}
