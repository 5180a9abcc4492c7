import Foundation
import Testing
import ObjectGraph
@testable import ObjectGraphCore

/// A store backend so test objects can have permanent IDs: an in-memory store nobody writes to.
typealias PredicateTestBackend = InMemoryStore

/// An object in memory, evaluated by predicates and sort descriptors like a real object.
final class FakeObject: PredicateSubject {
    let entity: EntityDescription
    let id: ManagedObjectID
    var values: [String: Value] = [:]
    var toOne: [String: FakeObject] = [:]
    var toMany: [String: [FakeObject]] = [:]

    init(entity: EntityDescription, id: ManagedObjectID) {
        self.entity = entity
        self.id = id
    }

    var primaryKey: Int64 { id.primaryKey ?? -1 }
    var predicateObjectID: ManagedObjectID? { id }
    var predicateEntity: EntityDescription { entity }

    func predicateValue(forKey key: String) throws -> PredicateOperand {
        if let relationship = entity.relationshipsByName[key] {
            return relationship.isToMany ? .objects(toMany[key] ?? []) : .object(toOne[key])
        }
        return .value(values[key] ?? .null)
    }
}

/// A small object graph, both in memory (``FakeObject``s) and in an SQLite database, so that tests
/// can check that SQL and in-memory evaluation agree.
///
/// Folder(name, rank) ←→ notes; Note(title, body, rank, serial, score, price, created, flag, uuid,
/// link, blob, secret [transient]) with folder (to-one) and tags (many-to-many with Tag(name)).
final class PredicateTestGraph {
    static let model = ManagedObjectModel(entities: [
        EntityDescription(name: "Folder", properties: [
            .attribute("name", .string),
            .attribute("rank", .integer64),
            .relationship("notes", destination: "Note", toMany: true, inverse: "folder"),
        ]),
        EntityDescription(name: "Note", properties: [
            .attribute("title", .string),
            .attribute("body", .string),
            .attribute("rank", .integer64),
            .attribute("serial", .integer64),
            .attribute("score", .double),
            .attribute("price", .decimal),
            .attribute("created", .date),
            .attribute("flag", .boolean),
            .attribute("uuid", .uuid),
            .attribute("link", .uri),
            .attribute("blob", .binaryData),
            .attribute("secret", .string, isTransient: true),
            .relationship("folder", destination: "Folder", toMany: false, inverse: "notes"),
            .relationship("tags", destination: "Tag", toMany: true, inverse: "notes"),
        ]),
        EntityDescription(name: "Tag", properties: [
            .attribute("name", .string),
            .relationship("notes", destination: "Note", toMany: true, inverse: "tags"),
        ]),
    ])

    static let uuid1 = UUID(uuidString: "00000000-0000-0000-0000-000000000001")!
    static let uuid2 = UUID(uuidString: "F0000000-0000-0000-0000-000000000002")!
    static func date(_ seconds: Double) -> Date { Date(timeIntervalSinceReferenceDate: seconds) }

    let store: PersistentStore
    let database: SQLQueryTestDatabase
    var folders: [FakeObject] = []
    var notes: [FakeObject] = []
    var tags: [FakeObject] = []

    var model: ManagedObjectModel { Self.model }
    var schema: CoreDataLayout { database.schema }

    init() throws {
        store = PersistentStore(
            type: .sqlite, url: nil, configurationName: nil, isReadOnly: false, durability: .full,
            backend: PredicateTestBackend(model: Self.model))
        database = try SQLQueryTestDatabase(model: Self.model)

        let inbox = try insert("Folder", ["name": .string("Inbox"), "rank": .int(1)])
        let work = try insert("Folder", ["name": .string("Work"), "rank": .int(2)])
        let unnamed = try insert("Folder", [:])
        _ = try insert("Folder", ["name": .string("Archive"), "rank": .int(4)])

        let red = try insert("Tag", ["name": .string("red")])
        let green = try insert("Tag", ["name": .string("green")])
        let blue = try insert("Tag", ["name": .string("blue")])
        _ = try insert("Tag", ["name": .string("unused")])

        func note(_ values: [String: Value], folder: FakeObject? = nil, tags: [FakeObject] = []) throws {
            var values = values
            values["serial"] = .int(Int64(notes.count + 1))
            let note = try insert("Note", values, folder: folder)
            for tag in tags { try link(note, tag) }
        }
        // 1
        try note([
            "title": .string("apple"), "body": .string("Crème brûlée"), "rank": .int(1), "score": .double(1.5),
            "price": .decimal(Decimal(string: "10.25")!), "created": .date(Self.date(1000)), "flag": .bool(true),
            "uuid": .uuid(Self.uuid1), "link": .url(URL(string: "https://a.example/x")!), "blob": .data(Data([1, 2, 3])),
        ], folder: inbox, tags: [red, green])
        // 2
        try note([
            "title": .string("Apple"), "rank": .int(2), "price": .decimal(3), "created": .date(Self.date(2000)),
            "flag": .bool(false), "uuid": .uuid(Self.uuid2), "link": .url(URL(string: "https://b.example")!),
            "blob": .data(Data([1, 2])),
        ], folder: inbox, tags: [red])
        // 3
        try note([
            "title": .string("banana 50%"), "body": .string("100% pure_cotton"), "rank": .int(3), "score": .double(2),
        ], folder: work)
        // 4
        try note([
            "title": .string("Ápple pie"), "body": .string("naïve café"), "score": .double(-1),
            "price": .decimal(Decimal(string: "0.5")!), "created": .date(Self.date(3000)), "flag": .bool(true),
        ], tags: [green, blue])
        // 5
        try note([
            "title": .string("cherry"), "body": .string("a*b?c"), "rank": .int(5), "score": .double(5),
            "price": .decimal(100), "created": .date(Self.date(4000)), "flag": .bool(false),
        ], folder: work, tags: [blue])
        // 6
        try note([
            "title": .string(""), "body": .string(""), "rank": .int(0), "score": .double(0), "price": .decimal(0),
            "flag": .bool(false),
        ], folder: unnamed)
        // 7
        try note(["rank": .int(7)], folder: inbox)
        // 8
        try note(["title": .string("日本語テキスト"), "body": .string("emoji 👍🏽 ok"), "rank": .int(8)], folder: work, tags: [red])
        // 9
        try note(["title": .string("straße"), "body": .string("STRASSE"), "rank": .int(9)])
        // 10, 11: decomposed and precomposed é
        try note(["title": .string("e\u{301}clair"), "body": .string("e\u{301}clair")])
        try note(["title": .string("\u{E9}clair"), "body": .string("e\u{301}clair")])
        // 12: nil title and rank
        try note(["body": .string("%_")])
        // 13, 14: around the surrogate gap; 15: the last scalar
        try note(["title": .string("a\u{D7FF}z"), "rank": .int(13)])
        try note(["title": .string("a\u{E000}"), "rank": .int(14)])
        try note(["title": .string("zz\u{10FFFF}x"), "rank": .int(15)])
        // 16: same sort values as 1 except the serial
        try note(["title": .string("apple"), "rank": .int(1), "score": .double(1.5)], folder: inbox)
    }

