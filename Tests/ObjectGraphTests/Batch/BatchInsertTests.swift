import Foundation
import Testing
import ObjectGraph
@testable import ObjectGraphCore

@Suite("Batch insert writes rows straight to the stores")
struct BatchInsertTests {
    @Test(arguments: StoreKind.everyStore)
    func rowsAreInsertedWithTheModelsDefaultsForKeysTheyDoNotName(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        let context = stack.context()
        let insert = BatchInsertRequest(entityName: "Note", objects: [
            ["title": "b", "rank": Int64(7)],
            ["title": "a"],
        ])
        insert.resultType = .objectIDs
        #expect(insert.requestType == .batchInsertRequestType)
        let result = try #require(try context.execute(insert) as? BatchInsertResult)
        #expect(result.resultType == .objectIDs)
        let ids = try #require(result.result as? [ManagedObjectID])
        #expect(ids.count == 2)
        #expect(ids.allSatisfy { !$0.isTemporaryID && $0.entityName == "Note" })
        let notes = try stack.stored("Note", sortedBy: "title")
        #expect(notes.map { $0.value(forKey: "title") as? String } == ["a", "b"])
        #expect(notes.map { $0.value(forKey: "rank") as? Int64 } == [0, 7])
        #expect(Set(notes.map(\.objectID)) == Set(ids))
        // The IDs name the rows: another context resolves them.
        let reader = stack.context("ids")
        #expect(try reader.existingObject(with: ids[0]).value(forKey: "title") as? String == "b")
    }

    @Test(arguments: StoreKind.everyStore)
    func eachResultTypeHoldsWhatCoreDatasDoes(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        let context = stack.context()
        #expect(BatchInsertRequestResultType.statusOnly.rawValue == 0)
        #expect(BatchInsertRequestResultType.objectIDs.rawValue == 1)
        #expect(BatchInsertRequestResultType.count.rawValue == 2)
        let status = BatchInsertRequest(entity: stack.model.entitiesByName["Note"]!, objects: [["title": "x"]])
        #expect(status.resultType == .statusOnly)
        #expect((try context.execute(status) as? BatchInsertResult)?.result as? Bool == true)
        let counted = BatchInsertRequest(entityName: "Note", objects: [["title": "y"], ["title": "z"], ["title": "w"]])
        counted.resultType = .count
        #expect((try context.execute(counted) as? BatchInsertResult)?.result as? Int == 3)
        #expect(try stack.stored("Note", sortedBy: "title").count == 4)
    }

    @Test(arguments: StoreKind.everyStore)
    func theDictionaryHandlerStopsWhenItReturnsTrueAndThatRowIsNotInserted(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        var calls = 0
        let insert = BatchInsertRequest(entityName: "Note") { (row: inout [String: any Sendable]) -> Bool in
            calls += 1
            row["title"] = "row \(calls)"
            return calls == 4
        }
        insert.resultType = .count
        #expect((try stack.context().execute(insert) as? BatchInsertResult)?.result as? Int == 3)
        #expect(calls == 4)
        let titles = try stack.stored("Note", sortedBy: "title").compactMap { $0.value(forKey: "title") as? String }
        #expect(titles == ["row 1", "row 2", "row 3"])
    }

    @Test(arguments: StoreKind.everyStore)
    func aWrongTypedValueRefusesTheWholeRequestNamingTheRowEntityAndAttribute(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        let context = stack.context()
        _ = context.insert("Note", ["title": "kept", "rank": 1])
        try context.save()
        let insert = BatchInsertRequest(entityName: "Note", objects: [
            ["title": "a"], ["title": "b"], ["title": "c", "rank": "high"],
        ])
        let error = try #require(throws: ObjectGraphError.self) { try context.execute(insert) }
        #expect(error.code == .validation)
        #expect(error.entityName == "Note")
        #expect(error.key == "rank")
        #expect(error.message.contains("row 2"))
        let titles = try stack.stored("Note", sortedBy: "title").compactMap { $0.value(forKey: "title") as? String }
        #expect(titles == ["kept"])
    }

