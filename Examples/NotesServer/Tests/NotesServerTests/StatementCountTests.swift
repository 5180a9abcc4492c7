import Foundation
import Hummingbird
import HummingbirdTesting
import NotesServerCore
import ObjectGraph
import Testing

/// The listings read related objects in a fixed number of statements, never one per row: counted
/// with the coordinator's statistics around each request, on a container whose row cache is cold.
@Suite("Listings without a statement per row")
struct StatementCountTests {
    /// `folders` folders of `notesEach` notes each, saved straight into the store.
    static func saveFolders(_ folders: Int, notesEach: Int, in container: PersistentContainer) async throws {
        try await container.performBackgroundTask { context in
            for f in 0..<folders {
                let folder = Folder(context: context)
                folder.name = "folder \(f)"
                for n in 0..<notesEach {
                    let note = Note(context: context)
                    note.title = "note \(n) of folder \(f)"
                    note.folder = folder
                }
            }
            try context.save()
        }
    }

    /// The statements the request to `uri` runs, on a new container over a store holding
    /// `folders` folders of two notes each; and the answer.
    static func statements<T: Decodable & Sendable>(
        listing uri: String, as type: T.Type, folders: Int, on kind: StoreKind
    ) async throws -> (count: Int, answer: T) {
        let store = try TestStore(kind)
        defer { store.remove() }
        let seeding = try NotesServer.container(store.configuration, logger: .quiet)
        try await saveFolders(folders, notesEach: 2, in: seeding)
        try await seeding.shutdown()

        let container = try NotesServer.container(store.configuration, logger: .quiet)
        let result = try await NotesServer.application(store.configuration, container: container, logger: .quiet).test(.router) { client in
            let before = container.persistentStoreCoordinator.statistics.sqlStatements
            let answer = try await client.send(.get, uri, as: T.self)
            return (container.persistentStoreCoordinator.statistics.sqlStatements - before, answer)
        }
        try await container.shutdown()
        return result
    }

    @Test(arguments: StoreKind.allCases)
    func listingFoldersWithTheirNoteCountsRunsThreeStatementsForTwoFoldersOrTwenty(on kind: StoreKind) async throws {
        let two = try await Self.statements(listing: "/folders", as: [FolderAnswer].self, folders: 2, on: kind)
        let twenty = try await Self.statements(listing: "/folders", as: [FolderAnswer].self, folders: 20, on: kind)
        #expect(two.answer.map(\.noteCount) == [2, 2])
        #expect(twenty.answer.count == 20)
        #expect(twenty.answer.allSatisfy { $0.noteCount == 2 })
        // The folders; their notes' IDs; the notes' rows. Faulting each folder's notes would be 1 + 20.
        #expect(two.count == 3)
        #expect(twenty.count == two.count)
    }

    @Test(arguments: StoreKind.allCases)
    func aPageOfNotesReadsTheirFoldersInOneStatement(on kind: StoreKind) async throws {
        let two = try await Self.statements(listing: "/notes", as: PageAnswer.self, folders: 2, on: kind)
        let twenty = try await Self.statements(listing: "/notes", as: PageAnswer.self, folders: 20, on: kind)
        #expect(two.answer.notes.count == 4)
        #expect(twenty.answer.notes.count == 40)
        #expect(Set(twenty.answer.notes.compactMap(\.folder)).count == 20)
        // The notes, then their folders; on PostgreSQL the notes' statement joins their folders' rows.
        // Faulting each note's folder would be 1 + 20.
        #expect(two.count == (kind == .postgres ? 1 : 2))
        #expect(twenty.count == two.count)
    }
}
