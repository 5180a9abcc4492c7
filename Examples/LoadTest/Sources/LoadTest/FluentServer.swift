import FluentKit
import FluentPostgresDriver
import Foundation
import Hummingbird
import Logging
import NIOCore
import NIOPosix
import PostgresNIO
import ServiceLifecycle
import SQLKit

// The same routes on Fluent (FluentKit models and queries over fluent-postgres-driver, without
// Vapor: a `Databases` on the process's event loops and a thread pool), served by Hummingbird, on
// tables of its own. The one statement FluentKit's query builder cannot say, an UPDATE that tells
// whether it changed a row (the conditional update of PATCH, for its 409), goes through SQLKit,
// the layer under FluentKit, as Fluent apps do.

final class FluentFolder: Model, @unchecked Sendable {
    static let schema = "fluent_folders"
    @ID(key: .id) var id: UUID?
    @Field(key: "name") var name: String
    init() {}
    init(name: String) { self.id = UUID(); self.name = name }
}

final class FluentNote: Model, @unchecked Sendable {
    static let schema = "fluent_notes"
    @ID(key: .id) var id: UUID?
    @Field(key: "title") var title: String
    @Field(key: "body") var body: String
    @OptionalParent(key: "folder_id") var folder: FluentFolder?
    @Field(key: "updated") var updated: Date
    @Field(key: "version") var version: Int64
    init() {}

    var json: NoteJSON { NoteJSON(id: id!, title: title, body: body, folder: $folder.id, updated: updated) }
}

enum FluentServer {
    static func createSchema(_ db: any Database) async throws {
        try await db.schema(FluentFolder.schema).id().field("name", .string, .required).ignoreExisting().create()
        try await db.schema(FluentNote.schema).id()
            .field("title", .string, .required).field("body", .string, .required)
            .field("folder_id", .uuid, .references(FluentFolder.schema, .id, onDelete: .cascade))
            .field("updated", .datetime, .required).field("version", .int64, .required)
            .ignoreExisting().create()
        try await (db as! any SQLDatabase).raw("CREATE INDEX IF NOT EXISTS fluent_notes_folder ON fluent_notes (folder_id)").run()
    }

    static func run(postgres url: URL, port: Int, connections: Int, portFile: URL, logger: Logger) async throws {
        let group = MultiThreadedEventLoopGroup.singleton
        let threadPool = NIOThreadPool(numberOfThreads: 1)
        threadPool.start()
        let databases = Databases(threadPool: threadPool, on: group)
        let loops = System.coreCount  // MultiThreadedEventLoopGroup.singleton's event loops
        let configuration = SQLPostgresConfiguration(
            hostname: url.host ?? "127.0.0.1", port: url.port ?? 5432, username: url.user ?? "postgres", password: url.password,
            database: String(url.path.dropFirst()), tls: .disable)
        // The same number of connections in all as the other servers: spread over the event loops.
        databases.use(
            .postgres(configuration: configuration, maxConnectionsPerEventLoop: max(1, connections / loops), connectionPoolTimeout: .seconds(10)),
            as: .psql, isDefault: true)
        let api = FluentAPI(databases: databases, logger: logger)
        for attempt in 1...5 {
            do { try await createSchema(api.db()); break } catch where attempt < 5 { try await Task.sleep(for: .milliseconds(200)) }
        }
        let router = Router()
        router.add(middleware: FluentUnavailableMiddleware())
        router.get("health") { _, _ in "ok" }
        api.register(on: router)
        let app = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: port)),
            onServerRunning: { channel in writePort(channel.localAddress?.port ?? port, to: portFile) }, logger: logger)
        let services = ServiceGroup(configuration: .init(services: [app], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        try await services.run()
        await databases.shutdownAsync()
        try await threadPool.shutdownGracefully()
    }
}

/// A lost or refused connection as a 503 with `Retry-After`, whatever layer of Fluent wraps it.
struct FluentUnavailableMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as any HTTPResponseError {
            throw error
        } catch let error as PSQLError {
            if error.code != .server || ["57P01", "57P02", "57P03"].contains(error.serverInfo?[.sqlState] ?? "") { throw unavailable(error.code) }
            throw error
        } catch {
            if let error = error as? any DatabaseError, error.isConnectionClosed { throw unavailable(error) }
            if error is ChannelError || error is IOError || error is NIOConnectionError { throw unavailable(error) }
            let text = String(describing: error)
            if text.contains("connection") || text.contains("Connection") || text.contains("timeout") { throw unavailable(error) }
            throw error
        }
    }
}

struct FluentAPI: Sendable {
    let databases: Databases
    let logger: Logger

    func db() -> any Database { databases.database(logger: logger, on: databases.eventLoopGroup.any())! }

    func register(on router: Router<BasicRequestContext>) {
        router.post("folders") { request, context in
            let input = try await request.decode(as: NewFolderJSON.self, context: context)
            let folder = FluentFolder(name: input.name)
            try await folder.create(on: db())
            return EditedResponse(status: .created, response: FolderJSON(id: folder.id!, name: folder.name, noteCount: 0))
        }
        router.get("notes") { request, _ in
            let query = request.uri.queryParameters
            let limit = try pageLimit(query.get("limit"))
            let builder = FluentNote.query(on: db())
            if let folder = try query.get("folder").map(parseID) { builder.filter(\.$folder.$id == folder) }
            let notes = try await builder.sort(\.$updated, .descending).sort(\.$id, .descending).limit(limit + 1).all().map(\.json)
            let page = Array(notes.prefix(limit))
            return PageJSON(notes: page, next: notes.count > limit ? page.last.map { cursorText(updated: $0.updated, id: $0.id) } : nil)
        }
        router.get("notes/:id") { _, context in
            let id = try parseID(context.parameters.require("id"))
            guard let note = try await FluentNote.find(id, on: db()) else { throw HTTPError(.notFound, message: "There is no note \(id)") }
            return note.json
        }
        router.post("notes") { request, context in
            let input = try await request.decode(as: NewNoteJSON.self, context: context)
            let db = db()
            if let folder = input.folder {
                guard try await FluentFolder.find(folder, on: db) != nil else { throw HTTPError(.badRequest, message: "There is no folder \(folder)") }
            }
            let note = FluentNote()
            note.id = UUID()
            note.title = input.title
            note.body = input.body ?? ""
            note.$folder.id = input.folder
            note.updated = Date()
            note.version = 1
            try await note.create(on: db)
            return EditedResponse(status: .created, response: note.json)
        }
        router.patch("notes/:id") { request, context in
            let id = try parseID(context.parameters.require("id"))
            let change = try await request.decode(as: NoteChangeJSON.self, context: context)
            let db = db()
            guard let note = try await FluentNote.find(id, on: db) else { throw HTTPError(.notFound, message: "There is no note \(id)") }
            let version = note.version
            if let title = change.title { note.title = title }
            if let body = change.body { note.body = body }
            note.updated = Date()
            // Only if no one saved the note since it was read: FluentKit's update() says nothing of the rows it changed.
            let changed = try await (db as! any SQLDatabase).update(FluentNote.schema)
                .set("title", to: note.title).set("body", to: note.body).set("updated", to: note.updated).set("version", to: version + 1)
                .where("id", .equal, id).where("version", .equal, version)
                .returning("id").all()
            guard !changed.isEmpty else { throw HTTPError(.conflict, message: "The note was changed by another request; read it again") }
            return note.json
        }
    }
}
