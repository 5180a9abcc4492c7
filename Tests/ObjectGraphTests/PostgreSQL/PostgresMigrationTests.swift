import Foundation
import Logging
import Testing
import ObjectGraph
@testable import ObjectGraphCore

/// A PostgreSQL store written with one model version and added with another migrates in the
/// transaction that opens it: every row carried over with its key, or nothing changed at all.
@Suite("PostgreSQL migration", .needsPostgreSQL)
struct PostgresMigrationTests {
    /// The store's tables and their rows, read straight from the server: what "left as it was" compares.
    private func state(_ url: URL) throws -> [String] {
        let driver = try PostgresDrivers.factory().connect(url: url, maximumConnections: 1, logger: Logger(label: "test"))
        defer { driver.close() }
        let schema = PostgresStoreTables.schemaName(in: url)
        return try driver.transaction(isolation: .repeatableRead, readOnly: true) { session in
            var lines: [String] = []
            let tables = try session.query(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY table_name", [.text(schema)]
            ).compactMap { row -> String? in if case .text(let name) = row.first { name } else { nil } }
            for table in tables {
                let rows = try session.query("SELECT * FROM \(CoreDataLayout.quote(schema)).\(CoreDataLayout.quote(table)) ORDER BY 1", [])
                lines.append("\(table): \(rows.map { "\($0)" }.joined(separator: "; "))")
            }
            return lines
        }
    }

    /// The notes of a V1 store: title → (primary key, rank, body, folder name).
    private func v1Notes(_ url: URL) throws -> [String: String] {
        try Migrating.value(NotesVersions.v1(), .postgres, at: url) { context in
            var notes: [String: String] = [:]
            for note in try Migrating.fetch("Note", in: context) {
                let folder = (note.value(forKey: "folder") as? ManagedObject)?.value(forKey: "name") as? String
                notes[note.value(forKey: "title") as! String] =
                    "\(note.objectID.primaryKey!) \(note.value(forKey: "rank")!) \(note.value(forKey: "body")!) \(folder ?? "-")"
            }
            return notes
        }
    }

    /// Folders, notes and tags (many-to-many); in the second version a note has a priority and a
    /// tag's name is its label.
    private static func streamingModels() -> (ManagedObjectModel, ManagedObjectModel) {
        func make(_ second: Bool) -> ManagedObjectModel {
            let label = PropertyDescription.attribute(second ? "label" : "name", .string)
            if second { label.renamingIdentifier = "name" }
            var note: [PropertyDescription] = [
                .attribute("title", .string, isOptional: false, defaultValue: ""),
                .relationship("folder", destination: "Folder", inverse: "notes"),
                .relationship("tags", destination: "Tag", toMany: true, inverse: "notes"),
            ]
            if second { note.append(.attribute("priority", .integer32, isOptional: false, defaultValue: Int32(3))) }
            return ManagedObjectModel(entities: [
                EntityDescription(name: "Folder", properties: [
                    .attribute("name", .string), .relationship("notes", destination: "Note", toMany: true, inverse: "folder"),
                ]),
                EntityDescription(name: "Note", properties: note),
                EntityDescription(name: "Tag", properties: [label, .relationship("notes", destination: "Note", toMany: true, inverse: "tags")]),
            ])
        }
        return (make(false), make(true))
    }

