import Foundation
import Testing
import ObjectGraph
@testable import ObjectGraphCore

@Suite("Managed objects")
struct ManagedObjectTests {
    static func allTypesModel() -> ManagedObjectModel {
        ManagedObjectModel(entities: [
            EntityDescription(name: "Thing", properties: [
                .attribute("i16", .integer16), .attribute("i32", .integer32), .attribute("i64", .integer64),
                .attribute("dec", .decimal), .attribute("dbl", .double), .attribute("flt", .float),
                .attribute("str", .string), .attribute("bool", .boolean), .attribute("date", .date),
                .attribute("data", .binaryData), .attribute("uuid", .uuid), .attribute("uri", .uri),
                .attribute("json", .transformable), .attribute("point", .transformable, valueType: Point.self),
                .attribute("scratch", .string, isTransient: true),
            ]),
        ])
    }

    struct Point: Codable, Equatable { var x: Int; var y: Int }

    @Test(arguments: StoreKind.everyStore)
    func everyAttributeTypeRoundTripsThroughTheStore(_ kind: StoreKind) throws {
        let stack = try TestStack(kind, model: Self.allTypesModel())
        let context = stack.context()
        let id = UUID()
        let date = Date(timeIntervalSinceReferenceDate: 123_456.5)
        let thing = context.insert("Thing", [
            "i16": 7, "i32": Int32(-9), "i64": Int64.max, "dec": Decimal(string: "1234567890.12345")!,
            "dbl": 2.5, "flt": Float(1.25), "str": "héllo", "bool": true, "date": date,
            "data": Data([1, 2, 3]), "uuid": id, "uri": URL(string: "https://example.com/a?b=c")!,
            "json": ["a": 1, "b": [true, false]] as [String: Any], "point": Point(x: 3, y: 4), "scratch": "temp",
        ])
        #expect(thing.value(forKey: "i16") as? Int16 == 7)
        try context.save()
        let other = stack.context("reader")
        let fetched = try #require(try other.all("Thing").first)
        #expect(fetched.value(forKey: "i16") as? Int16 == 7)
        #expect(fetched.value(forKey: "i32") as? Int32 == -9)
        #expect(fetched.value(forKey: "i64") as? Int64 == Int64.max)
        // 15 significant digits: Core Data's DECIMAL columns hold a double (REAL).
        #expect(fetched.value(forKey: "dec") as? Decimal == Decimal(string: "1234567890.12345"))
        #expect(fetched.value(forKey: "dbl") as? Double == 2.5)
        #expect(fetched.value(forKey: "flt") as? Float == 1.25)
        #expect(fetched.value(forKey: "str") as? String == "héllo")
        #expect(fetched.value(forKey: "bool") as? Bool == true)
        #expect(fetched.value(forKey: "date") as? Date == date)
        #expect(fetched.value(forKey: "data") as? Data == Data([1, 2, 3]))
        #expect(fetched.value(forKey: "uuid") as? UUID == id)
        #expect(fetched.value(forKey: "uri") as? URL == URL(string: "https://example.com/a?b=c"))
        let json = try #require(fetched.value(forKey: "json") as? [String: Any])
        #expect(json["a"] as? Int == 1)
        #expect(fetched.value(forKey: "point") as? Point == Point(x: 3, y: 4))
        #expect(fetched.value(forKey: "scratch") == nil, "transient attributes are not stored")
    }

    @Test(arguments: StoreKind.everyStore)
    func aValueOfTheWrongTypeFailsValidationAtSaveWithoutCrashing(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        let context = stack.context()
        let note = context.insert("Note", ["title": "ok"])
        note.setValue("not a number", forKey: "rank")
        note.setValue(70_000, forKey: "title")
        let error = try #require(throws: ObjectGraphError.self) { try context.save() }
        #expect(error.code == .validation)
        #expect(error.underlyingErrors.count == 2, "every failure is reported: \(error)")
        #expect(error.description.contains("Note.rank"))
        #expect(error.description.contains("Note.title"))
        #expect(context.hasChanges)
        note.setValue(3, forKey: "rank")
        note.setValue("fixed", forKey: "title")
        try context.save()
        #expect(try stack.context().all("Note").first?.value(forKey: "rank") as? Int64 == 3)
    }

    @Test func anIntegerThatDoesNotFitItsWidthIsRefused() throws {
        let stack = try TestStack(.inMemory, model: Self.allTypesModel())
        let context = stack.context()
        let thing = context.insert("Thing", ["i16": 40_000])
        #expect(throws: ObjectGraphError.validation) { try context.save() }
        thing.setValue(Int16(4), forKey: "i16")
        try context.save()
    }

