import Foundation
import Testing
import ObjectGraph

/// The README's example, verbatim but for the store's location, `print`, and the types being nested
/// (the test module has its own `Folder` and `Note`).
enum ReadmeExample {
    @Managed final class Folder: ManagedObject {
        var name: String = ""
        @Relationship(deleteRule: .cascade, inverse: \Note.folder) var notes: Set<Note> = []
    }

    @Managed final class Note: ManagedObject {
        var title: String = ""
        var rank: Int64 = 0
        var folder: Folder?
    }
}

@Suite("The README example")
struct ReadmeExampleTests {
    @Test func runsAsWritten() throws {
        typealias Folder = ReadmeExample.Folder
        typealias Note = ReadmeExample.Note
        let directory = TemporaryDirectory()
        let storeURL = directory.file("notes.sqlite")
        var printed: [[String]] = []
        func print(_ value: [String]) { printed.append(value) }

        let model = ManagedObjectModel(types: [Folder.self, Note.self])
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        try coordinator.addPersistentStore(type: .sqlite, at: storeURL)

        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.persistentStoreCoordinator = coordinator
        try context.performAndWait {
            let inbox = Folder(context: context)
            inbox.name = "Inbox"
            let note = Note(context: context)
            note.title = "Hello"
            note.folder = inbox                      // inbox.notes now contains note
            try context.save()

            let top = try context.fetch(FetchDescriptor<Note>(
                predicate: #Predicate { $0.title.starts(with: "H") && $0.folder?.name == "Inbox" },
                sortBy: [SortDescriptor(\.rank, order: .reverse)]))
            print(top.map(\.title))
        }
        #expect(printed == [["Hello"]])

        // The same model, in code, for dynamic use.
        let dynamic = PersistentStoreCoordinator(managedObjectModel: ManagedObjectModel(entities: [
            EntityDescription(name: "Folder", properties: [
                .attribute("name", .string, isOptional: false, defaultValue: ""),
                .relationship("notes", destination: "Note", toMany: true, inverse: "folder", deleteRule: .cascade),
            ]),
            EntityDescription(name: "Note", properties: [
                .attribute("title", .string, isOptional: false, defaultValue: ""),
                .attribute("rank", .integer64, isOptional: false, defaultValue: Int64(0)),
                .relationship("folder", destination: "Folder", inverse: "notes"),
            ]),
        ]))
        #expect(dynamic.managedObjectModel.versionHash == model.versionHash)
        try dynamic.addPersistentStore(type: .sqlite, at: storeURL)
        let reader = ManagedObjectContext(concurrencyType: .privateQueue)
        reader.persistentStoreCoordinator = dynamic
        try reader.performAndWait {
            let request = FetchRequest<ManagedObject>(entityName: "Note")
            request.predicate = FetchPredicate(format: "title BEGINSWITH[c] %@ AND folder.name == %@", "h", "Inbox")
            request.sortDescriptors = [FetchSortDescriptor(key: "rank", ascending: false)]
            print(try reader.fetch(request).map { $0.value(forKey: "title") as! String })
        }
        #expect(printed == [["Hello"], ["Hello"]])
    }

    /// The background import feeding a list, verbatim but for the store's location, `show` and
    /// `print`; then the container shuts down while the results stream is still referenced, and the
    /// stream, ending after it, releases its controller without asking the closed view context.
    @Test func theBackgroundImportFeedsTheViewContextsResults() async throws {
        typealias Folder = ReadmeExample.Folder
        typealias Note = ReadmeExample.Note
        let directory = TemporaryDirectory()
        let shown = Recorder<Int>()
        @Sendable func show(_ ids: [ManagedObjectID]) { shown.append(ids.count) }
        var printed: [Int] = []
        func print(_ value: Int) { printed.append(value) }
        let model = ManagedObjectModel(types: [Folder.self, Note.self])

        let container = PersistentContainer(name: "Notes", managedObjectModel: model)
        container.persistentStoreDescriptions = [PersistentStoreDescription(url: directory.file("Notes.sqlite"))]
        try container.loadPersistentStores()
        let view = container.viewContext                  // the main queue's context
        view.automaticallyMergesChangesFromParent = true  // merges other contexts' saves and batch requests that ask

        let ids = await view.perform { view.results(for: FetchDescriptor<Note>(sortBy: [SortDescriptor(\.rank)])) }
        let list = Task {                                 // IDs are Sendable: the list can live on any queue
            for await current in ids {                    // the IDs now, then after every change the view merges
                show(current)
                if current.count == 1_000 { return current }
            }
            return []
        }

        try await container.performBackgroundTask { context in
            let rows: [[String: any Sendable]] = (0..<1_000).map { ["title": "Note \($0)", "rank": Int64($0)] }
            let insert = BatchInsertRequest(entityName: "Note", objects: rows)   // straight to the store, no objects
            insert.mergesChangesIntoContexts = true       // contexts that merge automatically hear of the new rows
            try context.execute(insert)
        }
        print(await list.value.count)                     // 1000

        #expect(printed == [1_000])
        #expect(shown.values.last == 1_000)
        #expect(shown.values.allSatisfy { $0 == 0 || $0 == 1_000 }, "the list saw \(shown.values)")
        // The list's IDs are the notes', in rank order.
        let listed = await list.value
        let stored = try await view.perform {
            try view.fetch(FetchDescriptor<Note>(sortBy: [SortDescriptor(\.rank)])).map { ($0.objectID, $0.rank) }
        }
        #expect(listed == stored.map(\.0))
        #expect(stored.map(\.1) == (0..<1_000).map(Int64.init))
        try await container.shutdown()
        withExtendedLifetime(ids) {}
    }
}
