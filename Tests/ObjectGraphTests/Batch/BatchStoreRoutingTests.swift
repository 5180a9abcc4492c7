import Foundation
import Testing
import ObjectGraph
@testable import ObjectGraphCore

@Suite("Batch requests go to the stores that hold their entity, or to their affected stores")
struct BatchStoreRoutingTests {
    @Test(arguments: StoreKind.everyStore)
    func affectedStoresLimitARequestAndObjectIDsReachEachOnesStore(_ kind: StoreKind) throws {
        let directory = TemporaryDirectory()
        let coordinator = PersistentStoreCoordinator(managedObjectModel: TestModels.notes())
        let first = try coordinator.addPersistentStore(type: kind.type, at: try kind.newStoreURL(in: directory))
        let second = try coordinator.addPersistentStore(type: kind.type, at: kind == .postgres ? try kind.newStoreURL(in: directory) : directory.file("second.\(kind.rawValue)"))
        let context = ManagedObjectContext(concurrencyType: .confinement)
        context.persistentStoreCoordinator = coordinator
        let notes = (0..<4).map { rank in
            let note = context.insert("Note", ["title": "n\(rank)", "rank": Int64(rank)])
            if rank % 2 == 1 { context.assign(note, to: second) }
            return note
        }
        try context.save()

        let onlySecond = BatchUpdateRequest(entityName: "Note")
        onlySecond.affectedStores = [second]
        onlySecond.propertiesToUpdate = ["title": "second"]
        onlySecond.resultType = .updatedObjectIDs
        let updated = try #require((try context.execute(onlySecond) as? BatchUpdateResult)?.result as? [ManagedObjectID])
        #expect(Set(updated) == [notes[1].objectID, notes[3].objectID])
        let everywhere = BatchUpdateRequest(entityName: "Note")
        everywhere.propertiesToUpdate = ["rank": Int64(9)]
        everywhere.resultType = .updatedObjectsCount
        #expect((try context.execute(everywhere) as? BatchUpdateResult)?.result as? Int == 4)

        let insert = BatchInsertRequest(entityName: "Note", objects: [["title": "new"]])
        insert.affectedStores = [second]
        insert.resultType = .objectIDs
        let inserted = try #require((try context.execute(insert) as? BatchInsertResult)?.result as? [ManagedObjectID])
        #expect(inserted.first?.persistentStore === second)
        let defaulted = BatchInsertRequest(entityName: "Note", objects: [["title": "default"]])
        defaulted.resultType = .objectIDs
        #expect(((try context.execute(defaulted) as? BatchInsertResult)?.result as? [ManagedObjectID])?.first?.persistentStore === first)

        let delete = BatchDeleteRequest(objectIDs: [notes[0].objectID, notes[1].objectID])
        delete.resultType = .count
        #expect((try context.execute(delete) as? BatchDeleteResult)?.result as? Int == 2)
        let reader = ManagedObjectContext(concurrencyType: .confinement)
        reader.persistentStoreCoordinator = coordinator
        let titles = try reader.all("Note", sortedBy: "title").compactMap { $0.value(forKey: "title") as? String }
        #expect(titles == ["default", "n2", "new", "second"])
    }

    @Test(arguments: [StoreKind.sqlite, .binary])
    func aReadOnlyStoreRefusesEveryBatchRequest(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        let writer = stack.context()
        let note = writer.insert("Note", ["title": "kept"])
        try writer.save()
        let coordinator = PersistentStoreCoordinator(managedObjectModel: stack.model)
        try coordinator.addPersistentStore(type: kind.type, at: stack.storeURL, options: [PersistentStoreOption.readOnly: true])
        let context = ManagedObjectContext(concurrencyType: .confinement)
        context.persistentStoreCoordinator = coordinator
        let update = BatchUpdateRequest(entityName: "Note")
        update.propertiesToUpdate = ["title": "changed"]
        let requests: [PersistentStoreRequest] = [
            BatchInsertRequest(entityName: "Note", objects: [["title": "new"]]), update,
            BatchDeleteRequest(fetchRequest: FetchRequest<ManagedObject>(entityName: "Note")),
        ]
        for request in requests {
            #expect(throws: ObjectGraphError.readOnly) { try context.execute(request) }
        }
        #expect(try stack.stored("Note", sortedBy: "title").map(\.objectID) == [note.objectID])
    }

    @Test func aStoreWhoseConfigurationLacksTheEntityIsNotTouched() throws {
        let model = TestModels.notes()
        model.setEntities([model.entitiesByName["Folder"]!], forConfigurationName: "Folders")
        model.setEntities([model.entitiesByName["Note"]!, model.entitiesByName["Tag"]!], forConfigurationName: "Notes")
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        let folders = try coordinator.addPersistentStore(type: .inMemory, configuration: "Folders")
        let notes = try coordinator.addPersistentStore(type: .inMemory, configuration: "Notes")
        let context = ManagedObjectContext(concurrencyType: .confinement)
        context.persistentStoreCoordinator = coordinator
        let insert = BatchInsertRequest(entityName: "Folder", objects: [["name": "f"]])
        insert.resultType = .objectIDs
        let ids = try #require((try context.execute(insert) as? BatchInsertResult)?.result as? [ManagedObjectID])
        #expect(ids.first?.persistentStore === folders)
        let wrong = BatchInsertRequest(entityName: "Folder", objects: [["name": "g"]])
        wrong.affectedStores = [notes]
        #expect(throws: ObjectGraphError.noPersistentStore) { try context.execute(wrong) }
    }
}