    @Test func aLargeBatchIsCheckedInSlicesWithTheSameRowsAndTheFirstBadRowsError() throws {
        let model = TestModels.notes()
        let entity = try #require(model.entitiesByName["Note"])
        let check = BatchValues.InsertRows(entity: entity)
        var objects: [[String: any Sendable]] = (0..<(3 * BatchValues.rowsPerSlice)).map { ["title": "n\($0)", "rank": Int64($0)] }
        let sliced = try BatchValues.insertRows(objects, check)
        let one = try objects.enumerated().map { try BatchValues.insertRow($1, number: $0, check) }
        #expect(sliced.map(\.values) == one.map(\.values))
        #expect(sliced.map(\.given) == one.map(\.given))
        // Bad rows in the last slice and in the middle one: the error names the first, as a pass row by row would.
        let last = objects.count - 2, middle = objects.count / 2 + 1
        objects[last]["rank"] = "high"
        objects[middle]["rank"] = "low"
        let error = try #require(throws: ObjectGraphError.self) { try BatchValues.insertRows(objects, check) }
        #expect(error.key == "rank")
        #expect(error.message.contains("row \(middle) "))
        objects[1]["title"] = 5
        #expect(try #require(throws: ObjectGraphError.self) { try BatchValues.insertRows(objects, check) }.message.contains("row 1 "))
        withExtendedLifetime(model) {}
    }

    @Test(arguments: StoreKind.everyStore)
    func aMissingRequiredValueOrAnUnknownKeyRefusesTheRequest(_ kind: StoreKind) throws {
        let stack = try TestStack(kind, model: BatchModels.rules())
        let context = stack.context()
        let missing = BatchInsertRequest(entityName: "User", objects: [
            ["email": "a@x", "active": true], ["email": "b@x"],
        ])
        let error = try #require(throws: ObjectGraphError.self) { try context.execute(missing) }
        #expect(error.code == .validation)
        #expect(error.key == "active")
        #expect(error.entityName == "User")
        #expect(error.message.contains("row 1"))
        let unknown = BatchInsertRequest(entityName: "User", objects: [["email": "a@x", "active": true, "nickname": "A"]])
        #expect(throws: ObjectGraphError.validation) { try context.execute(unknown) }
        let relationship = BatchInsertRequest(entityName: "User", objects: [["email": "a@x", "active": true, "team": "x"]])
        #expect(throws: ObjectGraphError.validation) { try context.execute(relationship) }
        let nilRequired = BatchInsertRequest(entityName: "User", objects: [["email": NSNull(), "active": true]])
        #expect(throws: ObjectGraphError.validation) { try context.execute(nilRequired) }
        #expect(try stack.stored("User", sortedBy: "email").isEmpty)
    }

    @Test(arguments: StoreKind.everyStore)
    func aUniquenessConstraintMakesItAnUpsertThatKeepsTheColumnsNotGiven(_ kind: StoreKind) throws {
        let stack = try TestStack(kind, model: BatchModels.rules())
        let context = stack.context()
        let ann = context.insert("User", ["email": "ann@x", "name": "Ann", "age": Int64(30), "active": true])
        try context.save()
        let versionBefore = try #require(try stack.storedVersion(of: ann.objectID))
        let insert = BatchInsertRequest(entityName: "User", objects: [
            ["email": "ann@x", "age": Int64(31)],
            ["email": "bob@x", "active": false],
            ["email": "cy@x", "active": true, "name": "Cy"],
            ["email": "cy@x", "age": Int64(40)],
        ])
        insert.resultType = .objectIDs
        let ids = try #require((try context.execute(insert) as? BatchInsertResult)?.result as? [ManagedObjectID])
        #expect(ids.count == 3)
        #expect(ids.first == ann.objectID)
        let users = try stack.stored("User", sortedBy: "email")
        #expect(users.map { $0.value(forKey: "email") as? String } == ["ann@x", "bob@x", "cy@x"])
        #expect(users[0].value(forKey: "name") as? String == "Ann")
        #expect(users[0].value(forKey: "age") as? Int64 == 31)
        #expect(users[0].value(forKey: "active") as? Bool == true)
        #expect(users[1].value(forKey: "age") as? Int64 == 18)
        #expect(users[2].value(forKey: "name") as? String == "Cy")
        #expect(users[2].value(forKey: "age") as? Int64 == 40)
        #expect(try stack.storedVersion(of: ann.objectID) == versionBefore + 1)
    }

    @Test(arguments: StoreKind.everyStore)
    func aChildContextsRequestGoesToTheCoordinator(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        let parent = stack.privateContext("parent")
        let child = ManagedObjectContext(concurrencyType: .privateQueue)
        child.parent = parent
        _ = try child.performAndWait {
            try child.execute(BatchInsertRequest(entityName: "Note", objects: [["title": "from child"]]))
        }
        let titles = try stack.stored("Note", sortedBy: "title").compactMap { $0.value(forKey: "title") as? String }
        #expect(titles == ["from child"])
    }
}