    private func entity(_ name: String) -> EntityDescription { Self.model.entitiesByName[name]! }

    @discardableResult
    private func insert(_ entityName: String, _ values: [String: Value], folder: FakeObject? = nil) throws -> FakeObject {
        let entity = entity(entityName)
        var objects: [FakeObject] {
            get {
                switch entityName {
                case "Folder": folders
                case "Note": notes
                default: tags
                }
            }
            set {
                switch entityName {
                case "Folder": folders = newValue
                case "Note": notes = newValue
                default: tags = newValue
                }
            }
        }
        let pk = Int64(objects.count + 1)
        let object = FakeObject(entity: entity, id: ManagedObjectID(entity: entity, store: store, primaryKey: pk))
        object.values = values
        var columns = [CoreDataLayout.primaryKeyColumn, CoreDataLayout.entityColumn, CoreDataLayout.versionColumn]
        var arguments: [Value] = [.int(pk), .int(Int64(schema.entityNumber(for: entity))), .int(1)]
        for (key, value) in values.sorted(by: { $0.key < $1.key }) {
            columns.append(CoreDataLayout.quote(schema.columnName(for: entity.attributesByName[key]!)))
            arguments.append(value)
        }
        if let folder {
            object.toOne["folder"] = folder
            folder.toMany["notes", default: []].append(object)
            columns.append(CoreDataLayout.quote(schema.columnName(for: entity.relationshipsByName["folder"]!)))
            arguments.append(.objectID(folder.id))
        }
        try database.execute(
            "INSERT INTO \(CoreDataLayout.quote(schema.tableName(for: entity))) (\(columns.joined(separator: ", "))) "
                + "VALUES (\(columns.map { _ in "?" }.joined(separator: ", ")))",
            arguments)
        objects.append(object)
        return object
    }

    private func link(_ note: FakeObject, _ tag: FakeObject) throws {
        note.toMany["tags", default: []].append(tag)
        tag.toMany["notes", default: []].append(note)
        guard case .joinTable(let table, let source, let destination, _, _) =
            schema.storage(forToMany: entity("Note").relationshipsByName["tags"]!)
        else { throw ObjectGraphError(.invalidModel, "Note.tags should use a join table") }
        try database.execute(
            "INSERT INTO \(CoreDataLayout.quote(table)) (\(CoreDataLayout.quote(source)), \(CoreDataLayout.quote(destination))) VALUES (?, ?)",
            [.int(note.primaryKey), .int(tag.primaryKey)])
    }

    func objects(of entityName: String) -> [FakeObject] {
        switch entityName {
        case "Folder": folders
        case "Note": notes
        default: tags
        }
    }

    /// The primary keys of the objects the predicate is true for, evaluated in memory.
    func memoryKeys(_ entityName: String, _ predicate: FetchPredicate) throws -> [Int64] {
        try objects(of: entityName).filter { try predicate.evaluate(with: $0) }.map(\.primaryKey).sorted()
    }

    /// The primary keys of the rows an SQL fetch with the predicate returns.
    func sqlKeys(_ entityName: String, _ predicate: FetchPredicate) throws -> [Int64] {
        try database.fetchPrimaryKeys(entityName, predicate: predicate)
    }
}

/// A predicate to check on a graph, with the answer expected (if stated), for parameterized tests.
struct PredicateCase: Sendable, CustomTestStringConvertible {
    let entity: String
    let predicate: FetchPredicate
    let expected: [Int64]?

    init(_ entity: String = "Note", _ format: String, _ arguments: [any Sendable] = [], _ expected: [Int64]? = nil) {
        self.entity = entity
        self.predicate = FetchPredicate(format: format, argumentArray: arguments)
        self.expected = expected
    }

    var testDescription: String { "\(entity): \(predicate.predicateFormat)" }
}

extension PredicateCase {
    /// Expects SQL and in-memory evaluation on `graph` to select the same objects, and the expected
    /// ones when the case states them.
    func expectSameAnswers(in graph: PredicateTestGraph) throws {
        let memory = try graph.memoryKeys(entity, predicate)
        let sql = try graph.sqlKeys(entity, predicate)
        #expect(sql == memory, "SQL and memory disagree on \(predicate.predicateFormat)")
        if let expected {
            #expect(memory == expected.sorted(), "unexpected answer for \(predicate.predicateFormat)")
        }
    }
}