    @Test(arguments: StoreKind.everyStore)
    func settingAToOneKeepsTheInverseToManyInSync(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        let context = stack.context()
        let inbox = context.insert("Folder", ["name": "Inbox"])
        let work = context.insert("Folder", ["name": "Work"])
        let note = context.insert("Note", ["title": "a"])
        note.setValue(inbox, forKey: "folder")
        #expect((inbox.value(forKey: "notes") as? Set<ManagedObject>) == [note])
        note.setValue(work, forKey: "folder")
        #expect((inbox.value(forKey: "notes") as? Set<ManagedObject>)?.isEmpty == true)
        #expect((work.value(forKey: "notes") as? Set<ManagedObject>) == [note])
        try context.save()

        let reader = stack.context("reader")
        let folders = try reader.all("Folder")
        let readWork = try #require(folders.first { $0.value(forKey: "name") as? String == "Work" })
        let notes = try #require(readWork.value(forKey: "notes") as? Set<ManagedObject>)
        #expect(notes.map { $0.value(forKey: "title") as? String } == ["a"])
        let readNote = try #require(notes.first)
        #expect((readNote.value(forKey: "folder") as? ManagedObject) === readWork)
        // Moving it back, from the to-many side, in a context where both sides were faults.
        let readInbox = try #require(folders.first { $0.value(forKey: "name") as? String == "Inbox" })
        readInbox.setValue(Set([readNote]), forKey: "notes")
        #expect((readNote.value(forKey: "folder") as? ManagedObject) === readInbox)
        #expect((readWork.value(forKey: "notes") as? Set<ManagedObject>)?.isEmpty == true)
        try reader.save()
        let third = stack.context("third")
        let inbox3 = try #require(try third.all("Folder").first { $0.value(forKey: "name") as? String == "Inbox" })
        #expect((inbox3.value(forKey: "notes") as? Set<ManagedObject>)?.count == 1)
    }

    @Test(arguments: StoreKind.everyStore)
    func manyToManyRelationshipsPersistFromEitherSide(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        let context = stack.context()
        let swift = context.insert("Tag", ["name": "swift"])
        let db = context.insert("Tag", ["name": "db"])
        let a = context.insert("Note", ["title": "a"])
        let b = context.insert("Note", ["title": "b"])
        a.setValue(Set([swift, db]), forKey: "tags")
        db.setValue(Set([a, b]), forKey: "notes")
        #expect((b.value(forKey: "tags") as? Set<ManagedObject>) == [db])
        try context.save()
        let reader = stack.context("reader")
        let tags = try reader.all("Tag")
        let readDB = try #require(tags.first { $0.value(forKey: "name") as? String == "db" })
        let titles = (readDB.value(forKey: "notes") as? Set<ManagedObject>)?.compactMap { $0.value(forKey: "title") as? String }.sorted()
        #expect(titles == ["a", "b"])
        let readA = try #require((readDB.value(forKey: "notes") as? Set<ManagedObject>)?.first { $0.value(forKey: "title") as? String == "a" })
        #expect((readA.value(forKey: "tags") as? Set<ManagedObject>)?.count == 2)
        // Remove one pair and check from the other side after a save.
        readA.setValue(Set<ManagedObject>(), forKey: "tags")
        try reader.save()
        let third = stack.context("third")
        let tagsAfter = try third.all("Tag")
        let counts = tagsAfter.map { ($0.value(forKey: "name") as! String, ($0.value(forKey: "notes") as! Set<ManagedObject>).count) }
        #expect(Dictionary(uniqueKeysWithValues: counts) == ["db": 1, "swift": 0])
    }

    @Test(arguments: StoreKind.everyStore)
    func orderedToManyKeepsItsOrder(_ kind: StoreKind) throws {
        let model = ManagedObjectModel(entities: [
            EntityDescription(name: "List", properties: [
                .relationship("items", destination: "Item", toMany: true, isOrdered: true, inverse: "list"),
                .relationship("pinned", destination: "Item", toMany: true, isOrdered: true),
            ]),
            EntityDescription(name: "Item", properties: [
                .attribute("n", .integer64),
                .relationship("list", destination: "List", inverse: "items"),
            ]),
        ])
        let stack = try TestStack(kind, model: model)
        let context = stack.context()
        let list = context.insert("List", [:])
        let items = (0..<5).map { context.insert("Item", ["n": $0]) }
        let order = [items[3], items[0], items[4], items[1], items[2]]
        list.setValue(order, forKey: "items")
        list.setValue([items[2], items[1]], forKey: "pinned")
        try context.save()
        let reader = stack.context("reader")
        let readList = try #require(try reader.all("List").first)
        let readItems = try #require(readList.value(forKey: "items") as? [ManagedObject])
        #expect(readItems.map { $0.value(forKey: "n") as? Int64 } == [3, 0, 4, 1, 2])
        let pinned = try #require(readList.value(forKey: "pinned") as? [ManagedObject])
        #expect(pinned.map { $0.value(forKey: "n") as? Int64 } == [2, 1])
    }

