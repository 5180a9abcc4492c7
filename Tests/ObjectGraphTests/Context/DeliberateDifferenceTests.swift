import Foundation
import Testing
import ObjectGraph
@testable import ObjectGraphCore

/// Where ObjectGraph deliberately answers differently from Core Data (see "Differences from Core
/// Data"): each answer, pinned on every store.
@Suite("Deliberate differences from Core Data: fresh values after a batch update, IN with numbers on a string")
struct DeliberateDifferenceTests {
    @Test(arguments: StoreKind.everyStore)
    func afterABatchUpdateRefreshingWithMergingShowsTheNewValueAtOnce(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        let seed = stack.context("seed")
        seed.insert("Note", ["title": "old", "rank": Int64(1)])
        try seed.save()

        let context = stack.context("viewer")
        let note = try #require(try context.all("Note").first)
        #expect(note.value(forKey: "title") as? String == "old")
        let update = BatchUpdateRequest(entityName: "Note")
        update.propertiesToUpdate = ["title": "new"]
        _ = try stack.context("batch").execute(update)

        // Core Data shows the row cache's "old" here until stalenessInterval passes.
        context.refresh(note, mergeChanges: true)
        #expect(note.value(forKey: "title") as? String == "new")
    }

    @Test(arguments: StoreKind.everyStore)
    func afterABatchUpdateRefreshAllObjectsShowsTheNewValueAtOnce(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        let seed = stack.context("seed")
        seed.insert("Note", ["title": "old", "rank": Int64(1)])
        try seed.save()

        let context = stack.context("viewer")
        let note = try #require(try context.all("Note").first)
        #expect(note.value(forKey: "rank") as? Int64 == 1)
        let update = BatchUpdateRequest(entityName: "Note")
        update.propertiesToUpdate = ["rank": Int64(7)]
        _ = try stack.context("batch").execute(update)

        context.refreshAllObjects()
        #expect(note.value(forKey: "rank") as? Int64 == 7)
    }

    @Test(arguments: StoreKind.everyStore)
    func numbersInAnINListMatchNoStringAttribute(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        let seed = stack.context("seed")
        for plate in ["9", "10", "11", "12"] { seed.insert("Note", ["title": plate]) }
        try seed.save()

        let context = stack.context()
        // Core Data's SQLite store matches "9", "10" and "11" here by SQLite's type affinity, and its
        // in-memory evaluation matches nothing; ObjectGraph gives the in-memory answer everywhere.
        let numbers = FetchRequest<ManagedObject>(entityName: "Note")
        numbers.predicate = FetchPredicate(format: "title IN {9, 10, 11}")
        #expect(try context.fetch(numbers).isEmpty)
        // Unsaved objects are evaluated in memory, with the same answer.
        context.insert("Note", ["title": "9"])
        #expect(try context.fetch(numbers).isEmpty)

        let strings = FetchRequest<ManagedObject>(entityName: "Note")
        strings.predicate = FetchPredicate(format: "title IN {'9', '10', '11'}")
        #expect(try context.fetch(strings).count == 4)
    }
}