    /// A one-step migration whose rows each come from their old row alone reads and writes them a
    /// chunk at a time (in the one transaction): every row, key, to-one and join-table pair arrives.
    @Test func aMigrationOfManyRowsStreamsThemInChunksWithEveryRelationship() throws {
        let (v1, v2) = Self.streamingModels()
        let url = try PostgresTestServer.shared.get().makeDatabase()
        let notes = PostgresStore.migrationChunk + 1_200
        var expected: [Int64: String] = [:]
        try Migrating.with(v1, .postgres, at: url) { context in
            let folders = (0..<30).map { context.insert("Folder", ["name": "f\($0)"]) }
            let tags = (0..<4).map { context.insert("Tag", ["name": "t\($0)"]) }
            for i in 0..<notes {
                let note = context.insert("Note", ["title": "n\(i)", "folder": folders[i % 30]])
                if i % 50 == 0 { note.setValue(Set([tags[i % 4], tags[(i + 1) % 4]]), forKey: "tags") }
            }
            try context.save()
            for note in try Migrating.fetch("Note", in: context) {
                let tags = ((note.value(forKey: "tags") as? Set<ManagedObject>) ?? []).compactMap { $0.value(forKey: "name") as? String }.sorted()
                let folder = (note.value(forKey: "folder") as? ManagedObject)?.value(forKey: "name") as? String ?? "-"
                expected[note.objectID.primaryKey!] = "\(note.value(forKey: "title")!) \(folder) \(tags)"
            }
        }
        let chunks = PostgresStore.migratedChunks.value
        try Migrating.with(v2, .postgres, at: url, options: Migrating.from(v1, v2)) { context in
            var found: [Int64: String] = [:]
            for note in try Migrating.fetch("Note", in: context) {
                let tags = ((note.value(forKey: "tags") as? Set<ManagedObject>) ?? []).compactMap { $0.value(forKey: "label") as? String }.sorted()
                let folder = (note.value(forKey: "folder") as? ManagedObject)?.value(forKey: "name") as? String ?? "-"
                found[note.objectID.primaryKey!] = "\(note.value(forKey: "title")!) \(folder) \(tags)"
                #expect(note.value(forKey: "priority") as? Int32 == 3)
            }
            #expect(found.count == notes)
            #expect(found == expected)
            // New objects get keys after the migrated ones.
            let added = context.insert("Note", ["title": "new"])
            try context.save()
            #expect(added.objectID.primaryKey! > expected.keys.max()!)
        }
        // Notes took two chunks, folders and tags one each (other tests may stream at the same time).
        #expect(PostgresStore.migratedChunks.value - chunks >= 4)
        #expect(try state(url).allSatisfy { !$0.contains("og_migrating") })
    }

    @Test func aStoreAddedWithTheMigrationOptionsIsMigratedWithItsKeysAndItsRecordedModel() throws {
        let url = try PostgresTestServer.shared.get().makeDatabase()
        try NotesVersions.seedV1(.postgres, at: url)
        let before = try v1Notes(url)
        // Without the options the store is refused, and nothing changes.
        let untouched = try state(url)
        #expect(throws: ObjectGraphError.incompatibleModel) { try Migrating.with(NotesVersions.v2(), .postgres, at: url) { _ in } }
        #expect(try state(url) == untouched)

        // Core Data's two flags: the source model is the one the store records.
        try Migrating.with(NotesVersions.v2(), .postgres, at: url, options: Migrating.automatic) { context in
            var after: [String: String] = [:]
            for note in try Migrating.fetch("Note", in: context) {
                let notebook = (note.value(forKey: "notebook") as? ManagedObject)?.value(forKey: "name") as? String
                after[note.value(forKey: "title") as! String] =
                    "\(note.objectID.primaryKey!) \(note.value(forKey: "rank")!) \(note.value(forKey: "text")!) \(notebook ?? "-")"
                #expect(note.value(forKey: "priority") as? Int32 == 3)
            }
            #expect(after == before)
            let notebooks = try Migrating.fetch("Notebook", in: context, sortedBy: "name")
            #expect(notebooks.map { $0.value(forKey: "name") as? String } == ["Home", "Work"])
            #expect((notebooks[1].value(forKey: "notes") as? Set<ManagedObject>)?.count == 2)
            // The new model's tables work: a tag on two notes, and a new note with a key after the
            // migrated ones' (the seeding store reserved keys beyond its own: not the very next one).
            let tag = context.insertNewObject(forEntityName: "Tag")
            tag.setValue("red", forKey: "name")
            tag.setValue(Set(try Migrating.fetch("Note", in: context).prefix(2)), forKey: "notes")
            let note = context.insertNewObject(forEntityName: "Note")
            note.setValue("d", forKey: "title")
            try context.save()
            #expect(try #require(note.objectID.primaryKey) > 3)
        }
        // The store now records V2: added without options it opens, with V1 it is refused.
        try Migrating.with(NotesVersions.v2(), .postgres, at: url) { context in
            let tags = try Migrating.fetch("Tag", in: context)
            #expect(tags.count == 1 && (tags[0].value(forKey: "notes") as? Set<ManagedObject>)?.count == 2)
            #expect(try Migrating.fetch("Note", in: context).count == 4)
        }
        #expect(throws: ObjectGraphError.incompatibleModel) { try Migrating.with(NotesVersions.v1(), .postgres, at: url) { _ in } }
    }

