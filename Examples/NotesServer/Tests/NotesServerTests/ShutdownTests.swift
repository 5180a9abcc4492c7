import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
@testable import NotesServerCore
import ObjectGraph
import ServiceLifecycle
import Testing

@Suite("Graceful shutdown")
struct ShutdownTests {
    /// Whether a new connection to `port` is refused: a request on it fails to connect.
    static func refusesConnections(on port: Int) async -> Bool {
        do {
            _ = try await TestClient.withClient(host: "127.0.0.1", port: port) { client in try await client.get("/health") }
            return false
        } catch {
            return true
        }
    }

    @Test func aRequestInFlightWhenShutdownBeginsIsAnsweredAndSavedWhileNewConnectionsAreRefused() async throws {
        let store = try TestStore(.sqlite)
        defer { store.remove() }
        let container = try NotesServer.container(store.configuration, logger: .quiet)
        let (entered, enteredSignal) = AsyncStream<Void>.makeStream()
        let (release, releaseSignal) = AsyncStream<Void>.makeStream()
        let (listening, listeningSignal) = AsyncStream<Int>.makeStream()
        var api = NotesAPI(container: container)
        // The PATCH stops once its body is read, until the test lets it go.
        api.hooks.beforeChange = { _ in
            enteredSignal.yield()
            for await _ in release { break }
        }
        let application = NotesServer.application(store.configuration, api: api, logger: .quiet) { port in listeningSignal.yield(port) }
        let group = NotesServer.serviceGroup(container: container, application: application, logger: .quiet)

        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            var ports = listening.makeAsyncIterator()
            let firstPort = await ports.next()
            let port = try #require(firstPort)
            let note = try await TestClient.withClient(host: "127.0.0.1", port: port) { client in
                let created = try await client.post("/notes", headers: [.contentType: "application/json"], body: ByteBuffer(string: #"{"title": "before"}"#))
                #expect(created.status == .created)
                return try JSONDecoder().decode(NoteAnswer.self, from: Data(buffer: try #require(created.body)))
            }

            let patch = Task {
                try await TestClient.withClient(host: "127.0.0.1", port: port) { client in
                    try await client.execute(.init(
                        "/notes/\(note.id)", method: .patch, headers: [.contentType: "application/json"], body: ByteBuffer(string: #"{"title": "after"}"#)))
                }
            }
            var entries = entered.makeAsyncIterator()
            _ = await entries.next()

            // SIGTERM's effect: the server stops listening while the PATCH is still under way.
            await group.triggerGracefulShutdown()
            let deadline = ContinuousClock.now + .seconds(10)
            var refused = await Self.refusesConnections(on: port)
            while !refused, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
                refused = await Self.refusesConnections(on: port)
            }
            #expect(refused, "a new connection is refused once shutdown has begun")

            releaseSignal.yield()
            let answer = try await patch.value
            #expect(answer.status == .ok)
            #expect(try JSONDecoder().decode(NoteAnswer.self, from: Data(buffer: try #require(answer.body))).title == "after")
            try await tasks.waitForAll()
            #expect(await Self.refusesConnections(on: port))
        }

        // The container was shut down by the group after the PATCH's save: the store has it.
        let reopened = try NotesServer.container(store.configuration, logger: .quiet)
        let titles = try await reopened.performBackgroundTask { context in try context.fetch(FetchDescriptor<Note>()).map(\.title) }
        #expect(titles == ["after"])
        try await reopened.shutdown()
    }
}
