import Foundation
import Testing
import ObjectGraph
@testable import ObjectGraphCore

/// The PostgreSQL store as several processes use it: coordinators of their own on one database.
/// (The store-parameterized suites run every store-level behaviour on PostgreSQL too.)
@Suite("PostgreSQL store: coordinators sharing a database", .needsPostgreSQL)
struct PostgresStoreTests {
    /// A new database, and `count` coordinators with a store on it each.
    func coordinators(_ count: Int, model: ManagedObjectModel = TestModels.notes()) throws -> (URL, [PersistentStoreCoordinator]) {
        let url = try PostgresTestServer.shared.get().makeDatabase()
        let coordinators = try (0..<count).map { _ in
            let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
            try coordinator.addPersistentStore(type: .postgres, at: url)
            return coordinator
        }
        return (url, coordinators)
    }

    func context(_ coordinator: PersistentStoreCoordinator, _ name: String = "test") -> ManagedObjectContext {
        let context = ManagedObjectContext(concurrencyType: .confinement)
        context.name = name
        context.persistentStoreCoordinator = coordinator
        return context
    }

    @Test func aSaveInOneCoordinatorIsReadByAnother() throws {
        let (_, c) = try coordinators(2)
        let a = context(c[0], "a")
        let folder = a.insert("Folder", ["name": "Inbox"])
        for i in 0..<3 { a.insert("Note", ["title": "n\(i)", "rank": Int64(i), "folder": folder]) }
        try a.save()
        #expect(c[0].persistentStores[0].identifier == c[1].persistentStores[0].identifier)

        let b = context(c[1], "b")
        let notes = try b.all("Note", sortedBy: "rank")
        #expect(notes.map { $0.value(forKey: "title") as? String } == ["n0", "n1", "n2"])
        #expect((notes[0].value(forKey: "folder") as? ManagedObject)?.value(forKey: "name") as? String == "Inbox")
        let inbox = try #require(try b.all("Folder").first)
        #expect((inbox.value(forKey: "notes") as? Set<ManagedObject>)?.count == 3)
        notes[1].setValue("changed in b", forKey: "title")
        try b.save()

        let again = context(c[0], "a again")
        let read = try again.existingObject(with: try #require(c[0].managedObjectID(forURIRepresentation: notes[1].objectID.uriRepresentation())))
        #expect(read.value(forKey: "title") as? String == "changed in b")
    }

    /// Each merge policy, and the note's (title, rank) in the store after "mine" changed the title
    /// of a note (base, 1) that "theirs" saved as (theirs, 2) first; nil: the save fails.
    static let policyOutcomes: [(MergePolicy, (String, Int64)?)] = [
        (.error, nil),
        (.mergeByPropertyObjectTrump, ("mine", 2)),
        (.mergeByPropertyStoreTrump, ("theirs", 2)),
        (.overwrite, ("mine", 1)),
        (.rollback, ("theirs", 2)),
    ]

    @Test("a conflict between coordinators resolves by each merge policy", arguments: policyOutcomes)
    func conflictsAcrossCoordinators(_ policy: MergePolicy, _ expected: (String, Int64)?) throws {
        let (_, c) = try coordinators(3)
        let setup = context(c[0], "setup")
        let note = setup.insert("Note", ["title": "base", "rank": 1])
        try setup.save()
        let theirs = try context(c[0], "theirs").existingObject(with: note.objectID)
        let second = context(c[1], "mine")
        second.mergePolicy = policy
        let uri = note.objectID.uriRepresentation()
        let mine = try second.existingObject(with: try #require(c[1].managedObjectID(forURIRepresentation: uri)))
        _ = mine.value(forKey: "title")
        theirs.setValue("theirs", forKey: "title")
        theirs.setValue(Int64(2), forKey: "rank")
        try theirs.managedObjectContext!.save()
        mine.setValue("mine", forKey: "title")
        if let expected {
            try second.save()
            // Read by a third coordinator (the first one's row cache holds its own save until it hears of the second).
            let stored = try context(c[2], "check").existingObject(with: try #require(c[2].managedObjectID(forURIRepresentation: uri)))
            #expect(stored.value(forKey: "title") as? String == expected.0)
            #expect(stored.value(forKey: "rank") as? Int64 == expected.1)
        } else {
            let error = try #require(throws: ObjectGraphError.self) { try second.save() }
            #expect(error.code == .mergeConflict)
            #expect(second.hasChanges)
            let stored = try context(c[2], "check").existingObject(with: try #require(c[2].managedObjectID(forURIRepresentation: uri)))
            #expect(stored.value(forKey: "title") as? String == "theirs")
        }
    }

    @Test func coordinatorsSavingAtOnceGetDistinctKeys() async throws {
        let (_, c) = try coordinators(3)
        try await withThrowingTaskGroup(of: [Int64].self) { group in
            for (n, coordinator) in c.enumerated() {
                group.addTask {
                    let context = ManagedObjectContext(concurrencyType: .privateQueue)
                    context.persistentStoreCoordinator = coordinator
                    return try await context.perform {
                        var keys: [Int64] = []
                        for save in 0..<5 {
                            let notes = (0..<10).map { i in context.insert("Note", ["title": "c\(n) s\(save) n\(i)"]) }
                            try context.save()
                            keys += notes.map { $0.objectID.primaryKey ?? -1 }
                        }
                        return keys
                    }
                }
            }
            var all: [Int64] = []
            for try await keys in group { all += keys }
            #expect(all.count == 150)
            #expect(Set(all).count == 150)
        }
        #expect(try context(c[0]).count(for: FetchRequest<ManagedObject>(entityName: "Note")) == 150)
    }

    @Test func aStringHoldingNULIsRefusedAndNothingIsSaved() throws {
        let (_, c) = try coordinators(1)
        let context = context(c[0])
        context.insert("Note", ["title": "fine"])
        let bad = context.insert("Note", ["title": "a\u{0}b"])
        let error = try #require(throws: ObjectGraphError.self) { try context.save() }
        #expect(error.code == .validation)
        #expect(error.entityName == "Note")
        #expect(error.key == "title")
        #expect(error.message.contains("U+0000"))
        #expect(context.hasChanges)
        #expect(try self.context(c[0], "check").count(for: FetchRequest<ManagedObject>(entityName: "Note")) == 0)
        bad.setValue("ab", forKey: "title")
        try context.save()
        #expect(try self.context(c[0], "check").count(for: FetchRequest<ManagedObject>(entityName: "Note")) == 2)
    }

    @Test func everyAttributeTypeKeepsItsValue() throws {
        let model = ManagedObjectModel(entities: [
            EntityDescription(name: "Item", properties: [
                .attribute("i16", .integer16), .attribute("i32", .integer32), .attribute("i64", .integer64),
                .attribute("flag", .boolean), .attribute("d", .double), .attribute("f", .float), .attribute("nan", .double),
                .attribute("negativeZero", .double), .attribute("price", .decimal), .attribute("bigPrice", .decimal),
                .attribute("when", .date), .attribute("text", .string), .attribute("empty", .string), .attribute("link", .uri),
                .attribute("bytes", .binaryData), .attribute("noBytes", .binaryData), .attribute("id", .uuid), .attribute("missing", .string),
            ]),
        ])
        let (_, c) = try coordinators(2, model: model)
        let values: [String: Any] = [
            "i16": Int16(-7), "i32": Int32.max, "i64": Int64.min, "flag": true, "d": 1.0 / 3.0, "f": Float(0.5), "nan": Double.nan,
            "negativeZero": -0.0, "price": Decimal(string: "12345678901234567890.123456789")!, "bigPrice": Decimal(string: "-0.000001")!,
            "when": Date(timeIntervalSinceReferenceDate: 123_456.789), "text": "日本 👍🏽 'quoted' \"double\" \\", "empty": "",
            "link": URL(string: "https://example.com/a?b=c")!, "bytes": Data([0, 1, 2, 255]), "noBytes": Data(),
            "id": UUID(uuidString: "F0000000-0000-0000-0000-000000000002")!,
        ]
        let writer = context(c[0])
        writer.insert("Item", values)
        try writer.save()
        let item = try #require(try context(c[1]).all("Item").first)
        #expect(item.value(forKey: "i16") as? Int16 == -7)
        #expect(item.value(forKey: "i32") as? Int32 == Int32.max)
        #expect(item.value(forKey: "i64") as? Int64 == Int64.min)
        #expect(item.value(forKey: "flag") as? Bool == true)
        #expect(item.value(forKey: "d") as? Double == 1.0 / 3.0)
        #expect(item.value(forKey: "f") as? Float == 0.5)
        #expect((item.value(forKey: "nan") as? Double)?.isNaN == true)
        #expect((item.value(forKey: "negativeZero") as? Double)?.bitPattern == (-0.0 as Double).bitPattern)
        #expect(item.value(forKey: "price") as? Decimal == Decimal(string: "12345678901234567890.123456789")!)
        #expect(item.value(forKey: "bigPrice") as? Decimal == Decimal(string: "-0.000001")!)
        #expect(item.value(forKey: "when") as? Date == Date(timeIntervalSinceReferenceDate: 123_456.789))
        #expect(item.value(forKey: "text") as? String == "日本 👍🏽 'quoted' \"double\" \\")
        #expect(item.value(forKey: "empty") as? String == "")
        #expect(item.value(forKey: "link") as? URL == URL(string: "https://example.com/a?b=c")!)
        #expect(item.value(forKey: "bytes") as? Data == Data([0, 1, 2, 255]))
        #expect(item.value(forKey: "noBytes") as? Data == Data())
        #expect(item.value(forKey: "id") as? UUID == UUID(uuidString: "F0000000-0000-0000-0000-000000000002")!)
        #expect(item.value(forKey: "missing") == nil)
    }

    @Test func aUniquenessConstraintHoldsAcrossCoordinators() throws {
        let model = ManagedObjectModel(entities: [
            EntityDescription(name: "User", properties: [.attribute("email", .string), .attribute("name", .string)], uniquenessConstraints: [["email"]]),
        ])
        let (_, c) = try coordinators(2, model: model)
        let a = context(c[0], "a")
        a.insert("User", ["email": "x@example.com", "name": "from a"])
        try a.save()
        let b = context(c[1], "b")
        let duplicate = b.insert("User", ["email": "x@example.com", "name": "from b"])
        let error = try #require(throws: ObjectGraphError.self) { try b.save() }
        #expect(error.code == .constraintConflict)
        #expect(error.message.contains("x@example.com"))
        #expect(b.hasChanges)
        // With a policy that trumps, the new object takes the existing row's place (an upsert).
        b.mergePolicy = .mergeByPropertyObjectTrump
        try b.save()
        let users = try context(c[0], "check").all("User")
        #expect(users.count == 1)
        #expect(users.first?.value(forKey: "name") as? String == "from b")
        _ = duplicate
    }

    @Test func aReadOnlyStoreRefusesToSave() throws {
        let (url, _) = try coordinators(1)
        let coordinator = PersistentStoreCoordinator(managedObjectModel: TestModels.notes())
        try coordinator.addPersistentStore(type: .postgres, at: url, options: [PersistentStoreOption.readOnly: true])
        let context = context(coordinator)
        context.insert("Note", ["title": "x"])
        let error = try #require(throws: ObjectGraphError.self) { try context.save() }
        #expect(error.code == .readOnly)
    }

    @Test func addingTheSameDatabaseTwiceToOneCoordinatorIsRefused() throws {
        let (url, c) = try coordinators(1)
        let error = try #require(throws: ObjectGraphError.self) { try c[0].addPersistentStore(type: .postgres, at: url) }
        #expect(error.message.contains("already added"))
    }
}