    @Test func aStagedMigrationRunsEveryStepInOneTransaction() throws {
        let url = try PostgresTestServer.shared.get().makeDatabase()
        try NotesVersions.seedV1(.postgres, at: url)
        let options = Migrating.from(NotesVersions.v1(), NotesVersions.v2(), NotesVersions.v3())
        try Migrating.with(NotesVersions.v3(), .postgres, at: url, options: options) { context in
            let notes = try Migrating.fetch("Note", in: context, sortedBy: "title")
            #expect(notes.map { $0.value(forKey: "content") as? String } == ["body a", "body b", "body c"])
            #expect(notes.map { ($0.value(forKey: "notebook") as? ManagedObject)?.value(forKey: "name") as? String } == ["Work", "Work", "Home"])
            let checklist = context.insertNewObject(forEntityName: "Checklist")
            checklist.setValue("list", forKey: "title")
            checklist.setValue(Int32(2), forKey: "items")
            try context.save()
        }
        let (items, notes) = try Migrating.value(NotesVersions.v3(), .postgres, at: url) { context in
            (try Migrating.fetch("Checklist", in: context).first?.value(forKey: "items") as? Int32, try Migrating.fetch("Note", in: context).count)
        }
        #expect(items == 2 && notes == 4)
    }

    @Test func aMigrationTheDataRefusesLeavesTheStoreAsItWas() throws {
        let url = try PostgresTestServer.shared.get().makeDatabase()
        func items(_ properties: [PropertyDescription], unique: [[String]] = []) -> ManagedObjectModel {
            ManagedObjectModel(entities: [EntityDescription(name: "Item", properties: properties, uniquenessConstraints: unique)])
        }
        let v1 = items([.attribute("name", .string), .attribute("count", .integer64)])
        try Migrating.with(v1, .postgres, at: url) { context in
            for name in ["a", "a", nil] { context.insertNewObject(forEntityName: "Item").setValue(name, forKey: "name") }
        }
        let before = try state(url)
        let refused: [(ManagedObjectModel, [String])] = [
            (items([.attribute("name", .string), .attribute("count", .integer64)], unique: [["name"]]), ["Item.name", "uniqueness"]),
            (items([.attribute("name", .string, isOptional: false), .attribute("count", .integer64)]), ["Item.name", "1 row(s)"]),
            (items([.attribute("name", .integer64), .attribute("count", .integer64)]), ["Item.name", "integer64"]),
        ]
        for (v2, words) in refused {
            do {
                try Migrating.with(v2, .postgres, at: url, options: Migrating.automatic) { _ in }
                Issue.record("the migration to \(words) should be refused")
            } catch let error as ObjectGraphError {
                #expect(error.code == .migration, "\(error)")
                for word in words { #expect(error.message.contains(word), "\(error.message) should mention \(word)") }
            }
            #expect(try state(url) == before)
        }
        // A custom stage runs handlers through contexts: not on PostgreSQL.
        let v2 = items([.attribute("name", .string), .attribute("count", .integer64), .attribute("note", .string)])
        let custom = CustomMigrationStage(
            migratingFrom: ManagedObjectModelReference(model: v1), to: ManagedObjectModelReference(model: v2), didMigrate: { _ in })
        let error = #expect(throws: ObjectGraphError.self) {
            try Migrating.with(v2, .postgres, at: url, options: Migrating.staged(StagedMigrationManager([custom]))) { _ in }
        }
        #expect(error?.code == .unsupported && error?.message.contains("custom stage") == true, "\(String(describing: error))")
        #expect(try state(url) == before)
        #expect(try Migrating.value(v1, .postgres, at: url) { try Migrating.fetch("Item", in: $0).count } == 3)
    }

    @Test func twoCoordinatorsOpeningTheOldStoreAtOnceMigrateItOnce() async throws {
        let url = try PostgresTestServer.shared.get().makeDatabase()
        try NotesVersions.seedV1(.postgres, at: url)
        let counts = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<2 {
                group.addTask {
                    try Migrating.value(NotesVersions.v2(), .postgres, at: url, options: Migrating.automatic) { context in
                        try Migrating.fetch("Note", in: context).count
                    }
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(counts == [3, 3])
    }
}
