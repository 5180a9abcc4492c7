import Foundation
import GRDB
import Testing

import ObjectGraph
@testable import ObjectGraphCore

/// Uniqueness constraints in the SQLite stores ObjectGraph creates are Core Data's UNIQUE indexes;
/// what they refuse is still a constraint conflict for the merge policies.
@Suite("Uniqueness constraints as UNIQUE indexes")
struct UniquenessIndexTests {
    private static func uniqueIndexes(_ db: Database) throws -> Set<String> {
        Set(try String.fetchAll(db, sql: "SELECT sql FROM sqlite_master WHERE type = 'index' AND sql LIKE 'CREATE UNIQUE INDEX%'")
            .map { $0.replacingOccurrences(of: "\"", with: "") })
    }

    @Test("a store created from a fixture's model has the UNIQUE indexes Apple's Core Data created for it", .needsCoreDataFixtures)
    func applesIndexes() throws {
        var compared = 0
        for (fixture, url) in try CoreDataFixtures.stores() where fixture.hasPrefix("coredataplus") {
            let model = try CoreDataFixtures.modelThatWrote(url, fixture: fixture)
            let directory = TemporaryDirectory()
            let created = directory.file("new.sqlite")
            let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
            try coordinator.removePersistentStore(try coordinator.addPersistentStore(type: .sqlite, at: created))
            let ours = try DatabaseQueue(path: created.path).read(Self.uniqueIndexes)
            let apples = try CoreDataFixtures.withCopy(of: url, Self.uniqueIndexes)
                .filter { !$0.contains("TRANSACTIONSTRING") }  // persistent history's own
            #expect(ours == apples, "\(fixture)/\(url.lastPathComponent)")
            if !apples.isEmpty { compared += 1 }
        }
        #expect(compared == 3)  // SampleModel V1 and V2, SampleModel2 (SampleModel3 has no constraint)
    }

    private func stack() throws -> (TemporaryDirectory, URL, PersistentStoreCoordinator) {
        let directory = TemporaryDirectory()
        let url = directory.file("users.sqlite")
        let model = ManagedObjectModel(entities: [
            EntityDescription(name: "User", properties: [
                .attribute("email", .string), .attribute("name", .string), .attribute("team", .integer32), .attribute("number", .integer32),
            ], uniquenessConstraints: [["email"], ["team", "number"]]),
        ])
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        try coordinator.addPersistentStore(type: .sqlite, at: url)
        return (directory, url, coordinator)
    }

