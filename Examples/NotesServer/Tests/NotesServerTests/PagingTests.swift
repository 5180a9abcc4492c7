import Foundation
import Hummingbird
import HummingbirdTesting
import NotesServerCore
import ObjectGraph
import Prometheus
import Testing

@Suite("GET /notes pages")
struct PagingTests {
    /// Saves notes with the given `updated` dates (seconds after a fixed date) straight into the
    /// store; their IDs, newest first (`updated` descending, then `id` descending, as the store
    /// orders 16-byte IDs: bytewise, which is the order of their uppercase text).
    static func saveNotes(updated seconds: [Double], in container: PersistentContainer, folder: String? = nil) async throws -> [UUID] {
        let saved = try await container.performBackgroundTask { context in
            let home = folder.map { name in
                let home = Folder(context: context)
                home.name = name
                return home
            }
            let notes = seconds.enumerated().map { i, offset in
                let note = Note(context: context)
                note.title = "note \(i)"
                note.updated = Date(timeIntervalSinceReferenceDate: 700_000_000 + offset)
                note.folder = home
                return (note.updated, note.id)
            }
            try context.save()
            return notes
        }
        return saved.sorted { $0.0 != $1.0 ? $0.0 > $1.0 : $0.1.uuidString > $1.1.uuidString }.map(\.1)
    }