    @Test(arguments: StoreKind.everyStore)
    func oneToOneRelationshipsStealTheirPartner(_ kind: StoreKind) throws {
        let model = ManagedObjectModel(entities: [
            EntityDescription(name: "Person", properties: [
                .attribute("name", .string),
                .relationship("desk", destination: "Desk", inverse: "owner"),
            ]),
            EntityDescription(name: "Desk", properties: [.relationship("owner", destination: "Person", inverse: "desk")]),
        ])
        let stack = try TestStack(kind, model: model)
        let context = stack.context()
        let ann = context.insert("Person", ["name": "Ann"])
        let bob = context.insert("Person", ["name": "Bob"])
        let desk = context.insert("Desk", [:])
        ann.setValue(desk, forKey: "desk")
        #expect((desk.value(forKey: "owner") as? ManagedObject) === ann)
        bob.setValue(desk, forKey: "desk")
        #expect((desk.value(forKey: "owner") as? ManagedObject) === bob)
        #expect(ann.value(forKey: "desk") == nil)
        try context.save()
    }

    @Test(arguments: StoreKind.everyStore)
    func stateFlagsChangedValuesAndCommittedValues(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        let context = stack.context()
        let note = context.insert("Note", ["title": "draft", "rank": 1])
        #expect(note.isInserted && note.hasChanges && !note.isUpdated && !note.isDeleted)
        #expect(context.hasChanges)
        try context.save()
        #expect(!note.isInserted && !note.hasChanges && !context.hasChanges)
        #expect(!note.objectID.isTemporaryID)
        note.setValue("final", forKey: "title")
        #expect(note.isUpdated)
        #expect(note.changedValues().keys.sorted() == ["title"])
        #expect(note.committedValues(forKeys: ["title"])["title"] as? String == "draft")
        context.delete(note)
        #expect(note.isDeleted)
        try context.save()
        #expect(try stack.context().all("Note").isEmpty)
    }

    final class Tracked: ManagedObject {
        nonisolated(unsafe) static var events: [String] = []
        var title: String {
            get { value(forKey: "title") as? String ?? "" }
            set { setValue(newValue, forKey: "title") }
        }
        override func awakeFromInsert() { super.awakeFromInsert(); Self.events.append("insert"); title = "untitled" }
        override func awakeFromFetch() { super.awakeFromFetch(); Self.events.append("fetch") }
        override func willSave() { super.willSave(); Self.events.append("willSave") }
        override func didSave() { super.didSave(); Self.events.append("didSave") }
        override func prepareForDeletion() { super.prepareForDeletion(); Self.events.append("delete") }
        override func didTurnIntoFault() { super.didTurnIntoFault(); Self.events.append("fault") }
        override func validateForInsert() throws {
            try super.validateForInsert()
            if title == "forbidden" { throw ObjectGraphError(.validation, "Tracked.title may not be 'forbidden'") }
        }
    }

    @Test func subclassesWithTypedAccessorsGetLifecycleHooksAndCustomValidation() throws {
        let model = ManagedObjectModel(entities: [
            EntityDescription(name: "Tracked", managedObjectClass: Tracked.self, properties: [.attribute("title", .string)]),
        ])
        let stack = try TestStack(.sqlite, model: model)
        let context = stack.context()
        Tracked.events = []
        let object = Tracked(context: context)
        #expect(object.title == "untitled")
        object.title = "forbidden"
        #expect(throws: ObjectGraphError.validation) { try context.save() }
        object.title = "fine"
        try context.save()
        let reader = stack.context("reader")
        let fetched = try #require(try reader.fetch(FetchRequest<Tracked>(entityName: "Tracked")).first)
        #expect(fetched.title == "fine")
        reader.refresh(fetched, mergeChanges: false)
        reader.delete(fetched)
        try reader.save()
        #expect(Tracked.events == ["insert", "willSave", "willSave", "didSave", "fetch", "fault", "fetch", "delete", "willSave", "didSave"])
    }
}
