import Foundation
import Testing
import ObjectGraph
@testable import ObjectGraphCore

@Suite("Batch changes reach other contexts only when merged")
struct BatchMergeTests {
    /// A folder with three notes ranked 0, 1, 2, saved; returns (folder, notes).
    private func seed(_ stack: TestStack) throws -> (ManagedObjectID, [ManagedObjectID]) {
        let context = stack.context("seed")
        let folder = context.insert("Folder", ["name": "f"])
        let notes = (0..<3).map { context.insert("Note", ["title": "n\($0)", "rank": Int64($0), "folder": folder]) }
        try context.save()
        return (folder.objectID, notes.map(\.objectID))
    }

    @Test(arguments: StoreKind.everyStore)
    func mergingTheResultsIDsUpdatesAndDeletesRegisteredObjects(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        let (folderID, noteIDs) = try seed(stack)
        let main = stack.context("main")
        let folder = try main.existingObject(with: folderID)
        #expect((folder.value(forKey: "notes") as? Set<ManagedObject>)?.count == 3)
        let notes = try noteIDs.map { try main.existingObject(with: $0) }
        #expect(notes[2].value(forKey: "rank") as? Int64 == 2)

        let batch = stack.context("batch")
        let update = BatchUpdateRequest(entityName: "Note")
        update.predicate = FetchPredicate(format: "rank == 2")
        update.propertiesToUpdate = ["rank": Int64(20)]
        update.resultType = .updatedObjectIDs
        let updated = try #require((try batch.execute(update) as? BatchUpdateResult)?.result as? [ManagedObjectID])
        let request = FetchRequest<ManagedObject>(entityName: "Note")
        request.predicate = FetchPredicate(format: "rank == 0")
        let delete = BatchDeleteRequest(fetchRequest: request)
        delete.resultType = .objectIDs
        let deleted = try #require((try batch.execute(delete) as? BatchDeleteResult)?.result as? [ManagedObjectID])
        #expect(notes[2].value(forKey: "rank") as? Int64 == 2)

        ManagedObjectContext.mergeChanges(fromRemoteContextSave: [
            ManagedObjectContext.NotificationKey.updatedObjects.rawValue: updated,
            ManagedObjectContext.NotificationKey.deletedObjects.rawValue: deleted,
        ], into: [main])
        #expect(notes[2].value(forKey: "rank") as? Int64 == 20)
        #expect(notes[0].isDeleted)
        #expect((folder.value(forKey: "notes") as? Set<ManagedObject>).map { Set($0.map(\.objectID)) } == [noteIDs[1], noteIDs[2]])
    }

    @Test(arguments: StoreKind.everyStore)
    func theOptInMergesIntoEveryContextThatMergesAutomaticallyAndNoOther(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        let (_, noteIDs) = try seed(stack)
        let follower = stack.context("follower")
        follower.automaticallyMergesChangesFromParent = true
        let bystander = stack.context("bystander")
        let followed = try follower.existingObject(with: noteIDs[1])
        let ignored = try bystander.existingObject(with: noteIDs[1])
        #expect(followed.value(forKey: "rank") as? Int64 == 1)
        #expect(ignored.value(forKey: "rank") as? Int64 == 1)

        let batch = stack.context("batch")
        let quiet = BatchUpdateRequest(entityName: "Note")
        quiet.propertiesToUpdate = ["rank": Int64(5)]
        #expect(!quiet.mergesChangesIntoContexts)
        try batch.execute(quiet)
        #expect(followed.value(forKey: "rank") as? Int64 == 1)

        let update = BatchUpdateRequest(entityName: "Note")
        update.propertiesToUpdate = ["rank": Int64(7)]
        update.mergesChangesIntoContexts = true
        try batch.execute(update)
        #expect(followed.value(forKey: "rank") as? Int64 == 7)
        #expect(ignored.value(forKey: "rank") as? Int64 == 1)

        let insert = BatchInsertRequest(entityName: "Note", objects: [["title": "new"]])
        insert.mergesChangesIntoContexts = true
        insert.resultType = .objectIDs
        let followerMerges = MergeTests.Observed(ManagedObjectContext.didMergeChangesObjectIDsNotification, from: follower)
        let bystanderMerges = MergeTests.Observed(ManagedObjectContext.didMergeChangesObjectIDsNotification, from: bystander)
        let inserted = try #require((try batch.execute(insert) as? BatchInsertResult)?.result as? [ManagedObjectID])
        let merged = followerMerges.all.last?.userInfo?[ManagedObjectContext.NotificationKey.insertedObjectIDs.rawValue] as? Set<ManagedObjectID>
        #expect(merged == Set(inserted))
        #expect(bystanderMerges.all.isEmpty)

        let delete = BatchDeleteRequest(objectIDs: [noteIDs[1]])
        delete.mergesChangesIntoContexts = true
        try batch.execute(delete)
        #expect(followed.isDeleted)
        #expect(!ignored.isDeleted)
    }
}