    @Test(arguments: StoreKind.allCases)
    func pagesFollowTheCursorAndStayPutWhenNotesAreAddedBetweenThem(on kind: StoreKind) async throws {
        let store = try TestStore(kind)
        defer { store.remove() }
        let container = try NotesServer.container(store.configuration, logger: .quiet)
        // Three notes share one instant: their IDs order them, and the first page ends between them.
        let expected = try await Self.saveNotes(updated: [1, 2, 3, 3, 3, 4], in: container)
        try await NotesServer.application(store.configuration, container: container, logger: .quiet).test(.router) { client in
            let first = try await client.send(.get, "/notes?limit=3", as: PageAnswer.self)
            #expect(first.notes.map(\.id) == Array(expected[0..<3]))
            let cursor = try #require(first.next)

            // Notes added between two pages are newer than the cursor: the next page is the same.
            _ = try await client.send(.post, "/notes", #"{"title": "added between pages"}"#, as: NoteAnswer.self, expect: .created)
            _ = try await Self.saveNotes(updated: [5, 6], in: container)
            let second = try await client.send(.get, "/notes?limit=3&cursor=\(cursor)", as: PageAnswer.self)
            #expect(second.notes.map(\.id) == Array(expected[3...]))
            #expect(second.next == nil, "the last page has no next")

            // The first page now starts with the notes added.
            let again = try await client.send(.get, "/notes?limit=4", as: PageAnswer.self)
            #expect(again.notes.first?.title == "added between pages")
            #expect(again.notes.map(\.id).suffix(1) == expected.prefix(1))
        }
        try await container.shutdown()
    }

    @Test func aPageThatEndsExactlyAtTheLastNoteHasNoNextAndTheJSONLeavesItOut() async throws {
        let store = try TestStore(.sqlite)
        defer { store.remove() }
        let container = try NotesServer.container(store.configuration, logger: .quiet)
        let expected = try await Self.saveNotes(updated: [1, 2, 3, 4], in: container)
        try await NotesServer.application(store.configuration, container: container, logger: .quiet).test(.router) { client in
            let first = try await client.send(.get, "/notes?limit=2", as: PageAnswer.self)
            let last = try await client.execute(uri: "/notes?limit=2&cursor=\(try #require(first.next))", method: .get)
            #expect(last.status == .ok)
            let page = try JSONDecoder().decode(PageAnswer.self, from: Data(buffer: last.body))
            #expect(first.notes.map(\.id) + page.notes.map(\.id) == expected)
            #expect(page.next == nil)
            #expect(!String(buffer: last.body).contains("next"), "\(String(buffer: last.body))")
        }
        try await container.shutdown()
    }

    @Test func aFolderIsPagedOnItsOwnAndFiftyNotesMakeTheDefaultPage() async throws {
        let store = try TestStore(.sqlite)
        defer { store.remove() }
        let container = try NotesServer.container(store.configuration, logger: .quiet)
        let inFolder = try await Self.saveNotes(updated: [10, 20, 30], in: container, folder: "Work")
        _ = try await Self.saveNotes(updated: (0..<52).map(Double.init), in: container)
        try await NotesServer.application(store.configuration, container: container, logger: .quiet).test(.router) { client in
            let folders = try await client.send(.get, "/folders", as: [FolderAnswer].self)
            let work = try #require(folders.first)
            var seen: [UUID] = []
            var uri = "/notes?folder=\(work.id)&limit=1"
            while true {
                let page = try await client.send(.get, uri, as: PageAnswer.self)
                #expect(page.notes.count == 1)
                seen += page.notes.map(\.id)
                guard let next = page.next, seen.count <= inFolder.count else { break }
                uri = "/notes?folder=\(work.id)&limit=1&cursor=\(next)"
            }
            #expect(seen == inFolder)

            let all = try await client.send(.get, "/notes", as: PageAnswer.self)
            #expect(all.notes.count == 50)
            #expect(all.next != nil)
            #expect(try await client.send(.get, "/notes?limit=200", as: PageAnswer.self).notes.count == 55)
        }
        try await container.shutdown()
    }

    /// The value of a counter of ObjectGraph's in `registry` (0 before it counts anything).
    static func count(_ metric: ObjectGraphMetric, in registry: PrometheusCollectorRegistry) -> Int {
        let line = registry.emitToString().split(separator: "\n").first { $0.hasPrefix(metric.rawValue + "{") }
        return line.flatMap { $0.split(separator: " ").last }.flatMap { Int($0) } ?? 0
    }

    @Test(arguments: StoreKind.allCases)
    func theStoreReadsOnlyThePagesRowsAndOneMore(on kind: StoreKind) async throws {
        let store = try TestStore(kind)
        defer { store.remove() }
        let registry = PrometheusCollectorRegistry()
        let container = try NotesServer.container(store.configuration, logger: .quiet, metricsFactory: PrometheusMetricsFactory(registry: registry))
        let expected = try await Self.saveNotes(updated: (0..<60).map(Double.init), in: container)
        try await NotesServer.application(store.configuration, container: container, logger: .quiet).test(.router) { client in
            let before = Self.count(.fetchedRows, in: registry)
            let first = try await client.send(.get, "/notes?limit=5", as: PageAnswer.self)
            #expect(Self.count(.fetchedRows, in: registry) - before == 6, "the page's 5 rows and one to tell that a page follows")
            let second = try await client.send(.get, "/notes?limit=5&cursor=\(try #require(first.next))", as: PageAnswer.self)
            #expect(Self.count(.fetchedRows, in: registry) - before == 12)
            #expect((first.notes + second.notes).map(\.id) == Array(expected.prefix(10)))
        }
        try await container.shutdown()
    }

    @Test(arguments: ["0", "201", "-1", "ten"])
    func aLimitOutsideOneTo200IsRefusedWithAMessage(limit: String) async throws {
        let store = try TestStore(.sqlite)
        defer { store.remove() }
        let container = try NotesServer.container(store.configuration, logger: .quiet)
        try await NotesServer.application(store.configuration, container: container, logger: .quiet).test(.router) { client in
            let answer = try await client.send(.get, "/notes?limit=\(limit)", as: ErrorAnswer.self, expect: .badRequest)
            #expect(answer.error.message == "limit must be a whole number from 1 to 200, not '\(limit)'")
        }
        try await container.shutdown()
    }

    @Test func aCursorTheServerDidNotGiveIsRefused() async throws {
        let store = try TestStore(.sqlite)
        defer { store.remove() }
        let container = try NotesServer.container(store.configuration, logger: .quiet)
        try await NotesServer.application(store.configuration, container: container, logger: .quiet).test(.router) { client in
            let answer = try await client.send(.get, "/notes?cursor=bm90LWEtY3Vyc29y", as: ErrorAnswer.self, expect: .badRequest)
            #expect(answer.error.message.contains("is not one this server gave"))
        }
        try await container.shutdown()
    }
}
