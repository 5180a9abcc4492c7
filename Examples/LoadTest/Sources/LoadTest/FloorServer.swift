import Foundation
import Hummingbird
import Logging
import PostgresNIO
import ServiceLifecycle

// The floor: NotesServer's routes written directly on PostgresNIO (a PostgresClient and
// parameterized SQL), served by Hummingbird, on tables of their own: the same JSON, the same
// rules (404, 400, 409 when another request saved the note between this one's read and its
// update, 503 with Retry-After when the database cannot be reached).

enum FloorServer {
    static let schema = [
        "CREATE TABLE IF NOT EXISTS folders (id uuid PRIMARY KEY, name text NOT NULL)",
        """
        CREATE TABLE IF NOT EXISTS notes (id uuid PRIMARY KEY, title text NOT NULL, body text NOT NULL,
            folder uuid REFERENCES folders(id) ON DELETE CASCADE, updated timestamptz NOT NULL, version bigint NOT NULL)
        """,
        "CREATE INDEX IF NOT EXISTS notes_folder ON notes (folder)",
    ]

    static func configuration(_ url: URL, connections: Int) -> PostgresClient.Configuration {
        var configuration = PostgresClient.Configuration(
            host: url.host ?? "127.0.0.1", port: url.port ?? 5432, username: url.user ?? "postgres", password: url.password,
            database: String(url.path.dropFirst()), tls: .disable)
        configuration.options.maximumConnections = connections
        configuration.options.minimumConnections = 0
        return configuration
    }

    static func run(postgres url: URL, port: Int, connections: Int, portFile: URL, logger: Logger) async throws {
        let client = PostgresClient(configuration: configuration(url, connections: connections), backgroundLogger: logger)
        let router = Router()
        let api = FloorAPI(client: client, logger: logger)
        router.add(middleware: UnavailableMiddleware())
        router.get("health") { _, _ in "ok" }
        api.register(on: router)
        let app = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: port)),
            onServerRunning: { channel in writePort(channel.localAddress?.port ?? port, to: portFile) }, logger: logger)
        let group = ServiceGroup(configuration: .init(services: [client, app], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            // The tables, once the client runs (both instances may try: IF NOT EXISTS, and a race is retried).
            tasks.addTask {
                for attempt in 1...5 {
                    do {
                        for statement in schema { try await client.query(PostgresQuery(unsafeSQL: statement), logger: logger) }
                        break
                    } catch where attempt < 5 { try await Task.sleep(for: .milliseconds(200)) }
                }
            }
            try await tasks.waitForAll()
        }
    }
}

/// A PostgresNIO error that says the database cannot be reached (a lost or refused connection, a
/// server shutting down or starting up) as a 503 with `Retry-After`.
struct UnavailableMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as PSQLError {
            if error.code != .server || ["57P01", "57P02", "57P03", "08006", "08001", "08003", "08004"].contains(error.serverInfo?[.sqlState] ?? "") {
                throw unavailable(error.code)
            }
            throw error
        } catch let error where error is ChannelError || error is IOError || error is NIOConnectionError {
            throw unavailable(error)
        }
    }
}

struct FloorAPI: Sendable {
    let client: PostgresClient
    let logger: Logger

    func register(on router: Router<BasicRequestContext>) {
        router.post("folders") { request, context in
            let input = try await request.decode(as: NewFolderJSON.self, context: context)
            let id = UUID()
            try await client.query("INSERT INTO folders (id, name) VALUES (\(id), \(input.name))", logger: logger)
            return EditedResponse(status: .created, response: FolderJSON(id: id, name: input.name, noteCount: 0))
        }
        router.get("notes") { request, _ in
            let query = request.uri.queryParameters
            let limit = try pageLimit(query.get("limit"))
            let folder = try query.get("folder").map(parseID)
            let rows: PostgresRowSequence
            if let folder {
                rows = try await client.query(
                    "SELECT id, title, body, folder, updated FROM notes WHERE folder = \(folder) ORDER BY updated DESC, id DESC LIMIT \(limit + 1)",
                    logger: logger)
            } else {
                rows = try await client.query(
                    "SELECT id, title, body, folder, updated FROM notes ORDER BY updated DESC, id DESC LIMIT \(limit + 1)", logger: logger)
            }
            var notes: [NoteJSON] = []
            for try await (id, title, body, folder, updated) in rows.decode((UUID, String, String, UUID?, Date).self) {
                notes.append(NoteJSON(id: id, title: title, body: body, folder: folder, updated: updated))
            }
            let more = notes.count > limit
            let page = Array(notes.prefix(limit))
            return PageJSON(notes: page, next: more ? page.last.map { cursorText(updated: $0.updated, id: $0.id) } : nil)
        }
        router.get("notes/:id") { _, context in
            let id = try parseID(context.parameters.require("id"))
            guard let note = try await find(id)?.note else { throw HTTPError(.notFound, message: "There is no note \(id)") }
            return note
        }
        router.post("notes") { request, context in
            let input = try await request.decode(as: NewNoteJSON.self, context: context)
            if let folder = input.folder {
                let rows = try await client.query("SELECT 1 FROM folders WHERE id = \(folder)", logger: logger)
                var found = false
                for try await _ in rows { found = true }
                guard found else { throw HTTPError(.badRequest, message: "There is no folder \(folder)") }
            }
            let note = NoteJSON(id: UUID(), title: input.title, body: input.body ?? "", folder: input.folder, updated: Date())
            try await client.query(
                "INSERT INTO notes (id, title, body, folder, updated, version) VALUES (\(note.id), \(note.title), \(note.body), \(note.folder), \(note.updated), 1)",
                logger: logger)
            return EditedResponse(status: .created, response: note)
        }
        router.patch("notes/:id") { request, context in
            let id = try parseID(context.parameters.require("id"))
            let change = try await request.decode(as: NoteChangeJSON.self, context: context)
            // Read, change, then update only if no one saved the note in between (its version).
            guard let (read, version) = try await find(id) else { throw HTTPError(.notFound, message: "There is no note \(id)") }
            var note = read
            if let title = change.title { note.title = title }
            if let body = change.body { note.body = body }
            note.updated = Date()
            let rows = try await client.query(
                "UPDATE notes SET title = \(note.title), body = \(note.body), updated = \(note.updated), version = version + 1 WHERE id = \(id) AND version = \(version) RETURNING id",
                logger: logger)
            var updated = false
            for try await _ in rows { updated = true }
            guard updated else { throw HTTPError(.conflict, message: "The note was changed by another request; read it again") }
            return note
        }
    }

    func find(_ id: UUID) async throws -> (note: NoteJSON, version: Int64)? {
        let rows = try await client.query("SELECT id, title, body, folder, updated, version FROM notes WHERE id = \(id)", logger: logger)
        for try await (id, title, body, folder, updated, version) in rows.decode((UUID, String, String, UUID?, Date, Int64).self) {
            return (NoteJSON(id: id, title: title, body: body, folder: folder, updated: updated), version)
        }
        return nil
    }
}

/// Tells the load test where a server listens.
func writePort(_ port: Int, to file: URL) {
    try? Data("\(port)\n".utf8).write(to: file, options: .atomic)
}
