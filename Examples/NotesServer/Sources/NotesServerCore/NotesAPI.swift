import Foundation
import Hummingbird
import ObjectGraph

// The HTTP API. Each request runs in a background context of its own (performBackgroundTask), reads
// and writes there, and answers with values, never managed objects.
//
//   GET    /folders              the folders, by name, with their note counts
//   POST   /folders              {"name"}                            → 201 the folder
//   GET    /notes[?folder=ID][&limit=N][&cursor=C]
//                                 a page of notes, newest first: {"notes", "next"?}
//   GET    /notes/ID             one note
//   POST   /notes                {"title", "body", "folder"?}        → 201 the note
//   PATCH  /notes/ID             {"title"?, "body"?}                 → the note (409 when another save changed it first)
//   DELETE /notes/ID                                                 → 204

public struct FolderValue: ResponseEncodable, Decodable, Equatable, Sendable {
    public var id: UUID
    public var name: String
    public var noteCount: Int
}

public struct NoteValue: ResponseEncodable, Decodable, Equatable, Sendable {
    public var id: UUID
    public var title: String
    public var body: String
    public var folder: UUID?
    public var updated: Date
}

struct NewFolder: Decodable { var name: String }
struct NewNote: Decodable { var title: String; var body: String?; var folder: UUID? }
struct NoteChange: Decodable { var title: String?; var body: String? }

extension FolderValue {
    init(_ folder: Folder) { self.init(id: folder.id, name: folder.name, noteCount: folder.notes.count) }
}

extension NoteValue {
    init(_ note: Note) { self.init(id: note.id, title: note.title, body: note.body, folder: note.folder?.id, updated: note.updated) }
}

struct NotesAPI {
    let container: PersistentContainer
    var hooks = Hooks()

    /// Points where tests step into a request to script an interleaving; none by default.
    struct Hooks: Sendable {
        /// Awaited by `PATCH /notes/ID` once its body is read, before it touches the store.
        var beforeChange: (@Sendable (UUID) async -> Void)?
        /// Called by `PATCH /notes/ID` on its context's queue, after changing the note and before saving it.
        var beforeChangeIsSaved: (@Sendable (UUID) -> Void)?
    }

    func register(on router: Router<BasicRequestContext>) {
        router.get("folders") { _, _ in try await self.folders() }
        router.post("folders") { request, context in
            let input = try await request.decode(as: NewFolder.self, context: context)
            return EditedResponse(status: .created, response: try await self.createFolder(input))
        }
        router.get("notes") { request, _ in
            let query = request.uri.queryParameters
            let folder = try query.get("folder").map { try Self.uuid($0) }
            return try await self.notes(in: folder, page: try NotePageRequest(limit: query.get("limit"), cursor: query.get("cursor")))
        }
        router.get("notes/:id") { _, context in try await self.note(try Self.uuid(context.parameters.require("id"))) }
        router.post("notes") { request, context in
            let input = try await request.decode(as: NewNote.self, context: context)
            return EditedResponse(status: .created, response: try await self.createNote(input))
        }
        router.patch("notes/:id") { request, context in
            let id = try Self.uuid(context.parameters.require("id"))
            let change = try await request.decode(as: NoteChange.self, context: context)
            await self.hooks.beforeChange?(id)
            return try await self.change(id, change)
        }
        router.delete("notes/:id") { _, context in
            try await self.delete(try Self.uuid(context.parameters.require("id")))
            return HTTPResponse.Status.noContent
        }
    }

    /// The folders with their note counts, in three statements whatever their number: the folders,
    /// the IDs of all their notes, and those notes' rows (prefetched), where reading `notes` of
    /// each folder in turn would fault them one folder at a time (N + 1 statements). The prefetch
    /// reads the notes' whole rows, not only their count.
    func folders() async throws -> [FolderValue] {
        try await perform { context in
            let request = FetchRequest<Folder>(entityName: "Folder")
            request.sortDescriptors = [FetchSortDescriptor(key: "name", ascending: true)]
            request.relationshipKeyPathsForPrefetching = ["notes"]
            // With their values, not as faults (see `find`).
            request.returnsObjectsAsFaults = false
            return try context.fetch(request).map(FolderValue.init)
        }
    }

