import Foundation
import GRDB
import Testing
import ObjectGraph
@testable import ObjectGraphCore

/// Lightweight migrations inferred from two model versions, on every file store type.
@Suite("Inferred migration")
struct InferredMigrationTests {
    @Test(arguments: Migrating.fileTypes)
    func aStoreFollowsRenamesWideningAddedAndRemovedPropertiesAndEntities(_ type: StoreType) throws {
        let directory = TemporaryDirectory()
        let url = directory.file("notes")
        try NotesVersions.seedV1(type, at: url)
        try Migrating.with(NotesVersions.v2(), type, at: url, options: Migrating.from(NotesVersions.v1())) { (context: ManagedObjectContext) throws in
            let notes = try Migrating.fetch("Note", in: context, sortedBy: "title")
            #expect(notes.map { $0.value(forKey: "title") as? String } == ["a", "b", "c"])
            #expect(notes.map { $0.value(forKey: "rank") as? Int64 } == [10, 11, 12])
            #expect(notes.map { $0.value(forKey: "text") as? String } == ["body a", "body b", "body c"])
            #expect(notes.map { $0.value(forKey: "priority") as? Int32 } == [3, 3, 3])
            #expect(notes.map { ($0.value(forKey: "notebook") as? ManagedObject)?.value(forKey: "name") as? String } == ["Work", "Work", "Home"])
            let notebooks = try Migrating.fetch("Notebook", in: context, sortedBy: "name")
            #expect(notebooks.map { ($0.value(forKey: "notes") as? Set<ManagedObject>)?.count } == [1, 2])
            #expect(try Migrating.fetch("Tag", in: context).isEmpty)
            // The new model is fully usable: a new tag on a migrated note, saved.
            let tag = context.insertNewObject(forEntityName: "Tag")
            tag.setValue("urgent", forKey: "name")
            tag.setValue(Set([notes[0]]), forKey: "notes")
            let note = context.insertNewObject(forEntityName: "Note")
            note.setValue("d", forKey: "title")
            note.setValue(notebooks[0], forKey: "notebook")
        }
        // Reopened with V2 alone: no migration, the data and the new objects are there.
        try Migrating.with(NotesVersions.v2(), type, at: url) { (context: ManagedObjectContext) throws in
            let notes = try Migrating.fetch("Note", in: context, sortedBy: "title")
            #expect(notes.count == 4)
            #expect((notes[0].value(forKey: "tags") as? Set<ManagedObject>)?.count == 1)
            #expect(Set(notes.compactMap { $0.objectID.primaryKey }).count == 4, "keys are unique after the migration")
        }
    }

