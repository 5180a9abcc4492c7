import Foundation
import Hummingbird
import HummingbirdTesting
@testable import NotesServerCore
import ObjectGraph
import Testing

@Suite("PATCH /notes/ID conflicts")
struct ConflictTests {
    @Test func aChangeSavedByAnotherContextFirstMakesThePatchAnswer409WithAJSONError() async throws {
        let store = try TestStore(.sqlite)
        defer { store.remove() }
        let container = try NotesServer.container(store.configuration, logger: .quiet)
        // Between the request's read of the note and its save, another context (another client's
        // request, another instance) changes and saves the same note.
        var api = NotesAPI(container: container)
        api.hooks.beforeChangeIsSaved = { id in
            let other = container.newBackgroundContext()
            other.performAndWait {
                let note = try? other.fetch(FetchDescriptor<Note>(predicate: #Predicate { $0.id == id })).first
                note?.title = "saved first by the other client"
                try? other.save()
            }
        }
        let note = try await NotesServer.application(store.configuration, container: container, logger: .quiet).test(.router) { client in
            try await client.send(.post, "/notes", #"{"title": "original"}"#, as: NoteAnswer.self, expect: .created)
        }
        try await NotesServer.application(store.configuration, api: api, logger: .quiet).test(.router) { client in
            let answer = try await client.execute(
                uri: "/notes/\(note.id)", method: .patch, headers: [.contentType: "application/json"], body: ByteBuffer(string: #"{"title": "mine"}"#))
            #expect(answer.status == .conflict)
            #expect(answer.headers[.contentType] == "application/json; charset=utf-8")
            let error = try JSONDecoder().decode(ErrorAnswer.self, from: Data(buffer: answer.body))
            #expect(error.error.message == "The note was changed by another request; read it again")
            #expect(try await client.send(.get, "/notes/\(note.id)", as: NoteAnswer.self).title == "saved first by the other client")
        }
        // Read again and changed again, with no one in between, the change is saved.
        try await NotesServer.application(store.configuration, container: container, logger: .quiet).test(.router) { client async throws in
            #expect(try await client.send(.patch, "/notes/\(note.id)", #"{"title": "mine"}"#, as: NoteAnswer.self).title == "mine")
            #expect(try await client.send(.get, "/notes/\(note.id)", as: NoteAnswer.self).title == "mine")
        }
        try await container.shutdown()
    }
}
