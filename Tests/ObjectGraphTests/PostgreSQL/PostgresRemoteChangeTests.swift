import Foundation
import Testing
import ObjectGraph
@testable import ObjectGraphCore

/// Coordinators sharing a PostgreSQL store hear each other's commits (LISTEN/NOTIFY and the
/// store's change log), merge them, and catch up after losing their connection.
@Suite("PostgreSQL store: changes heard across coordinators", .needsPostgreSQL)
struct PostgresRemoteChangeTests {
    func coordinator(_ url: URL) throws -> PersistentStoreCoordinator {
        let coordinator = PersistentStoreCoordinator(managedObjectModel: TestModels.notes())
        try coordinator.addPersistentStore(type: .postgres, at: url)
        return coordinator
    }

    /// A private-queue context on `coordinator` that merges what its coordinator hears and keeps its objects.
    func view(_ coordinator: PersistentStoreCoordinator) -> ManagedObjectContext {
        let view = ManagedObjectContext(concurrencyType: .privateQueue)
        view.persistentStoreCoordinator = coordinator
        view.automaticallyMergesChangesFromParent = true
        view.performAndWait { view.retainsRegisteredObjects = true }
        return view
    }

    func title(_ id: ManagedObjectID, in view: ManagedObjectContext) -> String? {
        view.performAndWait { view.registeredObject(for: id)?.value(forKey: "title") as? String }
    }

    @Test func anotherCoordinatorsCommitIsPostedAndMerged() throws {
        let url = try PostgresTestServer.shared.get().makeDatabase()
        let listening = try coordinator(url), writing = try coordinator(url)
        let recorder = RemoteChangeRecorder(listening)
        let writer = ManagedObjectContext(concurrencyType: .confinement)
        writer.persistentStoreCoordinator = writing
        let note = writer.insert("Note", ["title": "before"])
        try writer.save()
        #expect(eventually { recorder.tokens.count == 1 })
        let id = try #require(listening.managedObjectID(forURIRepresentation: note.objectID.uriRepresentation()))
        let view = view(listening)
        #expect(try view.performAndWait { try view.existingObject(with: id).value(forKey: "title") as? String } == "before")

        note.setValue("after", forKey: "title")
        writer.insert("Note", ["title": "added elsewhere"])
        try writer.save()
        #expect(eventually { title(id, in: view) == "after" })
        #expect(try view.performAndWait { try view.all("Note").count } == 2)
        #expect(eventually { recorder.tokens.count == 2 })
        let info = try #require(recorder.received.last)
        #expect(info["storeUUID"] as? String == listening.persistentStores[0].identifier)
        #expect((info["historyToken"] as? PersistentHistoryToken)?.transactionNumbers.values.first == 2)
        // A new context of the listening coordinator is not served the old row from its cache.
        let fresh = ManagedObjectContext(concurrencyType: .confinement)
        fresh.persistentStoreCoordinator = listening
        #expect(try fresh.existingObject(with: id).value(forKey: "title") as? String == "after")
    }

    @Test func aCoordinatorsOwnCommitsArePostedButNotMergedTwice() async throws {
        let url = try PostgresTestServer.shared.get().makeDatabase()
        let coordinator = try coordinator(url)
        var changes = coordinator.remoteChanges.makeAsyncIterator()
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.persistentStoreCoordinator = coordinator
        try await context.perform {
            context.insert("Note", ["title": "mine"])
            try context.save()
        }
        let change = try #require(await changes.next())
        #expect(change.storeUUID == coordinator.persistentStores[0].identifier)
        #expect(change.historyToken?.transactionNumbers.values.first == 1)
    }

