import Foundation
import Testing
import ObjectGraph
@testable import ObjectGraphCore

/// A batch update PostgreSQL can answer whole is one statement, with the same results, versions and
/// change log as the update through the save's steps; one it cannot answer whole takes those steps.
@Suite("PostgreSQL batch updates in one statement", .needsPostgreSQL)
struct PostgresBatchUpdateTests {
    private func seed(_ stack: TestStack, notes: Int) throws {
        let context = stack.context("seed")
        let folder = context.insert("Folder", ["name": "Inbox"])
        for i in 0..<notes { context.insert("Note", ["title": "n\(i)", "rank": Int64(i), "folder": folder]) }
        try context.save()
    }

    private func update(_ context: ManagedObjectContext, _ predicate: FetchPredicate, _ values: [String: any Sendable]) throws -> [ManagedObjectID] {
        let update = BatchUpdateRequest(entityName: "Note")
        update.predicate = predicate
        update.propertiesToUpdate = values
        update.resultType = .updatedObjectIDs
        return try #require((try context.execute(update) as? BatchUpdateResult)?.result as? [ManagedObjectID])
    }

    @Test func aPredicatePostgreSQLAnswersIsOneStatementThatBumpsVersionsAndIsHeard() async throws {
        let stack = try TestStack(.postgres)
        try seed(stack, notes: 200)
        // A context holding a note before the update: its save of that note must conflict.
        let holder = stack.context("holder")
        let held = try #require(try holder.fetch(FetchRequest<ManagedObject>(entityName: "Note")).first { $0.value(forKey: "rank") as? Int64 == 150 })
        // Another coordinator on the store hears the update through the change log.
        let other = PersistentStoreCoordinator(managedObjectModel: stack.coordinator.managedObjectModel)
        _ = try other.addPersistentStore(type: .postgres, at: stack.storeURL)
        var heard = other.remoteChanges.makeAsyncIterator()

        let context = stack.context("batch")
        let before = stack.coordinator.statistics.sqlStatements
        let ids = try update(context, FetchPredicate(format: "rank >= 100"), ["title": "late", "rank": Int64(-1)])
        let statements = stack.coordinator.statistics.sqlStatements - before
        #expect(ids.count == 100)
        #expect(statements <= 8, "a batch update of 100 rows ran \(statements) statements")
        let stored = try stack.stored("Note", sortedBy: "rank")
        #expect(stored.filter { $0.value(forKey: "title") as? String == "late" }.count == 100)
        #expect(Set(stored.filter { $0.value(forKey: "rank") as? Int64 == -1 }.map(\.objectID)) == Set(ids))

        held.setValue("mine", forKey: "title")
        #expect(throws: (any Error).self) { try holder.save() }
        let change = try #require(await heard.next())
        #expect(change.storeUUID == stack.store.identifier)
        withExtendedLifetime(other) {}
    }

    @Test func aPredicateLeftToMemoryOrAConstrainedValueTakesTheSavesSteps() throws {
        let stack = try TestStack(.postgres, model: TestModels.notes(uniqueTagNames: true))
        try seed(stack, notes: 20)
        let context = stack.context("batch")
        // [c] is evaluated in memory: the rows are read, then updated by the save's steps.
        let before = stack.coordinator.statistics.sqlStatements
        let ids = try update(context, FetchPredicate(format: "title BEGINSWITH[c] 'N1'"), ["rank": Int64(7)])
        #expect(ids.count == 11)
        #expect(stack.coordinator.statistics.sqlStatements - before > 11)
        let sevens = try stack.stored("Note", sortedBy: "rank").filter { $0.value(forKey: "rank") as? Int64 == 7 }
        #expect(Set(sevens.map { $0.value(forKey: "title") as! String }) == Set(["n1", "n7"] + (10..<20).map { "n\($0)" }))
        // A value under a uniqueness constraint goes through the save's uniqueness check.
        let tagging = stack.context("tags")
        tagging.insert("Tag", ["name": "a"])
        tagging.insert("Tag", ["name": "b"])
        try tagging.save()
        let rename = BatchUpdateRequest(entityName: "Tag")
        rename.predicate = FetchPredicate(format: "name == 'b'")
        rename.propertiesToUpdate = ["name": "a"]
        #expect(throws: (any Error).self) { try context.execute(rename) }
        #expect(try stack.stored("Tag", sortedBy: "name").map { $0.value(forKey: "name") as? String } == ["a", "b"])
    }
}
