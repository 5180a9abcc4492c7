import Foundation
import Testing
import ObjectGraph
@testable import ObjectGraphCore

extension TestModels {
    /// The public API contract's typed model, with tags and every property shape.
    static func typed() -> ManagedObjectModel {
        ManagedObjectModel(types: [Folder.self, Note.self, Tag.self, Sample.self, Circle.self])
    }
}

@Suite("@Managed models")
struct ManagedModelTests {
    @Test func theMacroGeneratesTheDescriptionsTheInCodeAPIBuilds() throws {
        let model = ManagedObjectModel(types: [Folder.self, Note.self, Tag.self])
        try model.validate()
        let note = try #require(model.entitiesByName["Note"])
        #expect(note.managedObjectClass == Note.self)
        #expect(note.properties.map(\.name) == ["title", "rank", "created", "folder", "slug", "tags"])
        let title = try #require(note.attributesByName["title"])
        #expect(title.attributeType == .string)
        #expect(!title.isOptional)
        #expect(title.defaultValue as? String == "")
        #expect(note.attributesByName["rank"]?.attributeType == .integer64)
        #expect(note.attributesByName["rank"]?.defaultValue as? Int64 == 0)
        #expect(note.attributesByName["created"]?.attributeType == .date)
        #expect(note.attributesByName["created"]?.isOptional == true)
        #expect(note.attributesByName["scratch"] == nil)
        #expect(note.uniquenessConstraints == [["slug"]])
        let folder = try #require(note.relationshipsByName["folder"])
        #expect(folder.destinationEntity?.name == "Folder")
        #expect(!folder.isToMany)
        #expect(folder.inverseRelationship?.name == "notes")
        #expect(folder.deleteRule == .nullify)
        let notes = try #require(model.entitiesByName["Folder"]?.relationshipsByName["notes"])
        #expect(notes.isToMany)
        #expect(notes.deleteRule == .cascade)
        #expect(notes.inverseRelationship === folder)
        #expect(model.entitiesByName["Tag"]?.relationshipsByName["notes"]?.inverseRelationship?.name == "tags")
        // The same model written in code has the same version hash.
        let inCode = ManagedObjectModel(entities: [
            EntityDescription(name: "Folder", properties: [
                .attribute("name", .string, isOptional: false, defaultValue: ""),
                .relationship("notes", destination: "Note", toMany: true, inverse: "folder", deleteRule: .cascade),
            ]),
            EntityDescription(name: "Note", properties: [
                .attribute("title", .string, isOptional: false, defaultValue: ""),
                .attribute("rank", .integer64, isOptional: false, defaultValue: Int64(0)),
                .attribute("created", .date),
                .relationship("folder", destination: "Folder", toMany: false, inverse: "notes", deleteRule: .nullify),
                .attribute("slug", .string, isOptional: false, defaultValue: ""),
                .relationship("tags", destination: "Tag", toMany: true, inverse: "notes"),
            ], uniquenessConstraints: [["slug"]]),
            EntityDescription(name: "Tag", properties: [
                .attribute("name", .string, isOptional: false, defaultValue: ""),
                .relationship("notes", destination: "Note", toMany: true, inverse: "tags"),
            ]),
        ])
        #expect(model.versionHash == inCode.versionHash)
    }