    @Test func aListenerThatLosesItsConnectionCatchesUpWithWhatItMissed() throws {
        let server = try PostgresTestServer.shared.get()
        let url = try server.makeDatabase()
        let listening = try coordinator(url), writing = try coordinator(url)
        let recorder = RemoteChangeRecorder(listening)
        let view = view(listening)
        let writer = ManagedObjectContext(concurrencyType: .confinement)
        writer.persistentStoreCoordinator = writing
        let note = writer.insert("Note", ["title": "0"])
        try writer.save()
        #expect(eventually { recorder.tokens.count == 1 })
        let id = try #require(listening.managedObjectID(forURIRepresentation: note.objectID.uriRepresentation()))
        _ = try view.performAndWait { try view.existingObject(with: id).value(forKey: "title") }

        // Every listening connection to the database is cut; saves go on meanwhile.
        let database = url.lastPathComponent
        try server.psql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '\(database)' AND query LIKE 'LISTEN%'")
        for i in 1...5 {
            note.setValue("\(i)", forKey: "title")
            try writer.save()
        }
        #expect(eventually { title(id, in: view) == "5" })
        #expect(eventually { recorder.tokens.compactMap { $0.transactionNumbers.values.first } == [1, 2, 3, 4, 5, 6] })
    }

    @Test func theLogNumbersCommitsWithoutGapsAndAGapIsReported() throws {
        let url = try PostgresTestServer.shared.get().makeDatabase()
        let coordinator = try coordinator(url)
        let store = coordinator.persistentStores[0]
        let backend = try #require(store.backend as? PostgresStore)
        let context = ManagedObjectContext(concurrencyType: .confinement)
        context.persistentStoreCoordinator = coordinator
        let folder = context.insert("Folder", ["name": "f"])
        let note = context.insert("Note", ["title": "a", "folder": folder])
        try context.save()
        note.setValue("b", forKey: "title")
        try context.save()
        context.delete(note)
        try context.save()
        // The writer's own rows come back with their numbers only: its coordinator took their changes in already.
        let own = try #require(try backend.read("test") { try PostgresChangeLog.entries(after: 0, limit: 10, backend: backend, store: store, session: $0) })
        #expect(own.map(\.number) == [1, 2, 3])
        #expect(own.allSatisfy { $0.author == backend.instanceID && $0.inserted.isEmpty && $0.updated.isEmpty && $0.deleted.isEmpty })
        // Another coordinator reads what each row changed.
        let reader = try self.coordinator(url).persistentStores[0]
        let other = try #require(reader.backend as? PostgresStore)
        let entries = try #require(try other.read("test") { try PostgresChangeLog.entries(after: 0, limit: 10, backend: other, store: store, session: $0) })
        #expect(entries.map(\.number) == [1, 2, 3])
        #expect(entries.allSatisfy { $0.author == backend.instanceID })
        #expect(Set(entries[0].inserted) == [folder.objectID, note.objectID])
        #expect(entries[1].updated == [note.objectID])
        #expect(entries[1].changedKeys[note.objectID] == ["title"])
        #expect(entries[2].deleted == [note.objectID])
        // Rows purged after the last one read: the reader is told it cannot name what it missed.
        try PostgresTestServer.shared.get().psql("DELETE FROM \"Z_OGCHANGE\" WHERE \"Z_TX\" = 2", database: url.lastPathComponent)
        #expect(try backend.read("test") { try PostgresChangeLog.entries(after: 1, limit: 10, backend: backend, store: store, session: $0) } == nil)
        #expect(try backend.read("test") { try PostgresChangeLog.entries(after: 2, limit: 10, backend: backend, store: store, session: $0) }?.map(\.number) == [3])
    }

