import Foundation
import GRDB
import Testing
import ObjectGraph
@testable import ObjectGraphCore

/// Stores written with one model version and read back with another.
enum Migrating {
    /// The file store types a migration runs on.
    static let fileTypes: [StoreType] = [.sqlite, .binary, .xml]

    /// The options of an app that lets stores migrate (Core Data's two flags).
    static let automatic: [String: any Sendable] = [
        PersistentStoreOption.migratePersistentStoresAutomatically: true,
        PersistentStoreOption.inferMappingModelAutomatically: true,
    ]

    /// The options of an app that gives the model versions its stores may have been written with
    /// (a store ObjectGraph wrote does not keep its model yet).
    static func from(_ models: ManagedObjectModel...) -> [String: any Sendable] {
        staged(StagedMigrationManager([LightweightMigrationStage(models)]))
    }

    static func staged(_ manager: StagedMigrationManager) -> [String: any Sendable] {
        automatic.merging([PersistentStoreOption.stagedMigrationManager: manager]) { a, _ in a }
    }

    /// Opens the store with `model`, runs `body` on a private-queue context, saves, and closes the store.
    static func with(
        _ model: ManagedObjectModel, _ type: StoreType, at url: URL, options: [String: any Sendable]? = nil,
        _ body: (ManagedObjectContext) throws -> Void
    ) throws {
        _ = try value(model, type, at: url, options: options) { context -> Int in
            try body(context)
            return 0
        }
    }

    /// `with`, returning what `body` returns.
    static func value<T>(
        _ model: ManagedObjectModel, _ type: StoreType, at url: URL, options: [String: any Sendable]? = nil,
        _ body: (ManagedObjectContext) throws -> T
    ) throws -> T {
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        let store = try coordinator.addPersistentStore(type: type, at: url, options: options)
        defer { try? coordinator.removePersistentStore(store) }
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.persistentStoreCoordinator = coordinator
        return try context.performAndWait {
            let result = try body(context)
            if context.hasChanges { try context.save() }
            return result
        }
    }

    static func fetch(_ entity: String, in context: ManagedObjectContext, sortedBy key: String? = nil) throws -> [ManagedObject] {
        let request = FetchRequest<ManagedObject>(entityName: entity)
        if let key { request.sortDescriptors = [FetchSortDescriptor(key: key, ascending: true)] }
        return try context.fetch(request)
    }

    /// Removes the model a store records (`Z_MODELCACHE`, or the model inside an atomic file), as
    /// in a store written before stores recorded their model: only the app can then name its model.
    static func forgetModel(_ type: StoreType, at url: URL) throws {
        switch type {
        case .sqlite:
            let queue = try DatabaseQueue(path: url.path)
            try queue.writeWithoutTransaction { db in
                try db.execute(sql: "DELETE FROM Z_MODELCACHE")
                try db.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)")
            }
            try queue.close()
        default:
            var file = try PropertyListDecoder().decode(AtomicFile.self, from: Data(contentsOf: url))
            file.modelCache = nil
            file.versionHashes = nil
            let encoder = PropertyListEncoder()
            encoder.outputFormat = type == .xml ? .xml : .binary
            try encoder.encode(file).write(to: url)
        }
        #expect(try PersistentStore.storedModel(at: url, type: type) == nil)
    }

    /// The bytes of a store's files (the file and its -wal), to show a failed migration left them as they were.
    static func bytes(_ url: URL) -> [Data?] {
        ["", "-wal"].map { try? Data(contentsOf: URL(fileURLWithPath: url.path + $0)) }
    }

    /// Expects `body` to throw an ObjectGraphError of `code` whose message contains each of `words`,
    /// and the store's bytes to be those they were before.
    static func expectRefusal(
        _ code: ObjectGraphError, at url: URL, mentioning words: [String], sourceLocation: SourceLocation = #_sourceLocation,
        _ body: () throws -> Void
    ) {
        let before = bytes(url)
        do {
            try body()
            Issue.record("expected \(code.code), nothing was thrown", sourceLocation: sourceLocation)
        } catch let error as ObjectGraphError {
            #expect(error.code == code.code, "\(error)", sourceLocation: sourceLocation)
            for word in words { #expect(error.message.contains(word), "\(error.message) should mention \(word)", sourceLocation: sourceLocation) }
        } catch {
            Issue.record("expected \(code.code), got \(error)", sourceLocation: sourceLocation)
        }
        #expect(bytes(url) == before, "the store's bytes changed", sourceLocation: sourceLocation)
    }
}

