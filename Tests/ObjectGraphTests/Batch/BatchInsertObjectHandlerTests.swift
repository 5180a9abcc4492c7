import Foundation
import Testing
import ObjectGraph
@testable import ObjectGraphCore

@Suite("Batch insert from an object the handler fills")
struct BatchInsertObjectHandlerTests {
    static func typedStack(_ kind: StoreKind) throws -> TestStack {
        try TestStack(kind, model: ManagedObjectModel(types: [Folder.self, Note.self, Tag.self, Sample.self, Circle.self]))
    }

    /// A request of two notes, titled `n1` and `n2`; `second` does more to the second one (row 1).
    static func twoNotes(second: @escaping (Note) -> Void) -> BatchInsertRequest {
        var calls = 0
        return BatchInsertRequest(Note.self) { note in
            calls += 1
            if calls == 3 { return true }
            note.title = "n\(calls)"
            if calls == 2 { second(note) }
            return false
        }
    }

    @Test(arguments: StoreKind.everyStore)
    func aTypedHandlerGivesARowPerCallUntilItReturnsTrueEachFromTheModelsDefaults(_ kind: StoreKind) throws {
        let stack = try Self.typedStack(kind)
        var seen: [ObjectIdentifier] = []
        var ranksAtStart: [Int64] = []
        let insert = BatchInsertRequest(Note.self) { note in
            seen.append(ObjectIdentifier(note))
            ranksAtStart.append(note.rank)
            #expect(note.managedObjectContext == nil)
            guard seen.count <= 3 else { return true }
            note.title = "note \(seen.count)"
            note.slug = "s\(seen.count)"
            note.rank = Int64(10 * seen.count)
            return false
        }
        insert.resultType = .objectIDs
        #expect(insert.entityName == "Note")
        let ids = try #require(try stack.context().execute(insert) as? BatchInsertResult).result as? [ManagedObjectID]
        #expect(ids?.count == 3)
        #expect(ids?.allSatisfy { !$0.isTemporaryID && $0.entityName == "Note" } == true)
        // One object for every call, back at the model's defaults each time.
        #expect(Set(seen).count == 1)
        #expect(ranksAtStart == [0, 0, 0, 0])
        let notes = try stack.stored("Note", sortedBy: "title")
        #expect(notes.map { $0.value(forKey: "title") as? String } == ["note 1", "note 2", "note 3"])
        #expect(notes.map { $0.value(forKey: "rank") as? Int64 } == [10, 20, 30])
        #expect(notes.allSatisfy { $0.value(forKey: "created") == nil })
    }

    @Test(arguments: StoreKind.everyStore)
    func thePropertiesTheHandlerSetsAreTheRowsKeysEvenAtTheirDefault(_ kind: StoreKind) throws {
        let stack = try Self.typedStack(kind)
        let context = stack.context()
        let existing = Note(context: context)
        existing.slug = "a"
        existing.title = "old"
        existing.rank = 5
        try context.save()
        // `slug` is unique, so the row upserts the existing note: it writes the rank it sets (to the
        // default, 0) and keeps the title it does not set.
        var done = false
        let insert = BatchInsertRequest(Note.self) { note in
            if done { return true }
            note.slug = "a"
            note.rank = 0
            done = true
            return false
        }
        insert.resultType = .count
        #expect((try context.execute(insert) as? BatchInsertResult)?.result as? Int == 1)
        let notes = try stack.stored("Note", sortedBy: "slug")
        #expect(notes.count == 1)
        #expect(notes.first?.value(forKey: "title") as? String == "old")
        #expect(notes.first?.value(forKey: "rank") as? Int64 == 0)
    }