    @Test func runsOfConsecutiveKeysAreOneLineEachAndReadBackWhole() throws {
        let url = try PostgresTestServer.shared.get().makeDatabase()
        let coordinator = try coordinator(url)
        let store = coordinator.persistentStores[0]
        let backend = try #require(store.backend as? PostgresStore)
        let note = try #require(coordinator.managedObjectModel.entitiesByName["Note"])
        let folder = try #require(coordinator.managedObjectModel.entitiesByName["Folder"])
        func saved(_ entity: EntityDescription, _ key: Int64) -> SavedObject {
            SavedObject(
                id: ManagedObjectID(entity: entity, store: store, primaryKey: key), entity: entity, values: [], changedIndices: [], expectedVersion: nil)
        }
        var request = StoreSaveRequest()
        request.inserted = [7, 3, 4, 5, 9].map { saved(note, $0) } + [saved(folder, 1)]
        request.deleted = [saved(note, 20), saved(note, 21)]
        let number = backend.schema.entityNumber(for: note)
        let text = PostgresChangeLog.encode(request, permanentIDs: [:], schema: backend.schema, deletedKeys: [number: [22, 23, 30]])
        let folderNumber = backend.schema.entityNumber(for: folder)
        #expect(text.split(separator: "\n").sorted() == [
            "D \(number) 20 23", "I \(number) 3 5", "d \(number) 30", "i \(folderNumber) 1", "i \(number) 7", "i \(number) 9",
        ].sorted())
        let entry = PostgresChangeLog.decode(text, number: 1, author: "someone", schema: backend.schema, store: store)
        #expect(Set(entry.inserted.map { $0.primaryKey! }) == [1, 3, 4, 5, 7, 9])
        #expect(Set(entry.inserted.filter { $0.entity === folder }.map { $0.primaryKey! }) == [1])
        #expect(entry.deleted.map { $0.primaryKey! }.sorted() == [20, 21, 22, 23, 30])
        #expect(entry.updated.isEmpty)
    }

    @Test func anotherCoordinatorHearsEveryRowOfABatchInsertAndDelete() throws {
        let url = try PostgresTestServer.shared.get().makeDatabase()
        let writing = try coordinator(url), listening = try coordinator(url)
        let context = ManagedObjectContext(concurrencyType: .confinement)
        context.persistentStoreCoordinator = writing
        _ = try context.execute(BatchInsertRequest(entityName: "Note", objects: (0..<500).map { ["title": "n\($0)"] as [String: any Sendable] }))
        let view = view(listening)
        #expect(eventually { (try? view.performAndWait { try view.all("Note").count }) == 500 })
        let delete = BatchDeleteRequest(fetchRequest: FetchRequest<ManagedObject>(entityName: "Note"))
        delete.resultType = .objectIDs
        let deleted = try #require((try context.execute(delete) as? BatchDeleteResult)?.result as? [ManagedObjectID])
        #expect(deleted.count == 500)
        // The log's row for the delete is one line, and the other coordinator reads all 500 IDs from it.
        let other = try #require(listening.persistentStores[0].backend as? PostgresStore)
        let entries = try #require(try other.read("test") {
            try PostgresChangeLog.entries(after: 0, limit: 10, backend: other, store: listening.persistentStores[0], session: $0)
        })
        #expect(entries.map { $0.inserted.count } == [500, 0])
        #expect(entries.map { $0.deleted.count } == [0, 500])
        #expect(Set(entries[1].deleted.map { $0.primaryKey! }) == Set(deleted.map { $0.primaryKey! }))
        let logged = try PostgresTestServer.shared.get().psql("SELECT \"Z_CHANGES\" FROM \"Z_OGCHANGE\" ORDER BY \"Z_TX\"", database: url.lastPathComponent)
        #expect(logged.split(separator: "\n").count == 2)
        #expect(eventually { (try? view.performAndWait { try view.all("Note").count }) == 0 })
    }

    @Test func aFailedSaveAnnouncesNothing() throws {
        let url = try PostgresTestServer.shared.get().makeDatabase()
        let listening = try coordinator(url), writing = try coordinator(url)
        let recorder = RemoteChangeRecorder(listening)
        let writer = ManagedObjectContext(concurrencyType: .confinement)
        writer.persistentStoreCoordinator = writing
        writer.insert("Note", ["title": "bad \u{0}"])
        #expect(throws: ObjectGraphError.self) { try writer.save() }
        writer.rollback()
        writer.insert("Note", ["title": "good"])
        try writer.save()
        #expect(eventually { recorder.tokens.count == 1 })
        #expect(recorder.tokens.first?.transactionNumbers.values.first == 1)
    }
}
