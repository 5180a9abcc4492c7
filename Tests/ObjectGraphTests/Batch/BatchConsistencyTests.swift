import Foundation
import Testing
import ObjectGraph
@testable import ObjectGraphCore

@Suite("Batch requests keep contexts and the row cache consistent")
struct BatchConsistencyTests {
    @Test(arguments: StoreKind.everyStore)
    func theExecutingContextsPendingChangesAreUntouched(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        let context = stack.context()
        let saved = context.insert("Note", ["title": "saved", "rank": Int64(1)])
        try context.save()
        saved.setValue("edited", forKey: "title")
        let unsaved = context.insert("Note", ["title": "unsaved", "rank": Int64(1)])
        let update = BatchUpdateRequest(entityName: "Note")
        update.propertiesToUpdate = ["rank": Int64(9)]
        update.resultType = .updatedObjectsCount
        #expect((try context.execute(update) as? BatchUpdateResult)?.result as? Int == 1)
        #expect(context.insertedObjects == [unsaved])
        #expect(context.updatedObjects == [saved])
        #expect(saved.value(forKey: "title") as? String == "edited")
        #expect(saved.value(forKey: "rank") as? Int64 == 1)
        #expect(unsaved.value(forKey: "rank") as? Int64 == 1)
    }

    @Test(arguments: StoreKind.everyStore)
    func aStaleObjectInAnotherContextConflictsAtSaveInsteadOfOverwriting(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        let writer = stack.context("writer")
        let note = writer.insert("Note", ["title": "a", "rank": Int64(1)])
        try writer.save()
        let holder = stack.context("holder")
        let held = try holder.existingObject(with: note.objectID)
        held.setValue(Int64(2), forKey: "rank")

        let update = BatchUpdateRequest(entityName: "Note")
        update.propertiesToUpdate = ["rank": Int64(100)]
        try stack.context("batch").execute(update)

        let error = try #require(throws: ObjectGraphError.self) { try holder.save() }
        #expect(error.code == .mergeConflict)
        #expect(try stack.stored("Note", sortedBy: "title").first?.value(forKey: "rank") as? Int64 == 100)
    }

    @Test(arguments: StoreKind.everyStore)
    func anObjectABatchDeleteRemovedConflictsAtSave(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        let writer = stack.context("writer")
        let note = writer.insert("Note", ["title": "a"])
        try writer.save()
        let holder = stack.context("holder")
        try holder.existingObject(with: note.objectID).setValue("changed", forKey: "title")
        try stack.context("batch").execute(BatchDeleteRequest(objectIDs: [note.objectID]))
        #expect(throws: ObjectGraphError.mergeConflict) { try holder.save() }
    }

    @Test(arguments: StoreKind.everyStore)
    func theRowCacheNeverServesARowABatchRequestChanged(_ kind: StoreKind) throws {
        let stack = try TestStack(kind, model: BatchModels.rules())
        let writer = stack.context("writer")
        let user = writer.insert("User", ["email": "a@x", "age": Int64(20), "active": true])
        let other = writer.insert("User", ["email": "b@x", "age": Int64(20), "active": true])
        try writer.save()
        // A context holding the objects keeps their rows in the row cache.
        let holder = stack.context("holder")
        let held = try [user, other].map { try holder.existingObject(with: $0.objectID) }
        #expect(held.map { $0.value(forKey: "age") as? Int64 } == [20, 20])
        #expect(stack.coordinator.rowCache.retainSnapshot(for: user.objectID)?.values.isEmpty == false)

        let update = BatchUpdateRequest(entityName: "User")
        update.predicate = FetchPredicate(format: "email == %@", "a@x")
        update.propertiesToUpdate = ["age": Int64(21)]
        try writer.execute(update)
        #expect(try stack.context("after update").existingObject(with: user.objectID).value(forKey: "age") as? Int64 == 21)

        try writer.execute(BatchInsertRequest(entityName: "User", objects: [["email": "a@x", "age": Int64(22)]]))
        #expect(try stack.context("after upsert").existingObject(with: user.objectID).value(forKey: "age") as? Int64 == 22)

        try writer.execute(BatchDeleteRequest(objectIDs: [other.objectID]))
        let reader = stack.context("after delete")
        #expect(throws: ObjectGraphError.objectNotFound) { try reader.existingObject(with: other.objectID) }
        // The holder's objects still show what it read: batch requests reach no context by themselves.
        #expect(held[0].value(forKey: "age") as? Int64 == 20)
    }

    /// An object a fetch returned as a fault holds the row the fetch read: once a batch request has
    /// changed the row (evicting it from the row cache), the fault still fills from that snapshot, as
    /// in Core Data, and does not go back to the store from an accessor (which cannot throw, and
    /// stops the program when the store fails: a PostgreSQL server restarting). Everyone else reads
    /// the new row, and so does the holder once it refreshes the object.
    @Test(arguments: StoreKind.everyStore)
    func aFaultAFetchReturnedFillsFromTheRowTheFetchRead(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        let writer = stack.context("writer")
        let note = writer.insert("Note", ["title": "a", "rank": Int64(1)])
        try writer.save()
        let holder = stack.context("holder")
        let held = try #require(try holder.fetch(FetchRequest<ManagedObject>(entityName: "Note")).first)
        #expect(held.isFault)

        let update = BatchUpdateRequest(entityName: "Note")
        update.propertiesToUpdate = ["rank": Int64(2)]
        try writer.execute(update)
        let statements = stack.coordinator.statistics.sqlStatements
        #expect(held.value(forKey: "rank") as? Int64 == 1)
        #expect(stack.coordinator.statistics.sqlStatements == statements, "the fault read the store")

        #expect(try stack.context("reader").existingObject(with: note.objectID).value(forKey: "rank") as? Int64 == 2)
        let again = stack.context("fetching again")
        #expect(try again.fetch(FetchRequest<ManagedObject>(entityName: "Note")).first?.value(forKey: "rank") as? Int64 == 2)
        holder.refresh(held, mergeChanges: false)
        #expect(held.value(forKey: "rank") as? Int64 == 2)
    }

    @Test(arguments: StoreKind.everyStore)
    func aReadThatStartedBeforeABatchRequestCachesNothingItRead(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        let context = stack.context()
        let note = context.insert("Note", ["title": "a", "rank": Int64(1)])
        try context.save()
        let cache = stack.coordinator.rowCache
        let read = StoreFetchRequest(entity: stack.model.entitiesByName["Note"]!)
        // A read from before the batch request, registered after it committed and evicted.
        let mark = cache.evictionMark
        let stale = try stack.store.backend.fetch(read, store: stack.store)
        let update = BatchUpdateRequest(entityName: "Note")
        update.propertiesToUpdate = ["rank": Int64(2)]
        try context.execute(update)
        cache.register(stale, retain: false, readSince: mark)
        #expect(cache.retainSnapshot(for: note.objectID) == nil)
        // A read after it is cached.
        let freshMark = cache.evictionMark
        cache.register(try stack.store.backend.fetch(read, store: stack.store), retain: false, readSince: freshMark)
        let rank = note.entity.attributesByName["rank"]!.index
        #expect(cache.retainSnapshot(for: note.objectID)?.values[rank] == .int(2))
    }
}
