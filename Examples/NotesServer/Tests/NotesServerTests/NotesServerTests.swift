import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import NotesServerCore
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A throwaway PostgreSQL cluster on a free loopback port (PostgreSQL 15's `initdb` and `pg_ctl`,
/// as the `postgres` user when the tests run as root), or the server `OBJECTGRAPH_TEST_POSTGRES_URL`
/// names. Stopped by a watchdog when the test process ends.
enum TestPostgres {
    static let server: Result<String, any Error> = Result {
        if let given = ProcessInfo.processInfo.environment["OBJECTGRAPH_TEST_POSTGRES_URL"] {
            var url = URLComponents(string: given)!
            url.path = ""
            return url.string!
        }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("notesserver-pg-\(getpid())").path
        let port = 20000 + Int(getpid() % 20000)
        let asServer = geteuid() == 0 ? "runuser -u postgres -- " : ""
        let bin = "/usr/lib/postgresql/15/bin"
        try shell("mkdir -p '\(folder)' && \(geteuid() == 0 ? "chown postgres:postgres '\(folder)' && " : "")"
            + "\(asServer)\(bin)/initdb -D '\(folder)/data' -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 --no-sync >/dev/null "
            + "&& \(asServer)\(bin)/pg_ctl -D '\(folder)/data' -o '-p \(port) -c listen_addresses=127.0.0.1 -k \(folder) -c fsync=off' -l '\(folder)/log' -w start >/dev/null")
        try shell("( while kill -0 \(getpid()) 2>/dev/null; do sleep 1; done; \(asServer)\(bin)/pg_ctl -D '\(folder)/data' -m immediate -w stop; rm -rf '\(folder)' ) </dev/null >/dev/null 2>&1 &")
        return "postgres://postgres@127.0.0.1:\(port)"
    }

    /// A new database; its URL.
    static func database() throws -> URL {
        let server = try server.get()
        let name = "notes_" + UUID().uuidString.prefix(8).lowercased()
        try shell("psql '\(server)/postgres' -X -q -c 'CREATE DATABASE \(name)' >/dev/null")
        return URL(string: "\(server)/\(name)")!
    }

    static func shell(_ command: String) throws {
        let status = system(command)
        guard status == 0 else { throw ConfigurationErrorForTests("`\(command)` failed (\(status))") }
    }
}

struct ConfigurationErrorForTests: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// The messages logged through a logger made by ``logger(_:)``, with their level and metadata.
final class LogRecords: Sendable {
    struct Entry: Sendable { var level: Logger.Level; var message: String; var metadata: Logger.Metadata }
    private let entries = Mutex<[Entry]>([])
    var all: [Entry] { entries.withLock { $0 } }

    /// A logger at the `info` level, a server's default, that records into these records.
    func logger(_ label: String = "NotesServer") -> Logger {
        var logger = Logger(label: label) { _ in Handler(records: self) }
        logger.logLevel = .info
        return logger
    }

    func append(_ entry: Entry) { entries.withLock { $0.append(entry) } }

    struct Handler: LogHandler {
        let records: LogRecords
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .info
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        func log(event: LogEvent) {
            records.append(Entry(level: event.level, message: event.message.description, metadata: metadata.merging(event.metadata ?? [:]) { $1 }))
        }
    }
}

/// What the tests read of the answers (the dates are left out).
struct NoteAnswer: Decodable, Equatable { var id: UUID; var title: String; var folder: UUID? }
struct FolderAnswer: Decodable, Equatable { var id: UUID; var name: String; var noteCount: Int }
struct PageAnswer: Decodable, Equatable { var notes: [NoteAnswer]; var next: String? = nil }
/// The body of an error answer (Hummingbird's `HTTPError`).
struct ErrorAnswer: Decodable, Equatable { struct Message: Decodable, Equatable { var message: String }; var error: Message }

extension Logger {
    /// A logger that drops everything, for the tests that do not read the logs.
    static let quiet = Logger(label: "NotesServerTests") { _ in SwiftLogNoOpLogHandler() }
}

extension TestClientProtocol {
    func send<T: Decodable>(_ method: HTTPRequest.Method, _ uri: String, _ json: String? = nil, as type: T.Type, expect status: HTTPResponse.Status = .ok) async throws -> T {
        var headers = HTTPFields()
        if json != nil { headers[.contentType] = "application/json" }
        let response = try await execute(uri: uri, method: method, headers: headers, body: json.map { ByteBuffer(string: $0) })
        #expect(response.status == status, "\(method) \(uri): \(String(buffer: response.body))")
        return try JSONDecoder().decode(T.self, from: Data(buffer: response.body))
    }
}

@Suite("NotesServer")
struct NotesServerTests {
    @Test func twoInstancesOnOneDatabaseSeeEachOthersWrites() async throws {
        let database = try TestPostgres.database()
        let configuration = NotesServerConfiguration(postgres: database, port: 0)
        let containerA = try NotesServer.container(configuration, logger: .quiet), containerB = try NotesServer.container(configuration, logger: .quiet)
        let a = NotesServer.application(configuration, container: containerA, logger: .quiet), b = NotesServer.application(configuration, container: containerB, logger: .quiet)
        try await a.test(.live) { clientA in
            try await b.test(.live) { clientB in
                #expect(clientA.port != clientB.port)
                let inbox = try await clientA.send(.post, "/folders", #"{"name": "Inbox"}"#, as: FolderAnswer.self, expect: .created)
                let note = try await clientA.send(
                    .post, "/notes", #"{"title": "from A", "folder": "\#(inbox.id)"}"#, as: NoteAnswer.self, expect: .created)

                // B sees A's note within a second.
                let deadline = Date().addingTimeInterval(1)
                var seen: [NoteAnswer] = []
                while Date() < deadline {
                    seen = try await clientB.send(.get, "/notes?folder=\(inbox.id)", as: PageAnswer.self).notes
                    if !seen.isEmpty { break }
                    try await Task.sleep(for: .milliseconds(20))
                }
                #expect(seen == [note])
                #expect(try await clientB.send(.get, "/folders", as: [FolderAnswer].self) == [FolderAnswer(id: inbox.id, name: "Inbox", noteCount: 1)])

                // B changes it; A reads the change.
                let changed = try await clientB.send(.patch, "/notes/\(note.id)", #"{"title": "changed by B"}"#, as: NoteAnswer.self)
                #expect(changed.title == "changed by B")
                #expect(try await clientA.send(.get, "/notes/\(note.id)", as: NoteAnswer.self).title == "changed by B")

                // A deletes it; B no longer finds it.
                let deleted = try await clientA.execute(uri: "/notes/\(note.id)", method: .delete)
                #expect(deleted.status == .noContent)
                let missing = try await clientB.execute(uri: "/notes/\(note.id)", method: .get)
                #expect(missing.status == .notFound)
            }
        }
        try await containerA.shutdown()
        try await containerB.shutdown()
    }

    @Test func onSQLiteByDefault() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("notesserver-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let configuration = NotesServerConfiguration(sqliteFile: folder.appendingPathComponent("Notes.sqlite"), port: 0)
        let container = try NotesServer.container(configuration, logger: .quiet)
        try await NotesServer.application(configuration, container: container, logger: .quiet).test(.router) { client in
            let note = try await client.send(.post, "/notes", #"{"title": "local"}"#, as: NoteAnswer.self, expect: .created)
            #expect(try await client.send(.get, "/notes", as: PageAnswer.self) == PageAnswer(notes: [note]))
            let bad = try await client.execute(uri: "/notes", method: .post, headers: [.contentType: "application/json"], body: ByteBuffer(string: #"{"title": "x", "folder": "\#(UUID())"}"#))
            #expect(bad.status == .badRequest)
        }
        try await container.shutdown()
        #expect(FileManager.default.fileExists(atPath: configuration.sqliteFile.path))
    }

    /// Creates `count` folders and `count` notes in them through `client`: every create answers 201
    /// with an ID of its own, and the listings return them all.
    static func createSeveral(
        _ count: Int, through client: some TestClientProtocol, named prefix: String
    ) async throws -> (folders: [FolderAnswer], notes: [NoteAnswer]) {
        var folders: [FolderAnswer] = []
        var notes: [NoteAnswer] = []
        for i in 0..<count {
            folders.append(try await client.send(.post, "/folders", #"{"name": "\#(prefix) folder \#(i)"}"#, as: FolderAnswer.self, expect: .created))
        }
        for (i, folder) in folders.enumerated() {
            notes.append(try await client.send(
                .post, "/notes", #"{"title": "\#(prefix) note \#(i)", "folder": "\#(folder.id)"}"#, as: NoteAnswer.self, expect: .created))
        }
        notes.append(try await client.send(.post, "/notes", #"{"title": "\#(prefix) loose note"}"#, as: NoteAnswer.self, expect: .created))
        #expect(Set(folders.map(\.id)).count == folders.count)
        #expect(Set(notes.map(\.id)).count == notes.count)
        return (folders, notes)
    }

    @Test func severalFoldersAndNotesAreCreatedOnANewSQLiteStore() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("notesserver-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let configuration = NotesServerConfiguration(sqliteFile: folder.appendingPathComponent("Notes.sqlite"), port: 0)
        let container = try NotesServer.container(configuration, logger: .quiet)
        try await NotesServer.application(configuration, container: container, logger: .quiet).test(.router) { client in
            let (folders, notes) = try await Self.createSeveral(3, through: client, named: "local")
            let listed = try await client.send(.get, "/folders", as: [FolderAnswer].self)
            #expect(listed == folders.map { FolderAnswer(id: $0.id, name: $0.name, noteCount: 1) })
            #expect(Set(try await client.send(.get, "/notes", as: PageAnswer.self).notes.map(\.id)) == Set(notes.map(\.id)))
            for (i, folder) in folders.enumerated() {
                #expect(try await client.send(.get, "/notes?folder=\(folder.id)", as: PageAnswer.self) == PageAnswer(notes: [notes[i]]))
            }
        }
        try await container.shutdown()
    }

    @Test func severalFoldersAndNotesAreCreatedByEachOfTwoInstancesOnANewDatabase() async throws {
        let database = try TestPostgres.database()
        let configuration = NotesServerConfiguration(postgres: database, port: 0)
        let containerA = try NotesServer.container(configuration, logger: .quiet), containerB = try NotesServer.container(configuration, logger: .quiet)
        let a = NotesServer.application(configuration, container: containerA, logger: .quiet), b = NotesServer.application(configuration, container: containerB, logger: .quiet)
        try await a.test(.live) { clientA in
            try await b.test(.live) { clientB in
                let fromA = try await Self.createSeveral(3, through: clientA, named: "A")
                let fromB = try await Self.createSeveral(3, through: clientB, named: "B")
                let folders = fromA.folders + fromB.folders, notes = fromA.notes + fromB.notes
                #expect(Set(folders.map(\.id)).count == 6)
                #expect(Set(notes.map(\.id)).count == 8)
                for client in [clientA, clientB] as [any TestClientProtocol] {
                    #expect(Set(try await client.send(.get, "/folders", as: [FolderAnswer].self).map(\.id)) == Set(folders.map(\.id)))
                    #expect(Set(try await client.send(.get, "/notes", as: PageAnswer.self).notes.map(\.id)) == Set(notes.map(\.id)))
                }
            }
        }
        try await containerA.shutdown()
        try await containerB.shutdown()
    }

    @Test func aServerErrorIsLoggedWithItsError() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("notesserver-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let configuration = NotesServerConfiguration(sqliteFile: folder.appendingPathComponent("Notes.sqlite"), port: 0)
        let container = try NotesServer.container(configuration, logger: .quiet)
        let records = LogRecords()
        try await NotesServer.application(configuration, container: container, logger: records.logger()).test(.router) { client in
            _ = try await client.send(.post, "/folders", #"{"name": "Inbox"}"#, as: FolderAnswer.self, expect: .created)
            let missing = try await client.execute(uri: "/notes/\(UUID())", method: .get)
            #expect(missing.status == .notFound)
            #expect(records.all.filter { $0.level >= .error }.isEmpty, "answers below 500 are not logged: \(records.all.map(\.message))")

            // A closed store: every request that needs it fails with a 500, which is logged with its error.
            try await container.shutdown()
            let failed = try await client.execute(uri: "/folders", method: .get)
            #expect(failed.status == .internalServerError)
            let errors = records.all.filter { $0.level == .error }
            #expect(errors.count == 1)
            let logged = try #require(errors.first)
            #expect(logged.message.contains("GET /folders answered 500"))
            #expect(logged.message.contains("shut down"), "the error is logged: \(logged.message)")
            #expect(logged.metadata["error.type"] == "PersistentContainerError")
            #expect(logged.metadata["hb.request.id"] != nil)
        }
    }

    @Test func theCommandLineIsRead() throws {
        let configuration = try NotesServerConfiguration(arguments: ["--postgres", "postgres://u@h/db", "--port", "9000"])
        #expect(configuration.postgres?.host == "h")
        #expect(configuration.port == 9000)
        #expect(throws: ConfigurationError.self) { try NotesServerConfiguration(arguments: ["--port", "x"]) }
        #expect(throws: ConfigurationError.self) { try NotesServerConfiguration(arguments: ["--nonsense", "1"]) }
    }
}