    @Test func typesMapAsDesignSays() throws {
        let model = TestModels.typed()
        try model.validate()
        let sample = try #require(model.entitiesByName["Sample"])
        let types = Dictionary(uniqueKeysWithValues: sample.attributes.map { ($0.name, $0.attributeType) })
        #expect(types == [
            "int": .integer64, "int16": .integer16, "int32": .integer32, "int64": .integer64, "double": .double,
            "float": .float, "decimal": .decimal, "flag": .boolean, "text": .string, "day": .date, "blob": .binaryData,
            "identifier": .uuid, "link": .uri, "priority": .string, "size": .integer64, "geometry": .transformable,
            "words": .transformable,
        ])
        #expect(sample.attributesByName["priority"]?.defaultValue as? String == "normal")
        #expect(sample.attributesByName["int"]?.defaultValue as? Int64 == 7)
        #expect(sample.attributesByName["geometry"]?.valueType == Geometry.self)
        #expect(sample.attributesByName["computed"] == nil)
        #expect(sample.relationshipsByName["ordered"]?.isOrdered == true)
        #expect(sample.relationshipsByName["ordered"]?.deleteRule == .deny)
        #expect(sample.relationshipsByName["owner"]?.inverseRelationship == nil)
        let circle = try #require(model.entitiesByName["Circle"])
        #expect(circle.superentity?.name == "Shape")
        #expect(circle.properties.map(\.name) == ["label", "radius"])
        #expect(model.entitiesByName["Shape"] != nil)
    }

    @Test(arguments: StoreKind.everyStore)
    func typedAccessorsReadWriteFaultAndTrackChanges(_ kind: StoreKind) throws {
        let stack = try TestStack(kind, model: TestModels.typed())
        let context = stack.context()
        let inbox = Folder(context: context)
        inbox.name = "Inbox"
        let note = Note(context: context)
        #expect(note.title == "")
        #expect(note.rank == 0)
        #expect(note.created == nil)
        note.title = "Hello"
        note.rank = 3
        note.created = Date(timeIntervalSinceReferenceDate: 10)
        note.folder = inbox
        note.slug = "hello"
        note.scratch = 42
        #expect(inbox.notes == [note])
        #expect(note.value(forKey: "title") as? String == "Hello")
        #expect(note.value(forKey: "rank") as? Int64 == 3)
        note.setValue("Hi", forKey: "title")
        #expect(note.title == "Hi")
        try context.save()

        let other = stack.context("other")
        let fetched = try #require(try other.fetch(Note.fetchRequest()).first)
        #expect(fetched.isFault)
        #expect(fetched.title == "Hi")
        #expect(!fetched.isFault)
        #expect(fetched.rank == 3)
        #expect(fetched.created == Date(timeIntervalSinceReferenceDate: 10))
        #expect(fetched.folder?.name == "Inbox")
        #expect(fetched.scratch == 0)
        fetched.rank = 4
        #expect(fetched.isUpdated)
        #expect(fetched.changedValues()["rank"] as? Int64 == 4)
        fetched.folder = nil
        try other.save()
        context.refreshAllObjects()
        #expect(note.rank == 4)
        #expect(inbox.notes.isEmpty)
    }

    @Test(arguments: StoreKind.everyStore)
    func everyPropertyShapeRoundTripsThroughTheStore(_ kind: StoreKind) throws {
        let stack = try TestStack(kind, model: TestModels.typed())
        let context = stack.context()
        let sample = Sample(context: context)
        #expect(sample.int == 7)
        #expect(sample.double == 1.5)
        #expect(sample.priority == .normal)
        #expect(sample.size == nil)
        #expect(sample.words == [])
        let owner = Folder(context: context)
        let tags = (0..<3).map { i in
            let tag = Tag(context: context)
            tag.name = "t\(i)"
            return tag
        }
        sample.int = 1 << 40
        sample.int16 = -3
        sample.int32 = 70_000
        sample.int64 = .max
        sample.double = 2.25
        sample.float = 0.5
        sample.decimal = Decimal(string: "12.34")!
        sample.flag = true
        sample.text = "text"
        sample.day = Date(timeIntervalSinceReferenceDate: 99)
        sample.blob = Data([1, 2, 3])
        sample.identifier = UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")
        sample.link = URL(string: "https://example.com/a")
        sample.priority = .high
        sample.size = .large
        sample.geometry = Geometry(width: 2, height: 3)
        sample.words = ["a", "b"]
        sample.owner = owner
        sample.ordered = [tags[2], tags[0], tags[1]]
        #expect(sample.value(forKey: "priority") as? String == "high")
        #expect(sample.value(forKey: "size") as? Int64 == 2)
        try context.save()

        let other = stack.context("other")
        let copy = try #require(try other.fetch(Sample.fetchRequest()).first)
        #expect(copy.int == 1 << 40)
        #expect(copy.int16 == -3)
        #expect(copy.int32 == 70_000)
        #expect(copy.int64 == .max)
        #expect(copy.double == 2.25)
        #expect(copy.float == 0.5)
        #expect(copy.decimal == Decimal(string: "12.34")!)
        #expect(copy.flag)
        #expect(copy.text == "text")
        #expect(copy.day == Date(timeIntervalSinceReferenceDate: 99))
        #expect(copy.blob == Data([1, 2, 3]))
        #expect(copy.identifier == UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F"))
        #expect(copy.link == URL(string: "https://example.com/a"))
        #expect(copy.priority == .high)
        #expect(copy.size == .large)
        #expect(copy.geometry == Geometry(width: 2, height: 3))
        #expect(copy.words == ["a", "b"])
        #expect(copy.owner?.objectID == owner.objectID)
        #expect(copy.ordered.map(\.name) == ["t2", "t0", "t1"])
        #expect(copy.computed == 2 << 40)
        copy.int32 = nil
        copy.geometry = nil
        copy.size = nil
        try other.save()
        let third = stack.context("third")
        let again = try #require(try third.fetch(Sample.fetchRequest()).first)
        #expect(again.int32 == nil)
        #expect(again.geometry == nil)
        #expect(again.size == nil)
    }

    @Test func subclassesInheritTheirSuperclassProperties() throws {
        let stack = try TestStack(.sqlite, model: TestModels.typed())
        let context = stack.context()
        let circle = Circle(context: context)
        circle.label = "c"
        circle.radius = 2
        #expect(circle.entity.name == "Circle")
        #expect(circle.value(forKey: "label") as? String == "c")
        try context.save()
        let shapes = try stack.context("other").fetch(Shape.fetchRequest())
        #expect(shapes.count == 1)
        let fetched = try #require(shapes.first as? Circle)
        #expect(fetched.label == "c")
        #expect(fetched.radius == 2)
        let request: FetchRequest<Circle> = Circle.fetchRequest()
        #expect(request.entityName == "Circle")
    }

    @Test func typedAndInCodeEntitiesMixInOneModel() throws {
        let model = ManagedObjectModel(types: [Folder.self, Note.self, Tag.self], entities: [
            EntityDescription(name: "Log", properties: [.attribute("line", .string)]),
        ])
        try model.validate()
        let stack = try TestStack(.sqlite, model: model)
        let context = stack.context()
        let note = Note(context: context)
        note.title = "typed"
        let log = context.insertNewObject(forEntityName: "Log")
        log.setValue("dynamic", forKey: "line")
        try context.save()
        #expect(try context.count(for: FetchRequest<ManagedObject>(entityName: "Log")) == 1)
        #expect(try context.fetch(Note.fetchRequest()).map(\.title) == ["typed"])
    }

    @Test func theUniqueAttributeIsAConstraint() throws {
        let stack = try TestStack(.sqlite, model: TestModels.typed())
        let context = stack.context()
        for _ in 0..<2 {
            let note = Note(context: context)
            note.slug = "same"
        }
        #expect(throws: ObjectGraphError.self) { try context.save() }
    }
}