    func createFolder(_ input: NewFolder) async throws -> FolderValue {
        try await perform { context in
            let folder = Folder(context: context)
            folder.name = input.name
            try context.save()
            return FolderValue(folder)
        }
    }

    func note(_ id: UUID) async throws -> NoteValue {
        try await perform { context in NoteValue(try Self.find(id, in: context)) }
    }

    func createNote(_ input: NewNote) async throws -> NoteValue {
        try await perform { context in
            let note = Note(context: context)
            note.title = input.title
            note.body = input.body ?? ""
            if let folder = input.folder {
                // With its values (not a fault): setting `note.folder` adds the note to the folder's
                // `notes`, which fires the folder's fault, and a fault whose row the row cache has
                // dropped since the fetch (another instance changed the folder) goes back to the
                // store, where an accessor cannot throw if PostgreSQL is restarting.
                let request = FetchRequest<Folder>(entityName: "Folder")
                request.predicate = FetchPredicate(format: "id == %@", folder)
                request.returnsObjectsAsFaults = false
                guard let found = try context.fetch(request).first else {
                    throw HTTPError(.badRequest, message: "There is no folder \(folder)")
                }
                note.folder = found
            }
            try context.save()
            return NoteValue(note)
        }
    }

    func change(_ id: UUID, _ change: NoteChange) async throws -> NoteValue {
        try await perform { context in
            let note = try Self.find(id, in: context)
            if let title = change.title { note.title = title }
            if let body = change.body { note.body = body }
            note.updated = Date()
            self.hooks.beforeChangeIsSaved?(id)
            do {
                try context.save()
            } catch let error as ObjectGraphError where error.code == .mergeConflict {
                throw HTTPError(.conflict, message: "The note was changed by another request; read it again")
            }
            return NoteValue(note)
        }
    }

    func delete(_ id: UUID) async throws {
        try await perform { context in
            context.delete(try Self.find(id, in: context))
            try context.save()
        }
    }

    /// Runs a request's work in a background context of its own that keeps every object it
    /// registers (`retainsRegisteredObjects`) until the request ends. Otherwise an object nothing
    /// holds, such as a folder a fetch prefetched, goes away, and reading it again makes a fault,
    /// which goes back to the store when the row cache has dropped the row (as it does when it
    /// catches up after losing PostgreSQL's notifications, in a restart): a read the request does
    /// not need, and a fault that cannot be filled while the database is down stops the process,
    /// where a fetch throws (a 503).
    func perform<T: Sendable>(_ body: @escaping @Sendable (ManagedObjectContext) throws -> T) async throws -> T {
        try await container.performBackgroundTask { context in
            context.retainsRegisteredObjects = true
            return try body(context)
        }
    }

    /// An ID in a path or a query: 400 when it is not a UUID.
    static func uuid(_ text: String) throws -> UUID {
        guard let id = UUID(uuidString: text) else { throw HTTPError(.badRequest, message: "'\(text)' is not an ID") }
        return id
    }

    /// The note with its values (not a fault) and its folder prefetched: `NoteValue` reads the
    /// note and its folder's `id`, and a fault the store fails to fill (PostgreSQL restarting) stops
    /// the process, where a fetch throws (a 503). A fault's row may be gone from the row cache by the
    /// time it fires: the cache drops the rows another instance changes.
    static func find(_ id: UUID, in context: ManagedObjectContext) throws -> Note {
        let request = FetchRequest<Note>(entityName: "Note")
        request.predicate = FetchPredicate(format: "id == %@", id)
        request.returnsObjectsAsFaults = false
        request.relationshipKeyPathsForPrefetching = ["folder"]
        guard let note = try context.fetch(request).first else {
            throw HTTPError(.notFound, message: "There is no note \(id)")
        }
        return note
    }
}