    @Test("the index refuses a duplicate written around ObjectGraph; rows without the values (NULLs) never collide")
    func theIndexRefusesDuplicates() throws {
        let (directory, url, coordinator) = try stack()
        let context = ManagedObjectContext(concurrencyType: .confinement)
        context.persistentStoreCoordinator = coordinator
        _ = context.insert("User", ["email": "a@x", "team": Int32(1), "number": Int32(7)])
        _ = context.insert("User", ["name": "no email"])
        _ = context.insert("User", ["name": "no email either"])
        try context.save()
        let queue = try DatabaseQueue(path: url.path)
        let error = try #require(throws: DatabaseError.self) {
            try queue.write { try $0.execute(sql: "INSERT INTO ZUSER (Z_PK, Z_ENT, Z_OPT, ZEMAIL) VALUES (99, 1, 1, 'a@x')") }
        }
        #expect(error.resultCode.primaryResultCode == .SQLITE_CONSTRAINT)
        #expect(throws: DatabaseError.self) {
            try queue.write { try $0.execute(sql: "INSERT INTO ZUSER (Z_PK, Z_ENT, Z_OPT, ZTEAM, ZNUMBER) VALUES (99, 1, 1, 1, 7)") }
        }
        try queue.write { try $0.execute(sql: "INSERT INTO ZUSER (Z_PK, Z_ENT, Z_OPT, ZTEAM, ZNUMBER) VALUES (99, 1, 1, 1, 8)") }
        try queue.close()
        _ = directory
    }

    @Test("an insert or an update that takes another object's values is a constraint conflict, which the merge policies resolve")
    func conflictsStillReachTheMergePolicy() throws {
        let (directory, _, coordinator) = try stack()
        _ = directory
        func context(_ policy: MergePolicy = .error) -> ManagedObjectContext {
            let context = ManagedObjectContext(concurrencyType: .confinement)
            context.persistentStoreCoordinator = coordinator
            context.mergePolicy = policy
            return context
        }
        let first = context()
        let alice = first.insert("User", ["email": "alice@x", "name": "Alice"])
        let bob = first.insert("User", ["email": "bob@x", "name": "Bob"])
        try first.save()

        let inserting = context()
        _ = inserting.insert("User", ["email": "alice@x", "name": "Impostor"])
        let insertError = try #require(throws: ObjectGraphError.self) { try inserting.save() }
        #expect(insertError.code == .constraintConflict && insertError.message.contains("alice@x"))

        let updating = context()
        try updating.existingObject(with: bob.objectID).setValue("alice@x", forKey: "email")
        let updateError = try #require(throws: ObjectGraphError.self) { try updating.save() }
        #expect(updateError.code == .constraintConflict)

        let trumping = context(.mergeByPropertyObjectTrump)
        let duplicate = trumping.insert("User", ["email": "alice@x", "name": "Alice Again"])
        try trumping.save()
        #expect(duplicate.objectID == alice.objectID)
        let users = try context().all("User")
        #expect(users.count == 2)
        #expect(Set(users.compactMap { $0.value(forKey: "name") as? String }) == ["Alice Again", "Bob"])
    }

    @Test("a sub-entity's constraint on an inherited attribute binds its own rows only")
    func subEntityConstraintOnAnInheritedAttribute() throws {
        let directory = TemporaryDirectory()
        let model = ManagedObjectModel(entities: [
            EntityDescription(name: "Item", properties: [.attribute("code", .string)]),
            EntityDescription(name: "Tool", superentity: "Item", properties: [.attribute("weight", .double)], uniquenessConstraints: [["code"]]),
        ])
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        try coordinator.addPersistentStore(type: .sqlite, at: directory.file("items.sqlite"))
        let context = ManagedObjectContext(concurrencyType: .confinement)
        context.persistentStoreCoordinator = coordinator
        _ = context.insert("Item", ["code": "x"])
        _ = context.insert("Item", ["code": "x"])
        _ = context.insert("Tool", ["code": "x"])
        try context.save()
        _ = context.insert("Tool", ["code": "x"])
        let error = try #require(throws: ObjectGraphError.self) { try context.save() }
        #expect(error.code == .constraintConflict)
    }

    @Test("two objects that exchange their values in one save keep them exchanged; an insert may take the value an update gives up")
    func aSwapInOneSave() throws {
        let (directory, _, coordinator) = try stack()
        _ = directory
        let context = ManagedObjectContext(concurrencyType: .confinement)
        context.persistentStoreCoordinator = coordinator
        let a = context.insert("User", ["email": "a@x"])
        let b = context.insert("User", ["email": "b@x"])
        try context.save()
        a.setValue("b@x", forKey: "email")
        b.setValue("a@x", forKey: "email")
        try context.save()
        let check = ManagedObjectContext(concurrencyType: .confinement)
        check.persistentStoreCoordinator = coordinator
        #expect(try check.existingObject(with: a.objectID).value(forKey: "email") as? String == "b@x")
        #expect(try check.existingObject(with: b.objectID).value(forKey: "email") as? String == "a@x")
        a.setValue("c@x", forKey: "email")
        let newcomer = context.insert("User", ["email": "b@x", "team": Int32(3), "number": Int32(1)])
        try context.save()
        check.reset()
        #expect(try check.existingObject(with: newcomer.objectID).value(forKey: "email") as? String == "b@x")
        #expect(try check.all("User").count == 3)
        // A real collision in a save of several objects is still refused, and the save leaves nothing behind.
        a.setValue("a@x", forKey: "email")
        _ = context.insert("User", ["email": "d@x"])
        let error = try #require(throws: ObjectGraphError.self) { try context.save() }
        #expect(error.code == .constraintConflict)
        check.reset()
        #expect(try check.existingObject(with: a.objectID).value(forKey: "email") as? String == "c@x")
        #expect(try check.all("User").count == 3)
    }
}
