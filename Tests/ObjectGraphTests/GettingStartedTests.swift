import Foundation
import Testing
import ObjectGraph

/// The DocC "Getting Started" article's code, verbatim but for the store's location and the types
/// being nested (the test module has its own `Folder` and `Note`).
enum GettingStarted {
    @Managed final class Folder: ManagedObject {
        var name: String = ""
        @Relationship(deleteRule: .cascade, inverse: \Note.folder) var notes: Set<Note> = []
    }

    @Managed final class Note: ManagedObject {
        var title: String = ""
        var rank: Int64 = 0
        var created: Date?
        var folder: Folder?
    }
}

@Suite("The Getting Started article")
struct GettingStartedTests {
    @Test func runsAsWritten() async throws {
        typealias Folder = GettingStarted.Folder
        typealias Note = GettingStarted.Note
        let directory = TemporaryDirectory()

        let model = ManagedObjectModel(types: [Folder.self, Note.self])
        let container = PersistentContainer(name: "Notes", managedObjectModel: model)
        container.persistentStoreDescriptions = [PersistentStoreDescription(url: directory.file("Notes.sqlite"))]
        try container.loadPersistentStores()

        try await container.performBackgroundTask { context in
            let inbox = Folder(context: context)
            inbox.name = "Inbox"
            for i in 0..<1_000 {
                let note = Note(context: context)
                note.title = "Note \(i)"
                note.rank = Int64(i)
                note.folder = inbox
            }
            try context.save()
        }

        let titles = try await container.performBackgroundTask { context in
            try context.fetch(FetchDescriptor<Note>(
                predicate: #Predicate { $0.rank < 3 && $0.folder?.name == "Inbox" },
                sortBy: [SortDescriptor(\.rank)]
            )).map(\.title)
        }
        #expect(titles == ["Note 0", "Note 1", "Note 2"])
        let count = try await container.performBackgroundTask { context in
            try context.fetch(FetchDescriptor<Folder>()).first?.notes.count
        }
        #expect(count == 1_000)

        try await container.shutdown()
    }
}