/// Model versions of a small notes app.
enum NotesVersions {
    /// V1: Folder(name) ←→> Note(title, rank: Int16, body, obsolete).
    static func v1() -> ManagedObjectModel {
        ManagedObjectModel(entities: [
            EntityDescription(name: "Folder", properties: [
                .attribute("name", .string),
                .relationship("notes", destination: "Note", toMany: true, inverse: "folder"),
            ]),
            EntityDescription(name: "Note", properties: [
                .attribute("title", .string, isOptional: false, defaultValue: ""),
                .attribute("rank", .integer16, defaultValue: Int16(0)),
                .attribute("body", .string),
                .attribute("obsolete", .string),
                .relationship("folder", destination: "Folder", inverse: "notes"),
            ]),
        ])
    }

    /// V2: Folder renamed Notebook; Note.body renamed text, rank widened to Int64, obsolete
    /// removed, priority added (required, default 3); a new Tag entity, many-to-many with Note.
    static func v2() -> ManagedObjectModel {
        let notebook = EntityDescription(name: "Notebook", properties: [
            .attribute("name", .string),
            .relationship("notes", destination: "Note", toMany: true, inverse: "notebook"),
        ])
        notebook.renamingIdentifier = "Folder"
        let text = PropertyDescription.attribute("text", .string)
        text.renamingIdentifier = "body"
        let link = PropertyDescription.relationship("notebook", destination: "Notebook", inverse: "notes")
        link.renamingIdentifier = "folder"
        return ManagedObjectModel(entities: [
            notebook,
            EntityDescription(name: "Note", properties: [
                .attribute("title", .string, isOptional: false, defaultValue: ""),
                .attribute("rank", .integer64, defaultValue: Int64(0)),
                text,
                .attribute("priority", .integer32, isOptional: false, defaultValue: Int32(3)),
                link,
                .relationship("tags", destination: "Tag", toMany: true, inverse: "notes"),
            ]),
            EntityDescription(name: "Tag", properties: [
                .attribute("name", .string),
                .relationship("notes", destination: "Note", toMany: true, inverse: "tags"),
            ]),
        ])
    }

    /// V3: Note.text renamed content (its renaming identifier is V2's name), a Checklist
    /// sub-entity of Note, and an index on title.
    static func v3() -> ManagedObjectModel {
        let notebook = EntityDescription(name: "Notebook", properties: [
            .attribute("name", .string),
            .relationship("notes", destination: "Note", toMany: true, inverse: "notebook"),
        ])
        let content = PropertyDescription.attribute("content", .string)
        content.renamingIdentifier = "text"
        return ManagedObjectModel(entities: [
            notebook,
            EntityDescription(name: "Note", properties: [
                .attribute("title", .string, isOptional: false, defaultValue: "", isIndexed: true),
                .attribute("rank", .integer64, defaultValue: Int64(0)),
                content,
                .attribute("priority", .integer32, isOptional: false, defaultValue: Int32(3)),
                .relationship("notebook", destination: "Notebook", inverse: "notes"),
                .relationship("tags", destination: "Tag", toMany: true, inverse: "notes"),
            ]),
            EntityDescription(name: "Checklist", superentity: "Note", properties: [.attribute("items", .integer32, defaultValue: Int32(0))]),
            EntityDescription(name: "Tag", properties: [
                .attribute("name", .string),
                .relationship("notes", destination: "Note", toMany: true, inverse: "tags"),
            ]),
        ])
    }

    /// Writes two folders and three notes with V1.
    static func seedV1(_ type: StoreType, at url: URL) throws {
        try Migrating.with(v1(), type, at: url) { (context: ManagedObjectContext) throws in
            let work = context.insertNewObject(forEntityName: "Folder")
            work.setValue("Work", forKey: "name")
            let home = context.insertNewObject(forEntityName: "Folder")
            home.setValue("Home", forKey: "name")
            for (i, (title, folder)) in [("a", work), ("b", work), ("c", home)].enumerated() {
                let note = context.insertNewObject(forEntityName: "Note")
                note.setValue(title, forKey: "title")
                note.setValue(Int16(10 + i), forKey: "rank")
                note.setValue("body \(title)", forKey: "body")
                note.setValue("gone", forKey: "obsolete")
                note.setValue(folder, forKey: "folder")
            }
        }
    }
}
