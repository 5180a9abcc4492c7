import Foundation
import Testing
import ObjectGraph
@testable import ObjectGraphCore

@Suite("Batch update sets values of matching rows in one statement")
struct BatchUpdateTests {
    /// Three notes ranked -1, -2 and 5; returns their IDs in that order.
    private func seed(_ stack: TestStack) throws -> [ManagedObjectID] {
        let context = stack.context("seed")
        let notes = [("a", -1), ("b", -2), ("c", 5)].map { context.insert("Note", ["title": $0.0, "rank": Int64($0.1)]) }
        try context.save()
        return notes.map(\.objectID)
    }

    @Test(arguments: StoreKind.everyStore)
    func matchingRowsTakeTheValuesAndEachResultTypeReportsThem(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        let ids = try seed(stack)
        let context = stack.context()
        #expect(BatchUpdateRequestResultType.statusOnly.rawValue == 0)
        #expect(BatchUpdateRequestResultType.updatedObjectIDs.rawValue == 1)
        #expect(BatchUpdateRequestResultType.updatedObjectsCount.rawValue == 2)

        let update = BatchUpdateRequest(entityName: "Note")
        #expect(update.requestType == .batchUpdateRequestType)
        #expect(update.includesSubentities)
        update.predicate = FetchPredicate(format: "rank < 0")
        update.propertiesToUpdate = ["rank": Int64(0)]
        update.resultType = .updatedObjectIDs
        let updated = try #require((try context.execute(update) as? BatchUpdateResult)?.result as? [ManagedObjectID])
        #expect(Set(updated) == [ids[0], ids[1]])
        #expect(try stack.stored("Note", sortedBy: "title").map { $0.value(forKey: "rank") as? Int64 } == [0, 0, 5])

        let count = BatchUpdateRequest(entity: stack.model.entitiesByName["Note"]!)
        count.propertiesToUpdate = ["title": "same", "created": Date(timeIntervalSinceReferenceDate: 10)]
        count.resultType = .updatedObjectsCount
        #expect((try context.execute(count) as? BatchUpdateResult)?.result as? Int == 3)
        let notes = try stack.stored("Note", sortedBy: "rank")
        #expect(notes.allSatisfy { $0.value(forKey: "title") as? String == "same" })
        #expect(notes.allSatisfy { $0.value(forKey: "created") as? Date == Date(timeIntervalSinceReferenceDate: 10) })

        let status = BatchUpdateRequest(entityName: "Note")
        status.predicate = FetchPredicate(format: "rank == %d", 5)
        status.propertiesToUpdate = ["created": NSNull()]
        #expect((try context.execute(status) as? BatchUpdateResult)?.result as? Bool == true)
        #expect(try stack.context("check").existingObject(with: ids[2]).value(forKey: "created") == nil)
    }

    @Test(arguments: StoreKind.everyStore)
    func everyUpdatedRowGetsANewVersion(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        let ids = try seed(stack)
        let before = try ids.map { try #require(try stack.storedVersion(of: $0)) }
        let update = BatchUpdateRequest(entityName: "Note")
        update.predicate = FetchPredicate(format: "rank < 0")
        update.propertiesToUpdate = ["rank": Int64(0)]
        try stack.context().execute(update)
        #expect(try ids.map { try stack.storedVersion(of: $0) } == [before[0] + 1, before[1] + 1, before[2]])
    }

    @Test(arguments: StoreKind.everyStore)
    func aBadValueRefusesTheUpdateAndLeavesTheStoreUnchanged(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        _ = try seed(stack)
        let context = stack.context()
        for values: [String: any Sendable] in [["rank": "high"], ["title": NSNull()], ["folder": "x"], ["nope": 1]] {
            let update = BatchUpdateRequest(entityName: "Note")
            update.propertiesToUpdate = values
            let error = try #require(throws: ObjectGraphError.self) { try context.execute(update) }
            #expect(error.code == .validation)
            #expect(error.entityName == "Note")
            #expect(error.key == values.keys.first)
        }
        #expect(try stack.stored("Note", sortedBy: "title").map { $0.value(forKey: "rank") as? Int64 } == [-1, -2, 5])
    }

    @Test(arguments: StoreKind.everyStore)
    func includesSubentitiesDecidesWhetherRowsOfSubEntitiesAreUpdated(_ kind: StoreKind) throws {
        let model = ManagedObjectModel(entities: [
            EntityDescription(name: "Shape", properties: [.attribute("name", .string), .attribute("size", .integer64, defaultValue: Int64(0))]),
            EntityDescription(name: "Circle", superentity: "Shape", properties: [.attribute("radius", .double)]),
        ])
        let stack = try TestStack(kind, model: model)
        let context = stack.context()
        let shape = context.insert("Shape", ["name": "s"])
        let circle = context.insert("Circle", ["name": "c", "radius": 1.0])
        try context.save()

        let own = BatchUpdateRequest(entityName: "Shape")
        own.includesSubentities = false
        own.propertiesToUpdate = ["size": Int64(1)]
        own.resultType = .updatedObjectIDs
        #expect((try context.execute(own) as? BatchUpdateResult)?.result as? [ManagedObjectID] == [shape.objectID])
        let all = BatchUpdateRequest(entityName: "Shape")
        all.propertiesToUpdate = ["size": Int64(2)]
        all.resultType = .updatedObjectIDs
        let ids = try #require((try context.execute(all) as? BatchUpdateResult)?.result as? [ManagedObjectID])
        #expect(Set(ids) == [shape.objectID, circle.objectID])
        #expect(ids.first { $0 == circle.objectID }?.entityName == "Circle")
        let circles = BatchUpdateRequest(entityName: "Circle")
        circles.propertiesToUpdate = ["radius": 2.5, "size": Int64(3)]
        try context.execute(circles)
        let reader = stack.context("reader")
        #expect(try reader.existingObject(with: shape.objectID).value(forKey: "size") as? Int64 == 2)
        #expect(try reader.existingObject(with: circle.objectID).value(forKey: "size") as? Int64 == 3)
        #expect(try reader.existingObject(with: circle.objectID).value(forKey: "radius") as? Double == 2.5)
    }

    @Test(arguments: StoreKind.everyStore)
    func anUpdateThatWouldBreakAUniquenessConstraintIsRefusedWhole(_ kind: StoreKind) throws {
        let stack = try TestStack(kind, model: BatchModels.rules())
        let context = stack.context()
        for email in ["a@x", "b@x"] { _ = context.insert("User", ["email": email, "active": true]) }
        try context.save()
        let update = BatchUpdateRequest(entityName: "User")
        update.propertiesToUpdate = ["email": "same@x", "age": Int64(1)]
        #expect(throws: ObjectGraphError.constraintConflict) { try context.execute(update) }
        let users = try stack.stored("User", sortedBy: "email")
        #expect(users.map { $0.value(forKey: "email") as? String } == ["a@x", "b@x"])
        #expect(users.map { $0.value(forKey: "age") as? Int64 } == [18, 18])
    }
}
