import Foundation
import ObjectGraph
import Testing

/// The contract's requests a context passes to its stores, written as a program outside the module
/// would write it (no `@testable`): the public names, initializers and result shapes compile and
/// behave as the contract says.
@Suite("Contract: the requests a context passes to its stores")
struct BatchContractShapeTests {
    @Test func theContractsBatchExampleCompilesAndRunsAsWritten() throws {
        let stack = try TestStack(.sqlite, model: ManagedObjectModel(types: [Folder.self, Note.self, Tag.self]))
        let context = stack.context()
        let main = stack.context("main")
        let rows: [[String: any Sendable]] = [["title": "a", "slug": "a", "rank": Int64(-1)], ["title": "b", "slug": "b"]]
        let insert = BatchInsertRequest(entityName: "Note", objects: rows)
        var left = 2
        let insert2 = BatchInsertRequest(entityName: "Note", dictionaryHandler: { (row: inout [String: any Sendable]) -> Bool in
            left -= 1
            row["title"] = "h\(left)"; row["slug"] = "h\(left)"
            return left < 0
        })
        insert.resultType = .objectIDs
        let result = try context.execute(insert)
        let ids = try #require((result as! BatchInsertResult).result as? [ManagedObjectID])
        #expect(ids.count == 2)
        #expect((try context.execute(insert2) as! BatchInsertResult).result as? Bool == true)

        let update = BatchUpdateRequest(entityName: "Note")
        update.predicate = FetchPredicate(format: "rank < 0"); update.propertiesToUpdate = ["rank": Int64(0)]
        update.resultType = .updatedObjectIDs
        #expect((try context.execute(update) as! BatchUpdateResult).result as? [ManagedObjectID] == [ids[0]])

        let delete = BatchDeleteRequest(fetchRequest: FetchRequest<ManagedObject>(entityName: "Note"))
        delete.resultType = .objectIDs
        let deleted = try #require((try context.execute(delete) as! BatchDeleteResult).result as? [ManagedObjectID])
        #expect(deleted.count == 4)
        ManagedObjectContext.mergeChanges(fromRemoteContextSave: [ManagedObjectContext.NotificationKey.deletedObjects.rawValue: deleted],
                                          into: [main])
        #expect(try main.fetch(Note.fetchRequest()).isEmpty)
        #expect(BatchDeleteRequest(fetchRequest: Note.fetchRequest()).fetchRequest.entityName == "Note")
        #expect(BatchDeleteRequest(objectIDs: ids).affectedStores == nil)

        try context.delete(model: Note.self, where: #Predicate { $0.rank < 0 })
    }

    @Test func theContractsAsynchronousFetchCompilesAndRunsAsWritten() throws {
        let stack = try TestStack(.inMemory, model: ManagedObjectModel(types: [Folder.self, Note.self, Tag.self]))
        let context = stack.privateContext()
        let finished = DispatchSemaphore(value: 0)
        let request = Note.fetchRequest()
        let async = AsynchronousFetchRequest(fetchRequest: request) { (result: AsynchronousFetchResult<Note>) in
            #expect(result.finalResult?.isEmpty == true)
            finished.signal()
        }
        #expect(async.estimatedResultCount == 0)
        #expect(async.completionBlock != nil)
        try context.performAndWait {
            let running = try context.execute(async) as! AsynchronousFetchResult<Note>
            #expect(running.progress != nil)
            #expect(running.finalResult == nil)
            #expect(running.operationError == nil)
            #expect(running.fetchRequest === async)
        }
        #expect(finished.wait(timeout: .now() + 10) == .success)
    }
}
