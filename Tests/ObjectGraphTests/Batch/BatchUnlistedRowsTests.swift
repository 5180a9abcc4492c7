import Foundation
import Testing
import ObjectGraph
@testable import ObjectGraphCore

/// A batch update or delete whose rows' IDs nobody asked for (no merge, a status or count result) may
/// run without listing its rows: on SQLite, one statement and no scan for the IDs. What it must
/// keep: the count, the row cache never serving a changed row, the version bump, and listing the rows
/// whenever a merge or a result needs them.
@Suite("Batch requests that list no rows")
struct BatchUnlistedRowsTests {
    /// Readings with no relationship anywhere (a delete then has nothing to clear), and a sensor
    /// whose readings nothing points at either.
    static func model() -> ManagedObjectModel {
        ManagedObjectModel(entities: [
            EntityDescription(name: "Reading", properties: [
                .attribute("sensor", .string, isOptional: false, defaultValue: ""),
                .attribute("value", .integer64, defaultValue: Int64(0)),
            ]),
            EntityDescription(name: "Sensor", properties: [
                .attribute("name", .string),
            ]),
        ])
    }

    /// 30 readings (10 of sensor "a"), and a context holding every one of them, so the row cache
    /// holds their rows.
    private func seeded(_ kind: StoreKind) throws -> (TestStack, holder: ManagedObjectContext, held: [ManagedObject]) {
        let stack = try TestStack(kind, model: Self.model())
        let writer = stack.context("writer")
        for i in 0..<30 { writer.insert("Reading", ["sensor": i % 3 == 0 ? "a" : "b", "value": Int64(i)]) }
        writer.insert("Sensor", ["name": "s"])
        try writer.save()
        let holder = stack.context("holder")
        let held = try holder.all("Reading", sortedBy: "value")
        #expect(held.count == 30)
        // Fired: the holder keeps the values it read (a fault would read the store anew when fired).
        #expect(held.map { $0.value(forKey: "value") as? Int64 } == (0..<30).map { Int64($0) })
        #expect(stack.coordinator.rowCache.retainSnapshot(for: held[0].objectID) != nil)
        return (stack, holder, held)
    }

    @Test(arguments: StoreKind.everyStore)
    func anUpdateCountsItsRowsAndTheCacheServesNoneOfThemStale(_ kind: StoreKind) throws {
        let (stack, _, held) = try seeded(kind)
        let versionBefore = try #require(try stack.storedVersion(of: held[0].objectID))
        let update = BatchUpdateRequest(entityName: "Reading")
        update.predicate = FetchPredicate(format: "sensor == %@", "a")
        update.propertiesToUpdate = ["value": Int64(-1)]
        update.resultType = .updatedObjectsCount
        #expect((try stack.context("batch").execute(update) as? BatchUpdateResult)?.result as? Int == 10)

        // A new context reads every changed row anew (none from the cache), and the others unchanged.
        let reader = stack.context("reader")
        let values = try held.map { try reader.existingObject(with: $0.objectID).value(forKey: "value") as? Int64 }
        let expected: [Int64?] = (0..<30).map { (i: Int) -> Int64? in i % 3 == 0 ? -1 : Int64(i) }
        #expect(values == expected)
        // Versions were bumped: the holder's stale object conflicts instead of overwriting.
        #expect(try stack.storedVersion(of: held[0].objectID) == versionBefore + 1)
        held[0].setValue(Int64(5), forKey: "value")
        #expect(throws: ObjectGraphError.mergeConflict) { try held[0].managedObjectContext!.save() }

        // Nothing matched: a count of 0.
        update.predicate = FetchPredicate(format: "sensor == %@", "none")
        #expect((try stack.context("batch").execute(update) as? BatchUpdateResult)?.result as? Int == 0)
    }

    @Test(arguments: StoreKind.everyStore)
    func aDeleteCountsItsRowsAndTheCacheServesNoneOfThem(_ kind: StoreKind) throws {
        let (stack, _, held) = try seeded(kind)
        let request = FetchRequest<ManagedObject>(entityName: "Reading")
        request.predicate = FetchPredicate(format: "sensor == %@", "a")
        let delete = BatchDeleteRequest(fetchRequest: request)
        delete.resultType = .count
        #expect((try stack.context("batch").execute(delete) as? BatchDeleteResult)?.result as? Int == 10)

        let reader = stack.context("reader")
        for (i, object) in held.enumerated() where i % 3 == 0 {
            #expect(throws: ObjectGraphError.objectNotFound) { try reader.existingObject(with: object.objectID) }
        }
        #expect(try reader.count(for: FetchRequest<ManagedObject>(entityName: "Reading")) == 20)
        #expect(try reader.count(for: FetchRequest<ManagedObject>(entityName: "Sensor")) == 1)
    }

    @Test(arguments: StoreKind.everyStore)
    func requestsThatNeedTheirRowsStillListThem(_ kind: StoreKind) throws {
        let (stack, _, held) = try seeded(kind)
        let update = BatchUpdateRequest(entityName: "Reading")
        update.predicate = FetchPredicate(format: "sensor == %@", "a")
        update.propertiesToUpdate = ["value": Int64(-1)]
        update.resultType = .updatedObjectIDs
        let updated = try #require((try stack.context("batch").execute(update) as? BatchUpdateResult)?.result as? [ManagedObjectID])
        #expect(Set(updated) == Set(held.enumerated().filter { $0.offset % 3 == 0 }.map(\.element.objectID)))

        // A merge needs the rows: an automatically merging context sees the update without a fetch.
        let watcher = stack.context("watcher")
        watcher.automaticallyMergesChangesFromParent = true
        let watched = try watcher.existingObject(with: held[3].objectID)
        #expect(watched.value(forKey: "value") as? Int64 == -1)
        update.propertiesToUpdate = ["value": Int64(-2)]
        update.resultType = .statusOnly
        update.mergesChangesIntoContexts = true
        try stack.context("batch").execute(update)
        #expect(watched.value(forKey: "value") as? Int64 == -2)

        let request = FetchRequest<ManagedObject>(entityName: "Reading")
        request.predicate = FetchPredicate(format: "sensor == %@", "a")
        let delete = BatchDeleteRequest(fetchRequest: request)
        delete.resultType = .objectIDs
        let deleted = try #require((try stack.context("batch").execute(delete) as? BatchDeleteResult)?.result as? [ManagedObjectID])
        #expect(Set(deleted) == Set(updated))
    }

    /// The SQLite store runs an unlisted update or delete as its one statement: no SELECT first.
    @Test func onSQLiteAnUnlistedRequestIsOneStatement() throws {
        let (stack, _, _) = try seeded(.sqlite)
        let sqlite = try #require(stack.store.backend as? SQLiteStore)
        let update = BatchUpdateRequest(entityName: "Reading")
        update.predicate = FetchPredicate(format: "sensor == %@", "a")
        update.propertiesToUpdate = ["value": Int64(7)]
        var before = sqlite.statementCount
        try stack.context("batch").execute(update)
        #expect(sqlite.statementCount - before == 1)

        update.resultType = .updatedObjectIDs
        before = sqlite.statementCount
        try stack.context("batch").execute(update)
        #expect(sqlite.statementCount - before == 2)

        let request = FetchRequest<ManagedObject>(entityName: "Reading")
        request.predicate = FetchPredicate(format: "sensor == %@", "a")
        before = sqlite.statementCount
        try stack.context("batch").execute(BatchDeleteRequest(fetchRequest: request))
        #expect(sqlite.statementCount - before == 1)
    }
}
