import Foundation
import Testing
import ObjectGraph

/// The README's example, verbatim but for the store's location.
@Suite("The README example")
struct ReadmeExampleTests {
    @Test func runsAsWritten() throws {
        let directory = TemporaryDirectory()
        let storeURL = directory.file("notes.sqlite")
        var printed: [Any] = []
        func print(_ value: Any) { printed.append(value) }

        let model = ManagedObjectModel(entities: [
            EntityDescription(name: "Folder", properties: [
                .attribute("name", .string, isOptional: false),
                .relationship("notes", destination: "Note", toMany: true, inverse: "folder", deleteRule: .cascade),
            ]),
            EntityDescription(name: "Note", properties: [
                .attribute("title", .string, isOptional: false, defaultValue: ""),
                .attribute("rank", .integer64, defaultValue: Int64(0)),
                .relationship("folder", destination: "Folder", toMany: false, inverse: "notes", deleteRule: .nullify),
            ]),
        ])
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        try coordinator.addPersistentStore(type: .sqlite, at: storeURL)

        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.persistentStoreCoordinator = coordinator
        try context.performAndWait {
            let inbox = context.insertNewObject(forEntityName: "Folder")
            inbox.setValue("Inbox", forKey: "name")
            let note = context.insertNewObject(forEntityName: "Note")
            note.setValue("Hello", forKey: "title")
            note.setValue(inbox, forKey: "folder")          // inbox.notes now contains note
            try context.save()

            let request = FetchRequest<ManagedObject>(entityName: "Note")
            request.predicate = FetchPredicate(format: "title BEGINSWITH[c] %@ AND folder.name == %@", "h", "Inbox")
            request.sortDescriptors = [FetchSortDescriptor(key: "rank", ascending: false)]
            print(try context.fetch(request).map { $0.value(forKey: "title")! })
        }
        #expect((printed.first as? [Any])?.compactMap { $0 as? String } == ["Hello"])
    }
}
