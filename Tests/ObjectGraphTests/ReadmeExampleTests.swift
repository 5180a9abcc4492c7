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
}
