import Foundation
import Testing
import ObjectGraph
@testable import ObjectGraphCore

/// A batch update or delete runs as one statement when it can (SQLite: `UPDATE … RETURNING`,
/// `DELETE … RETURNING`) and reads the rows first when it must (a predicate through a
/// relationship, a sort and a limit, a cascade or deny rule): both give the same rows.
@Suite("Batch requests change the same rows whichever statements run them")
struct BatchStatementPathTests {
    @Test(arguments: StoreKind.everyStore)
    func anUpdateThroughARelationshipKeyPathChangesOnlyTheMatchingRowsAndBumpsTheirVersions(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        let context = stack.context()
        let inbox = context.insert("Folder", ["name": "Inbox"])
        let keep = context.insert("Folder", ["name": "Keep"])
        let filed = (0..<3).map { context.insert("Note", ["title": "i\($0)", "rank": Int64($0), "folder": inbox]) }
        let kept = context.insert("Note", ["title": "k", "rank": Int64(9), "folder": keep])
        try context.save()

        let update = BatchUpdateRequest(entityName: "Note")
        update.predicate = FetchPredicate(format: "folder.name == %@", "Inbox")
        update.propertiesToUpdate = ["rank": Int64(7)]
        update.resultType = .updatedObjectIDs
        let updated = try #require((try context.execute(update) as? BatchUpdateResult)?.result as? [ManagedObjectID])
        #expect(Set(updated) == Set(filed.map(\.objectID)))
        #expect(try stack.stored("Note", sortedBy: "title").map { $0.value(forKey: "rank") as? Int64 } == [7, 7, 7, 9])
        for note in filed { #expect(try stack.storedVersion(of: note.objectID) == 2) }
        #expect(try stack.storedVersion(of: kept.objectID) == 1)

        let none = BatchUpdateRequest(entityName: "Note")
        none.predicate = FetchPredicate(format: "rank > 100")
        none.propertiesToUpdate = ["rank": Int64(0)]
        none.resultType = .updatedObjectsCount
        #expect((try context.execute(none) as? BatchUpdateResult)?.result as? Int == 0)
    }

    @Test(arguments: StoreKind.everyStore)
    func aDeleteWithoutCascadeOrDenyClearsTheJoinTableRowsNamingTheDeletedRows(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        let context = stack.context()
        let gone = context.insert("Tag", ["name": "gone"])
        let stays = context.insert("Tag", ["name": "stays"])
        let note = context.insert("Note", ["title": "n", "tags": Set([gone, stays])])
        try context.save()

        let request = FetchRequest<ManagedObject>(entityName: "Tag")
        request.predicate = FetchPredicate(format: "name == %@", "gone")
        let delete = BatchDeleteRequest(fetchRequest: request)
        delete.resultType = .objectIDs
        #expect((try context.execute(delete) as? BatchDeleteResult)?.result as? [ManagedObjectID] == [gone.objectID])
        let read = try stack.context("reader").existingObject(with: note.objectID)
        #expect((read.value(forKey: "tags") as? Set<ManagedObject>)?.map(\.objectID) == [stays.objectID])
    }

    @Test(arguments: StoreKind.everyStore)
    func aDeleteThroughARelationshipKeyPathDeletesOnlyTheMatchingRows(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        let context = stack.context()
        let inbox = context.insert("Folder", ["name": "Inbox"])
        let keep = context.insert("Folder", ["name": "Keep"])
        let filed = (0..<2).map { context.insert("Note", ["title": "i\($0)", "folder": inbox]) }
        _ = context.insert("Note", ["title": "k", "folder": keep])
        try context.save()

        let request = FetchRequest<ManagedObject>(entityName: "Note")
        request.predicate = FetchPredicate(format: "folder.name == %@", "Inbox")
        let delete = BatchDeleteRequest(fetchRequest: request)
        delete.resultType = .objectIDs
        let deleted = try #require((try context.execute(delete) as? BatchDeleteResult)?.result as? [ManagedObjectID])
        #expect(Set(deleted) == Set(filed.map(\.objectID)))
        #expect(try stack.stored("Note", sortedBy: "title").map { $0.value(forKey: "title") as? String } == ["k"])
        #expect(try stack.stored("Folder", sortedBy: "name").map { $0.value(forKey: "name") as? String } == ["Inbox", "Keep"])
    }

    @Test(arguments: StoreKind.everyStore)
    func aNullifyingDeleteClearsTheSurvivorsToOneAndBumpsTheirVersions(_ kind: StoreKind) throws {
        let stack = try TestStack(kind, model: BatchModels.rules())
        let context = stack.context()
        let team = context.insert("Team", ["name": "red"])
        let member = context.insert("User", ["email": "a@x", "active": true, "team": team])
        try context.save()
        #expect(try stack.storedVersion(of: member.objectID) == 1)

        let request = FetchRequest<ManagedObject>(entityName: "Team")
        request.predicate = FetchPredicate(format: "name == %@", "red")
        let delete = BatchDeleteRequest(fetchRequest: request)
        delete.resultType = .count
        #expect((try context.execute(delete) as? BatchDeleteResult)?.result as? Int == 1)
        let read = try stack.context("reader").existingObject(with: member.objectID)
        #expect(read.value(forKey: "team") == nil)
        #expect(try stack.storedVersion(of: member.objectID) == 2)
    }
}
