import Foundation
import Hummingbird
import HummingbirdTesting
@testable import NotesServerCore
import ObjectGraph
import Testing

@Suite("503 when the store cannot serve")
struct StoreUnavailableTests {
    /// What the PostgreSQL store throws when its server cannot be reached (`.io`) or its pool stays
    /// busy (`.busy`) is a 503 with `Retry-After`; other errors keep their answers. (Examples/LoadTest
    /// restarts a real PostgreSQL server under load and checks the 503s and the recovery.)
    @Test func unreachableOrBusyStoreAnswers503WithRetryAfter() async throws {
        let router = Router()
        router.add(middleware: StoreUnavailable())
        router.get("io") { _, _ -> String in
            throw ObjectGraphError(.io, "The PostgreSQL server of the store could not be reached while fetching: connectionError")
        }
        router.get("busy") { _, _ -> String in throw ObjectGraphError(.busy, "all 6 connections of the pool stayed in use") }
        router.get("validation") { _, _ -> String in throw ObjectGraphError(.validation, "title is too long") }
        router.get("missing") { _, _ -> String in throw HTTPError(.notFound) }
        try await Application(router: router).test(.router) { client in
            for path in ["/io", "/busy"] {
                let answer = try await client.execute(uri: path, method: .get)
                #expect(answer.status == .serviceUnavailable)
                #expect(answer.headers[.retryAfter] == "1")
                #expect(String(buffer: answer.body).contains("try again"))
            }
            #expect(try await client.execute(uri: "/validation", method: .get).status == .internalServerError)
            #expect(try await client.execute(uri: "/missing", method: .get).status == .notFound)
        }
    }
}