    /// Every store records its model: the app gives only its newest model and the two flags, and
    /// each migration finds its source model in the store (then records the new one there).
    @Test(arguments: Migrating.fileTypes)
    func theStoresOwnRecordOfItsModelIsTheSourceOfAMigration(_ type: StoreType) throws {
        let directory = TemporaryDirectory()
        let url = directory.file("notes")
        try NotesVersions.seedV1(type, at: url)
        #expect(try PersistentStore.storedModel(at: url, type: type)?.versionChecksum == NotesVersions.v1().versionChecksum)
        try Migrating.with(NotesVersions.v2(), type, at: url, options: Migrating.automatic) { (context: ManagedObjectContext) throws in
            let notes = try Migrating.fetch("Note", in: context, sortedBy: "title")
            #expect(notes.map { $0.value(forKey: "text") as? String } == ["body a", "body b", "body c"])
        }
        #expect(try PersistentStore.storedModel(at: url, type: type)?.versionChecksum == NotesVersions.v2().versionChecksum)
        try Migrating.with(NotesVersions.v3(), type, at: url, options: Migrating.automatic) { (context: ManagedObjectContext) throws in
            #expect(try Migrating.fetch("Note", in: context).count == 3)
        }
        #expect(try PersistentStore.storedModel(at: url, type: type)?.versionChecksum == NotesVersions.v3().versionChecksum)
        // Without the flags, nothing migrates: the store says which model it needs.
        #expect(throws: ObjectGraphError.incompatibleModel) {
            try Migrating.with(NotesVersions.v1(), type, at: url) { _ in }
        }
    }

    @Test(arguments: Migrating.fileTypes)
    func theStoreKeepsItsUUIDAndObjectKeys(_ type: StoreType) throws {
        let directory = TemporaryDirectory()
        let url = directory.file("notes")
        try NotesVersions.seedV1(type, at: url)
        let (uuid, keys) = try Migrating.value(NotesVersions.v1(), type, at: url) { (context: ManagedObjectContext) throws in
            (context.persistentStoreCoordinator!.persistentStores[0].identifier,
             try Migrating.fetch("Note", in: context, sortedBy: "title").compactMap { $0.objectID.primaryKey })
        }
        try Migrating.with(NotesVersions.v2(), type, at: url, options: Migrating.from(NotesVersions.v1())) { (context: ManagedObjectContext) throws in
            #expect(context.persistentStoreCoordinator!.persistentStores[0].identifier == uuid)
            #expect(try Migrating.fetch("Note", in: context, sortedBy: "title").compactMap { $0.objectID.primaryKey } == keys)
        }
    }

    @Test(arguments: Migrating.fileTypes)
    func withoutTheMigrationOptionsTheStoreIsRefusedAndLeftAsItWas(_ type: StoreType) throws {
        let directory = TemporaryDirectory()
        let url = directory.file("notes")
        try NotesVersions.seedV1(type, at: url)
        Migrating.expectRefusal(.incompatibleModel, at: url, mentioning: []) {
            try Migrating.with(NotesVersions.v2(), type, at: url) { _ in }
        }
        Migrating.expectRefusal(.incompatibleModel, at: url, mentioning: []) {
            try Migrating.with(NotesVersions.v2(), type, at: url, options: [PersistentStoreOption.migratePersistentStoresAutomatically: true]) { _ in }
        }
    }

    @Test(arguments: Migrating.fileTypes)
    func anOptionalAttributeBecomesRequiredWithItsDefaultForNil(_ type: StoreType) throws {
        let directory = TemporaryDirectory()
        let url = directory.file("items")
        let v1 = ManagedObjectModel(entities: [EntityDescription(name: "Item", properties: [
            .attribute("name", .string), .attribute("size", .float),
        ])])
        try Migrating.with(v1, type, at: url) { (context: ManagedObjectContext) throws in
            for (name, size) in [("x", Float(1.5)), (nil, nil)] as [(String?, Float?)] {
                let item = context.insertNewObject(forEntityName: "Item")
                item.setValue(name, forKey: "name")
                item.setValue(size, forKey: "size")
            }
        }
        let v2 = ManagedObjectModel(entities: [EntityDescription(name: "Item", properties: [
            .attribute("name", .string, isOptional: false, defaultValue: "untitled"), .attribute("size", .double),
        ])])
        try Migrating.with(v2, type, at: url, options: Migrating.from(v1)) { (context: ManagedObjectContext) throws in
            let items = try Migrating.fetch("Item", in: context, sortedBy: "name")
            #expect(items.map { $0.value(forKey: "name") as? String } == ["untitled", "x"])
            #expect(items.map { $0.value(forKey: "size") as? Double } == [nil, 1.5])
        }
    }

    @Test(arguments: Migrating.fileTypes)
    func aToOneBecomesToManyAndBack(_ type: StoreType) throws {
        let directory = TemporaryDirectory()
        let url = directory.file("notes")
        try NotesVersions.seedV1(type, at: url)
        // V1's Note.folder (to-one) becomes Note.folders (to-many, renamed): Folder.notes is now many-to-many.
        func manyToMany() -> ManagedObjectModel {
            let folders = PropertyDescription.relationship("folders", destination: "Folder", toMany: true, inverse: "notes")
            folders.renamingIdentifier = "folder"
            return ManagedObjectModel(entities: [
                EntityDescription(name: "Folder", properties: [
                    .attribute("name", .string), .relationship("notes", destination: "Note", toMany: true, inverse: "folders"),
                ]),
                EntityDescription(name: "Note", properties: [
                    .attribute("title", .string, isOptional: false, defaultValue: ""), .attribute("rank", .integer16, defaultValue: Int16(0)),
                    .attribute("body", .string), .attribute("obsolete", .string), folders,
                ]),
            ])
        }
        try Migrating.with(manyToMany(), type, at: url, options: Migrating.from(NotesVersions.v1())) { (context: ManagedObjectContext) throws in
            let notes = try Migrating.fetch("Note", in: context, sortedBy: "title")
            #expect(notes.map { (($0.value(forKey: "folders") as? Set<ManagedObject>) ?? []).compactMap { $0.value(forKey: "name") as? String } } == [["Work"], ["Work"], ["Home"]])
            let folders = try Migrating.fetch("Folder", in: context, sortedBy: "name")
            #expect(folders.map { ($0.value(forKey: "notes") as? Set<ManagedObject>)?.count } == [1, 2])
        }
        // And back to V1's to-one: every note has one folder, so it is allowed.
        try Migrating.with(NotesVersions.v1(), type, at: url, options: Migrating.from(manyToMany())) { (context: ManagedObjectContext) throws in
            let notes = try Migrating.fetch("Note", in: context, sortedBy: "title")
            #expect(notes.map { ($0.value(forKey: "folder") as? ManagedObject)?.value(forKey: "name") as? String } == ["Work", "Work", "Home"])
        }
    }

    @Test(arguments: Migrating.fileTypes)
    func uniquenessConstraintsAndIndexesComeAndGoWhenTheRowsAllowThem(_ type: StoreType) throws {
        let directory = TemporaryDirectory()
        let url = directory.file("people")
        func model(unique: Bool) -> ManagedObjectModel {
            ManagedObjectModel(entities: [EntityDescription(
                name: "Person", properties: [.attribute("email", .string, isIndexed: unique), .attribute("age", .integer16)],
                uniquenessConstraints: unique ? [["email"]] : [], indexes: unique ? [["email", "age"]] : [])])
        }
        try Migrating.with(model(unique: false), type, at: url) { (context: ManagedObjectContext) throws in
            for email in ["a@x", "b@x"] { context.insertNewObject(forEntityName: "Person").setValue(email, forKey: "email") }
        }
        try Migrating.with(model(unique: true), type, at: url, options: Migrating.from(model(unique: false))) { (context: ManagedObjectContext) throws in
            #expect(try Migrating.fetch("Person", in: context).count == 2)
        }
        if type == .sqlite {
            let names = try DatabaseQueue(path: url.path).read { try String.fetchAll($0, sql: "SELECT name FROM sqlite_master WHERE type = 'index'") }
            #expect(names.contains("Z_Person_UNIQUE_email"))
            #expect(names.contains("Z_Person_email_age"))
        }
        try Migrating.with(model(unique: false), type, at: url, options: Migrating.from(model(unique: true))) { (context: ManagedObjectContext) throws in
            #expect(try Migrating.fetch("Person", in: context).count == 2)
        }
    }

    @Test(arguments: Migrating.fileTypes)
    func aSubEntityAddedUnderAnEntityWithRowsKeepsThem(_ type: StoreType) throws {
        let directory = TemporaryDirectory()
        let url = directory.file("notes")
        try NotesVersions.seedV1(type, at: url)
        try Migrating.with(NotesVersions.v2(), type, at: url, options: Migrating.from(NotesVersions.v1())) { _ in }
        try Migrating.with(NotesVersions.v3(), type, at: url, options: Migrating.from(NotesVersions.v2())) { (context: ManagedObjectContext) throws in
            #expect(try Migrating.fetch("Note", in: context, sortedBy: "title").map { $0.value(forKey: "content") as? String } == ["body a", "body b", "body c"])
            let list = context.insertNewObject(forEntityName: "Checklist")
            list.setValue("list", forKey: "title")
            list.setValue(Int32(2), forKey: "items")
        }
        try Migrating.with(NotesVersions.v3(), type, at: url) { (context: ManagedObjectContext) throws in
            #expect(try Migrating.fetch("Note", in: context).count == 4)
            #expect(try Migrating.fetch("Checklist", in: context).map { $0.value(forKey: "items") as? Int32 } == [2])
        }
    }

    @Test func entityNumbersFollowTheNewModelOnSQLite() throws {
        let directory = TemporaryDirectory()
        let url = directory.file("notes.sqlite")
        try NotesVersions.seedV1(.sqlite, at: url)
        try Migrating.with(NotesVersions.v2(), .sqlite, at: url, options: Migrating.from(NotesVersions.v1())) { _ in }
        let rows = try DatabaseQueue(path: url.path).read { db in
            try Row.fetchAll(db, sql: "SELECT Z_ENT, Z_NAME, Z_MAX FROM Z_PRIMARYKEY ORDER BY Z_ENT").map { "\($0[0] as Int) \($0[1] as String) \($0[2] as Int)" }
        }
        // Core Data's numbering of the new model: Note 1, Notebook 2, Tag 3 (V1 had Folder 1, Note 2).
        #expect(rows == ["1 Note 3", "2 Notebook 2", "3 Tag 0"])
        let entities = try DatabaseQueue(path: url.path).read { try Int.fetchAll($0, sql: "SELECT DISTINCT Z_ENT FROM ZNOTE") }
        #expect(entities == [1])
        let joinTables = try DatabaseQueue(path: url.path).read { try String.fetchAll($0, sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'Z\\_%' ESCAPE '\\' ORDER BY name") }
        #expect(joinTables.contains("Z_1TAGS"))
    }

    @Test func aContainerMigratesByDefaultAsCoreDataDoes() throws {
        let directory = TemporaryDirectory()
        let url = directory.file("notes.sqlite")
        try NotesVersions.seedV1(.sqlite, at: url)
        let description = PersistentStoreDescription(url: url)
        #expect(description.shouldMigrateStoreAutomatically && description.shouldInferMappingModelAutomatically)
        description.setOption(StagedMigrationManager([LightweightMigrationStage([NotesVersions.v1()])]), forKey: PersistentStoreOption.stagedMigrationManager)
        let container = PersistentContainer(name: "Notes", managedObjectModel: NotesVersions.v2())
        container.persistentStoreDescriptions = [description]
        try container.loadPersistentStores()
        let context = container.newBackgroundContext()
        let count = try context.performAndWait { try context.count(for: FetchRequest<ManagedObject>(entityName: "Note")) }
        #expect(count == 3)
        let refusing = PersistentStoreDescription(url: directory.file("other.sqlite"))
        refusing.shouldMigrateStoreAutomatically = false
        #expect(refusing.options[PersistentStoreOption.migratePersistentStoresAutomatically] as? Bool == false)
    }
}

/// Ordered relationships keep their order through a migration.
@Suite("Inferred migration of ordered relationships")
struct OrderedRelationshipMigrationTests {
    static func model(extra: Bool) -> ManagedObjectModel {
        ManagedObjectModel(entities: [
            EntityDescription(name: "Playlist", properties: [
                .attribute("name", .string),
                .relationship("songs", destination: "Song", toMany: true, isOrdered: true, inverse: "playlist"),
                .relationship("favorites", destination: "Song", toMany: true, isOrdered: true, inverse: "fans"),
            ] + (extra ? [.attribute("owner", .string, defaultValue: "me")] : [])),
            EntityDescription(name: "Song", properties: [
                .attribute("title", .string),
                .relationship("playlist", destination: "Playlist", inverse: "songs"),
                .relationship("fans", destination: "Playlist", toMany: true, inverse: "favorites"),
            ]),
        ])
    }

    @Test(arguments: Migrating.fileTypes)
    func orderedToManyRelationshipsKeepTheirOrder(_ type: StoreType) throws {
        let directory = TemporaryDirectory()
        let url = directory.file("music")
        let titles = ["d", "b", "e", "a", "c"]
        try Migrating.with(Self.model(extra: false), type, at: url) { (context: ManagedObjectContext) throws in
            let list = context.insertNewObject(forEntityName: "Playlist")
            list.setValue("mix", forKey: "name")
            let songs = titles.map { title -> ManagedObject in
                let song = context.insertNewObject(forEntityName: "Song")
                song.setValue(title, forKey: "title")
                return song
            }
            list.setValue(songs, forKey: "songs")
            list.setValue(Array(songs.reversed()), forKey: "favorites")
        }
        try Migrating.with(Self.model(extra: true), type, at: url, options: Migrating.from(Self.model(extra: false))) {
            (context: ManagedObjectContext) throws in
            let list = try #require(try Migrating.fetch("Playlist", in: context).first)
            #expect(list.value(forKey: "owner") as? String == "me")
            #expect((list.value(forKey: "songs") as? [ManagedObject])?.map { $0.value(forKey: "title") as? String } == titles)
            #expect((list.value(forKey: "favorites") as? [ManagedObject])?.map { $0.value(forKey: "title") as? String } == titles.reversed())
        }
    }
}

/// On SQLite, a step that keeps every table where it is alters the tables instead of copying rows.
@Suite("Inferred migration in place")
struct InPlaceMigrationTests {
    @Test func renamingAndAddingAttributesAltersTheTableWithoutCopyingRows() throws {
        let directory = TemporaryDirectory()
        let url = directory.file("items.sqlite")
        let v1 = ManagedObjectModel(entities: [EntityDescription(name: "Item", properties: [
            .attribute("name", .string, isIndexed: true), .attribute("value", .integer16), .attribute("gone", .string),
        ])])
        let label = PropertyDescription.attribute("label", .string, isIndexed: true)
        label.renamingIdentifier = "name"
        let v2 = ManagedObjectModel(entities: [EntityDescription(name: "Item", properties: [
            label, .attribute("value", .integer64, isOptional: false, defaultValue: Int64(-1)), .attribute("extra", .integer32, defaultValue: Int32(7)),
        ])])
        try Migrating.with(v1, .sqlite, at: url) { (context: ManagedObjectContext) throws in
            for (name, value) in [("a", Int16(1)), ("b", nil)] as [(String, Int16?)] {
                let item = context.insertNewObject(forEntityName: "Item")
                item.setValue(name, forKey: "name")
                item.setValue(value, forKey: "value")
                item.setValue("x", forKey: "gone")
            }
        }
        let plan = try PersistentStoreCoordinator.migrationPlan(forStoreAt: url, type: .sqlite, to: v2, options: Migrating.from(v1))
        let sql = plan.steps[0].description
        for text in ["RENAME COLUMN \"ZNAME\" TO \"ZLABEL\"", "ADD COLUMN \"ZEXTRA\" INTEGER", "DROP COLUMN \"ZGONE\"", "DROP INDEX \"Z_Item_name\"",
                     "CREATE INDEX IF NOT EXISTS \"Z_Item_label\""] {
            #expect(sql.contains(text), "\(text) in:\n\(sql)")
        }
        #expect(!sql.contains("INSERT INTO \"ZITEM\""))
        try Migrating.with(v2, .sqlite, at: url, options: Migrating.from(v1)) { (context: ManagedObjectContext) throws in
            let items = try Migrating.fetch("Item", in: context, sortedBy: "label")
            #expect(items.map { $0.value(forKey: "label") as? String } == ["a", "b"])
            #expect(items.map { $0.value(forKey: "value") as? Int64 } == [1, -1])
            #expect(items.map { $0.value(forKey: "extra") as? Int32 } == [7, 7])
        }
        let columns = try DatabaseQueue(path: url.path).read { try String.fetchAll($0, sql: "SELECT name FROM pragma_table_info('ZITEM')") }
        #expect(columns == ["Z_PK", "Z_ENT", "Z_OPT", "ZLABEL", "ZVALUE", "ZEXTRA"])
    }
}

/// Removing an entity removes its rows and every reference to them.
@Suite("Inferred migration of removed entities")
struct RemovedEntityMigrationTests {
    static func model(archive: Bool) -> ManagedObjectModel {
        ManagedObjectModel(entities: [
            EntityDescription(name: "Folder", properties: [
                .attribute("name", .string), .relationship("notes", destination: "Note", toMany: true, inverse: "folder"),
            ]),
            EntityDescription(name: "Note", properties: [
                .attribute("title", .string), .relationship("folder", destination: "Folder", inverse: "notes"),
            ]),
        ] + (archive ? [EntityDescription(name: "Archive", superentity: "Folder", properties: [.attribute("year", .integer16)])] : []))
    }

    @Test(arguments: Migrating.fileTypes)
    func aRemovedSubEntityTakesItsRowsAndTheReferencesToThemAway(_ type: StoreType) throws {
        let directory = TemporaryDirectory()
        let url = directory.file("notes")
        try Migrating.with(Self.model(archive: true), type, at: url) { (context: ManagedObjectContext) throws in
            let folder = context.insertNewObject(forEntityName: "Folder")
            folder.setValue("inbox", forKey: "name")
            let archive = context.insertNewObject(forEntityName: "Archive")
            archive.setValue("2020", forKey: "name")
            for (title, owner) in [("kept", folder), ("orphan", archive)] {
                let note = context.insertNewObject(forEntityName: "Note")
                note.setValue(title, forKey: "title")
                note.setValue(owner, forKey: "folder")
            }
        }
        try Migrating.with(Self.model(archive: false), type, at: url, options: Migrating.from(Self.model(archive: true))) {
            (context: ManagedObjectContext) throws in
            #expect(try Migrating.fetch("Folder", in: context).map { $0.value(forKey: "name") as? String } == ["inbox"])
            let notes = try Migrating.fetch("Note", in: context, sortedBy: "title")
            #expect(notes.map { ($0.value(forKey: "folder") as? ManagedObject)?.value(forKey: "name") as? String } == ["inbox", nil])
        }
    }
}