    @Test(arguments: StoreKind.everyStore)
    func everyKindOfStoredValueIsWrittenAsASaveWritesIt(_ kind: StoreKind) throws {
        let stack = try Self.typedStack(kind)
        let day = Date(timeIntervalSince1970: 1_700_000_000)
        let identifier = UUID()
        var calls = 0
        let insert = BatchInsertRequest(Sample.self) { sample in
            calls += 1
            guard calls == 1 else { return true }
            sample.int = 3
            sample.int32 = 32
            sample.decimal = Decimal(string: "12.50")!
            sample.flag = true
            sample.text = "text"
            sample.day = day
            sample.blob = Data([1, 2])
            sample.identifier = identifier
            sample.link = URL(string: "https://example.com/a")
            sample.priority = .high
            sample.size = .large
            sample.geometry = Geometry(width: 2, height: 3)
            sample.words = ["a", "b"]
            return false
        }
        try stack.context().execute(insert)
        let sample = try #require(try stack.context("reader").fetch(Sample.fetchRequest()).first)
        #expect(sample.int == 3 && sample.int32 == 32 && sample.int16 == 0 && sample.double == 1.5)
        #expect(sample.decimal == Decimal(string: "12.50")! && sample.flag && sample.text == "text" && sample.day == day)
        #expect(sample.blob == Data([1, 2]) && sample.identifier == identifier && sample.link == URL(string: "https://example.com/a"))
        #expect(sample.priority == .high && sample.size == .large)
        #expect(sample.geometry == Geometry(width: 2, height: 3) && sample.words == ["a", "b"])
    }

    @Test(arguments: StoreKind.everyStore)
    func aRelationshipSetInTheHandlerRefusesTheRequestAndTouchesNoOtherObject(_ kind: StoreKind) throws {
        let stack = try Self.typedStack(kind)
        let context = stack.context()
        let folder = Folder(context: context)
        folder.name = "inbox"
        try context.save()
        let insert = Self.twoNotes { $0.folder = folder }
        let error = try #require(throws: ObjectGraphError.self) { try context.execute(insert) }
        #expect(error.code == .validation)
        #expect(error.entityName == "Note")
        #expect(error.key == "folder")
        #expect(error.message.contains("row 1") && error.message.contains("relationship"))
        #expect(folder.notes.isEmpty)
        #expect(!context.hasChanges)
        #expect(try stack.stored("Note", sortedBy: "title").isEmpty)
    }

    @Test(arguments: StoreKind.everyStore)
    func aValueOfTheWrongTypeSetByKeyRefusesTheRequestNamingTheRowAndKey(_ kind: StoreKind) throws {
        let stack = try Self.typedStack(kind)
        let insert = Self.twoNotes { $0.setValue("high", forKey: "rank") }
        let error = try #require(throws: ObjectGraphError.self) { try stack.context().execute(insert) }
        #expect(error.code == .validation)
        #expect(error.key == "rank")
        #expect(error.message.contains("row 1"))
        #expect(try stack.stored("Note", sortedBy: "title").isEmpty)
    }

    @Test(arguments: StoreKind.everyStore)
    func theHandlerPropertyFillsAnObjectOfTheEntitysClassAndComesBeforeTheRowsGiven(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        let insert = BatchInsertRequest(entityName: "Note", objects: [["title": "not inserted"]])
        var calls = 0
        insert.dictionaryHandler = { _ in Issue.record("the object handler comes first"); return true }
        insert.managedObjectHandler = { note in
            calls += 1
            guard calls <= 2 else { return true }
            note.setValue("by key \(calls)", forKey: "title")
            note.setValue(calls, forKey: "rank")  // an Int, converted as a save converts it
            return false
        }
        insert.resultType = .count
        #expect((try stack.context().execute(insert) as? BatchInsertResult)?.result as? Int == 2)
        let notes = try stack.stored("Note", sortedBy: "title")
        #expect(notes.map { $0.value(forKey: "title") as? String } == ["by key 1", "by key 2"])
        #expect(notes.map { $0.value(forKey: "rank") as? Int64 } == [1, 2])
    }

    @Test func aTypedRequestForAClassTheModelDoesNotHaveIsRefused() throws {
        let stack = try TestStack(.inMemory)
        let insert = BatchInsertRequest(Sample.self) { _ in Issue.record("no row is asked for"); return true }
        let error = try #require(throws: ObjectGraphError.self) { try stack.context().execute(insert) }
        #expect(error.code == .invalidFetchRequest)
        #expect(error.message.contains("Sample"))
    }
}
