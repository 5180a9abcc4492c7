import Foundation
import GRDB
import Testing
import ObjectGraph
@testable import ObjectGraphCore

/// Inputs the fuzz targets (Sources/objectgraph-fuzz, Scripts/fuzz) found to crash ObjectGraph:
/// each must now be refused with an error, or read, without stopping the program.
@Suite("Inputs found by fuzzing are refused with an error")
struct FuzzRegressionTests {
    /// sqlite-open: in a damaged store whose objects fetch but whose many-to-many join table
    /// cannot be read ("database disk image is malformed"), a fetch prefetching the relationship
    /// stopped the program (a fault's fatal error) instead of throwing.
    @Test func aFetchThatCannotPrefetchAToManyRelationshipThrows() throws {
        let directory = TemporaryDirectory()
        let url = directory.file("notes.sqlite")
        let model = TestModels.notes()
        do {
            let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
            let store = try coordinator.addPersistentStore(type: .sqlite, at: url)
            let context = ManagedObjectContext(concurrencyType: .confinement)
            context.persistentStoreCoordinator = coordinator
            let tag = context.insert("Tag", ["name": "urgent"])
            context.insert("Note", ["title": "one", "tags": Set([tag])])
            try context.save()
            try coordinator.removePersistentStore(store)
        }
        // The join table made unreadable, as the fuzzer's damaged page made it.
        let queue = try DatabaseQueue(path: url.path)
        let joinTable = try #require(try queue.read { db in
            try String.fetchOne(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'Z\\_%TAGS' ESCAPE '\\'")
        })
        try queue.write { db in try db.execute(sql: "ALTER TABLE \(joinTable) RENAME TO damaged") }
        try queue.close()

        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        try coordinator.addPersistentStore(type: .sqlite, at: url)
        for (entity, relationship) in [("Tag", "notes"), ("Note", "tags")] {
            let context = ManagedObjectContext(concurrencyType: .confinement)
            context.persistentStoreCoordinator = coordinator
            let request = FetchRequest<ManagedObject>(entityName: entity)
            request.relationshipKeyPathsForPrefetching = [relationship]
            request.returnsObjectsAsFaults = false
            let error = try #require(throws: ObjectGraphError.self) { try context.fetch(request) }
            #expect(error.message.contains(joinTable), "\(error)")
        }
    }

    /// sqlite-open: a damaged store whose table had lost its INTEGER PRIMARY KEY (so Z_PK could be
    /// NULL) stopped the program (GRDB's non-throwing decoding) when a to-many relationship's
    /// destinations were read. The fetch now throws, naming the store.
    @Test func aFetchThatReadsANullPrimaryKeyThrows() throws {
        let directory = TemporaryDirectory()
        let url = directory.file("notes.sqlite")
        let model = TestModels.notes()
        do {
            let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
            let store = try coordinator.addPersistentStore(type: .sqlite, at: url)
            let context = ManagedObjectContext(concurrencyType: .confinement)
            context.persistentStoreCoordinator = coordinator
            let folder = context.insert("Folder", ["name": "Inbox"])
            context.insert("Note", ["title": "one", "folder": folder])
            try context.save()
            try coordinator.removePersistentStore(store)
        }
        let queue = try DatabaseQueue(path: url.path)
        try queue.write { db in
            try db.execute(sql: """
                ALTER TABLE ZNOTE RENAME TO damaged;
                CREATE TABLE ZNOTE AS SELECT * FROM damaged;
                UPDATE ZNOTE SET Z_PK = NULL
                """)
        }
        try queue.close()

        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        try coordinator.addPersistentStore(type: .sqlite, at: url)
        let context = ManagedObjectContext(concurrencyType: .confinement)
        context.persistentStoreCoordinator = coordinator
        let request = FetchRequest<ManagedObject>(entityName: "Folder")
        request.relationshipKeyPathsForPrefetching = ["notes"]
        let error = try #require(throws: ObjectGraphError.self) { try context.fetch(request) }
        #expect(error.code == .notADatabase)
        #expect(error.message.contains(url.path), "\(error)")
    }

    /// sqlite-open: in a damaged store whose table holds one primary key twice, a fetch returns the
    /// object twice, and prefetching its to-many relationship stopped the program (a dictionary
    /// built with unique keys). The relationship is now read once for the object.
    @Test func prefetchingForAnObjectFetchedTwiceReadsItsRelationshipOnce() throws {
        let directory = TemporaryDirectory()
        let url = directory.file("notes.sqlite")
        let model = TestModels.notes()
        do {
            let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
            let store = try coordinator.addPersistentStore(type: .sqlite, at: url)
            let context = ManagedObjectContext(concurrencyType: .confinement)
            context.persistentStoreCoordinator = coordinator
            let folder = context.insert("Folder", ["name": "Inbox"])
            context.insert("Note", ["title": "one", "folder": folder])
            try context.save()
            try coordinator.removePersistentStore(store)
        }
        let queue = try DatabaseQueue(path: url.path)
        try queue.write { db in
            try db.execute(sql: """
                ALTER TABLE ZFOLDER RENAME TO damaged;
                CREATE TABLE ZFOLDER AS SELECT * FROM damaged;
                INSERT INTO ZFOLDER SELECT * FROM damaged
                """)
        }
        try queue.close()

        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        try coordinator.addPersistentStore(type: .sqlite, at: url)
        let context = ManagedObjectContext(concurrencyType: .confinement)
        context.persistentStoreCoordinator = coordinator
        let request = FetchRequest<ManagedObject>(entityName: "Folder")
        request.relationshipKeyPathsForPrefetching = ["notes"]
        let folders = try context.fetch(request)
        #expect(Set(folders.map(\.objectID)).count == 1)
        let notes = try #require(folders.first?.value(forKey: "notes") as? Set<ManagedObject>)
        #expect(notes.map { $0.value(forKey: "title") as? String } == ["one"])
    }

    /// Damage the xml-store and binary-store targets found in a file whose model hash is right.
    enum AtomicDamage: String, CaseIterable, CustomTestStringConvertible, Sendable {
        /// A row's entity code is negative (it indexed the model's entities).
        case negativeRowEntity
        /// A to-one cell refers to an entity code beyond the model's.
        case objectCellEntityOutOfRange
        /// A row has fewer cells than its entity has columns.
        case missingCells
        /// A join-table row names an entity code beyond the model's.
        case joinEntityOutOfRange

        var testDescription: String { rawValue }
        /// The message's words naming the damage.
        var reason: String {
            switch self {
            case .negativeRowEntity: "entity code -1, which names no entity"
            case .objectCellEntityOutOfRange: "refers to the entity code 99, which names no entity"
            case .missingCells: "cells for"
            case .joinEntityOutOfRange: "a row of the join table"
            }
        }

        func apply(to file: inout [String: Any]) throws {
            var rows = try #require(file["rows"] as? [[String: Any]])
            switch self {
            case .negativeRowEntity:
                rows[0]["entity"] = -1
            case .objectCellEntityOutOfRange:
                let index = try #require(rows.firstIndex { row in (row["values"] as? [[String: Any]])?.contains { $0["object"] != nil } ?? false })
                var values = try #require(rows[index]["values"] as? [[String: Any]])
                let cell = try #require(values.firstIndex { $0["object"] != nil })
                var object = try #require(values[cell]["object"] as? [String: Any])
                object["entity"] = 99
                values[cell]["object"] = object
                rows[index]["values"] = values
            case .missingCells:
                rows[0]["values"] = try #require(rows[0]["values"] as? [Any]).dropLast().map { $0 }
            case .joinEntityOutOfRange:
                var joins = try #require(file["joins"] as? [[String: Any]])
                try #require(!joins.isEmpty)
                joins[0]["destinationEntity"] = 99
                file["joins"] = joins
            }
            file["rows"] = rows
        }
    }

    /// xml-store, binary-store: a store file with the right model hash whose rows name entity codes
    /// the model does not have, or have too few cells, stopped the program (an index out of range)
    /// when its rows were installed. It is now refused as not a store, naming the damage.
    @Test(arguments: [StoreType.xml, .binary], AtomicDamage.allCases)
    func anAtomicStoreWhoseRowsDoNotFitItsModelIsRefused(_ type: StoreType, _ damage: AtomicDamage) throws {
        let directory = TemporaryDirectory()
        let url = directory.file("notes.\(type.rawValue)")
        let model = TestModels.notes()
        do {
            let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
            try coordinator.addPersistentStore(type: type, at: url)
            let context = ManagedObjectContext(concurrencyType: .confinement)
            context.persistentStoreCoordinator = coordinator
            let folder = context.insert("Folder", ["name": "Inbox"])
            let tag = context.insert("Tag", ["name": "urgent"])
            context.insert("Note", ["title": "one", "folder": folder, "tags": Set([tag])])
            try context.save()
        }
        var format = PropertyListSerialization.PropertyListFormat.xml
        var file = try #require(try PropertyListSerialization.propertyList(from: Data(contentsOf: url), options: [], format: &format) as? [String: Any])
        try damage.apply(to: &file)
        let damaged = try PropertyListSerialization.data(fromPropertyList: file, format: format, options: 0)
        try damaged.write(to: url)

        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        let error = try #require(throws: ObjectGraphError.self) { try coordinator.addPersistentStore(type: type, at: url) }
        #expect(error.code == .notADatabase)
        #expect(error.message.contains(damage.reason), "\(error)")
        #expect(try Data(contentsOf: url) == damaged)
    }

    /// The bytes of an XML property list with `0xFF` bytes put after its first `<integer>`: what
    /// the xml-store target found to stop Foundation's XML property list reader (a fatal error in
    /// `BufferView._decodeScalars`) instead of making it throw.
    static func notUTF8(_ xml: Data) throws -> Data {
        let text = try #require(String(data: xml, encoding: .utf8))
        let range = try #require(text.range(of: "<integer>"))
        let offset = text.utf8.distance(from: text.startIndex, to: range.upperBound)
        var bytes = [UInt8](xml)
        bytes.insert(contentsOf: [UInt8](repeating: 0xFF, count: 40), at: offset)
        return Data(bytes)
    }

    /// xml-store: an XML store file that is not UTF-8 stopped the program inside Foundation. Adding
    /// it, reading its recorded model or hashes, and migrating it now throw, naming the byte, and
    /// leave the file as it was.
    @Test func anXMLStoreThatIsNotUTF8IsRefused() throws {
        let directory = TemporaryDirectory()
        let url = directory.file("notes.xml")
        let model = TestModels.notes()
        do {
            let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
            try coordinator.addPersistentStore(type: .xml, at: url)
            let context = ManagedObjectContext(concurrencyType: .confinement)
            context.persistentStoreCoordinator = coordinator
            context.insert("Note", ["title": "one", "rank": 7])
            try context.save()
        }
        let damaged = try Self.notUTF8(Data(contentsOf: url))
        try damaged.write(to: url)
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        let error = try #require(throws: ObjectGraphError.self) { try coordinator.addPersistentStore(type: .xml, at: url) }
        #expect(error.code == .notADatabase && error.message.contains("not UTF-8 at byte") && error.message.contains(url.path), "\(error)")
        let storedModel = try #require(throws: ObjectGraphError.self) { try PersistentStore.storedModel(at: url, type: .xml) }
        #expect(storedModel.code == .notADatabase && storedModel.message.contains("not UTF-8"), "\(storedModel)")
        let hashes = try #require(throws: ObjectGraphError.self) { try PersistentStore.storedVersionHashes(at: url, type: .xml) }
        #expect(hashes.code == .notADatabase, "\(hashes)")
        let migrating = PersistentStoreCoordinator(managedObjectModel: model)
        let migration = try #require(throws: ObjectGraphError.self) {
            try migrating.addPersistentStore(
                type: .xml, at: url,
                options: [PersistentStoreOption.migratePersistentStoresAutomatically: true, PersistentStoreOption.inferMappingModelAutomatically: true])
        }
        #expect(migration.code == .notADatabase, "\(migration)")
        #expect(try Data(contentsOf: url) == damaged)
    }

    /// The same bytes in an SQLite store's metadata (`Z_METADATA.Z_PLIST`, which Core Data writes as
    /// a binary property list but a damaged or crafted file may hold as XML), and in a model
    /// bundle's `.xccurrentversion`: refused with an error that names the byte. (Foundation's
    /// `PropertyListSerialization`, which reads these, throws on such bytes where its decoder stops.)
    @Test func otherPropertyListsThatAreNotUTF8AreRefused() throws {
        let directory = TemporaryDirectory()
        let url = directory.file("notes.sqlite")
        let model = TestModels.notes()
        do {
            let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
            try coordinator.removePersistentStore(try coordinator.addPersistentStore(type: .sqlite, at: url))
        }
        let xml = try PropertyListSerialization.data(fromPropertyList: ["NSStoreType": "SQLite", "count": 3], format: .xml, options: 0)
        let damagedPlist = try Self.notUTF8(xml)
        try DatabaseQueue(path: url.path).write { try $0.execute(sql: "UPDATE Z_METADATA SET Z_PLIST = ?", arguments: [damagedPlist]) }
        let before = try Data(contentsOf: url)
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        let error = try #require(throws: ObjectGraphError.self) { try coordinator.addPersistentStore(type: .sqlite, at: url) }
        #expect(error.code == .incompatibleModel && error.message.contains("Z_METADATA.Z_PLIST"), "\(error)")
        let hashes = try #require(throws: ObjectGraphError.self) { try PersistentStore.storedVersionHashes(at: url, type: .sqlite) }
        #expect(hashes.code == .notADatabase && hashes.message.contains("Z_METADATA.Z_PLIST"), "\(hashes)")
        #expect(try Data(contentsOf: url) == before)

        let bundle = directory.file("Notes.xcdatamodeld")
        try FileManager.default.createDirectory(at: bundle.appendingPathComponent("Notes.xcdatamodel"), withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: bundle.appendingPathComponent("Notes 2.xcdatamodel"), withIntermediateDirectories: true)
        let version = try PropertyListSerialization.data(fromPropertyList: ["_XCCurrentVersionName": "Notes 2.xcdatamodel", "_XCCurrentVersion": 2], format: .xml, options: 0)
        try Self.notUTF8(version).write(to: bundle.appendingPathComponent(".xccurrentversion"))
        let modelError = try #require(throws: ObjectGraphError.self) { try ManagedObjectModel(contentsOf: bundle) }
        #expect(modelError.code == .invalidModel && modelError.message.contains("not UTF-8"), "\(modelError)")
    }

    /// A `Z_PRIMARYKEY` damaged as described, in a store of `NotesVersions.v1()`.
    enum PrimaryKeyDamage: String, CaseIterable, Sendable {
        /// The fuzzer's crash: a number of about 561 billion for an entity of the model (the layout
        /// allocated an array that long).
        case hugeNumber
        case zero
        case negative
        case oneNumberTwoEntities
        case oneEntityTwoNumbers
    }

    static func damage(_ damage: PrimaryKeyDamage, at url: URL) throws {
        let queue = try DatabaseQueue(path: url.path)
        try queue.write { db in
            // Without its INTEGER PRIMARY KEY, as a damaged file's schema can be, so Z_ENT can repeat.
            try db.execute(sql: """
                ALTER TABLE Z_PRIMARYKEY RENAME TO Z_OLDKEYS;
                CREATE TABLE Z_PRIMARYKEY (Z_ENT INTEGER, Z_NAME VARCHAR, Z_SUPER INTEGER, Z_MAX INTEGER);
                INSERT INTO Z_PRIMARYKEY SELECT Z_ENT, Z_NAME, Z_SUPER, Z_MAX FROM Z_OLDKEYS;
                DROP TABLE Z_OLDKEYS;
                """)
            let folder = try #require(try Int.fetchOne(db, sql: "SELECT Z_ENT FROM Z_PRIMARYKEY WHERE Z_NAME = 'Folder'"))
            switch damage {
            case .hugeNumber: try db.execute(sql: "UPDATE Z_PRIMARYKEY SET Z_ENT = 560926685061 WHERE Z_NAME = 'Note'")
            case .zero: try db.execute(sql: "UPDATE Z_PRIMARYKEY SET Z_ENT = 0 WHERE Z_NAME = 'Note'")
            case .negative: try db.execute(sql: "UPDATE Z_PRIMARYKEY SET Z_ENT = -7 WHERE Z_NAME = 'Note'")
            case .oneNumberTwoEntities: try db.execute(sql: "UPDATE Z_PRIMARYKEY SET Z_ENT = ? WHERE Z_NAME = 'Note'", arguments: [folder])
            case .oneEntityTwoNumbers: try db.execute(sql: "INSERT INTO Z_PRIMARYKEY VALUES (9, 'Note', 0, 0)")
            }
        }
        try queue.close()
    }

    /// sqlite-open: a store whose `Z_PRIMARYKEY` numbered an entity of the model about 561 billion
    /// stopped the program: the layout sized its table of entities by the largest number (Swift's
    /// allocation failure, 4.5 TB). Numbers from 16000 up are Core Data's own entities (persistent
    /// history's are 16001 to 16003), so such a row is not the model's: the store opens, its objects
    /// are read, and a note saved beside them reads back. A number below 1, one number for two
    /// entities, or two numbers for one, is refused as damage naming the entity, adding the store
    /// and migrating it alike, and the file is left as it was.
    @Test(arguments: PrimaryKeyDamage.allCases)
    func aDamagedPrimaryKeyTableIsReadOrRefused(_ damage: PrimaryKeyDamage) throws {
        let directory = TemporaryDirectory()
        let url = directory.file("notes.sqlite")
        try NotesVersions.seedV1(.sqlite, at: url)
        try Self.damage(damage, at: url)

        if damage == .hugeNumber {
            let titles = try Migrating.value(NotesVersions.v1(), .sqlite, at: url) { context in
                let notes = try Migrating.fetch("Note", in: context, sortedBy: "title")
                #expect(notes.allSatisfy { ($0.value(forKey: "folder") as? ManagedObject)?.value(forKey: "name") != nil })
                context.insertNewObject(forEntityName: "Note").setValue("d", forKey: "title")
                return notes.map { $0.value(forKey: "title") as? String }
            }
            #expect(titles == ["a", "b", "c"])
            let again = try Migrating.value(NotesVersions.v1(), .sqlite, at: url) { context in
                try Migrating.fetch("Note", in: context, sortedBy: "title").map { $0.value(forKey: "title") as? String }
            }
            #expect(again == ["a", "b", "c", "d"])
            return
        }
        let words: [String] = switch damage {
        case .zero: ["'Note' 0", "Z_PRIMARYKEY"]
        case .negative: ["'Note' -7", "Z_PRIMARYKEY"]
        case .oneNumberTwoEntities: ["'Folder' and 'Note' one number"]
        case .oneEntityTwoNumbers: ["'Note' two numbers"]
        case .hugeNumber: []
        }
        Migrating.expectRefusal(ObjectGraphError(.notADatabase, ""), at: url, mentioning: words) {
            let coordinator = PersistentStoreCoordinator(managedObjectModel: NotesVersions.v1())
            try coordinator.addPersistentStore(type: .sqlite, at: url)
        }
        Migrating.expectRefusal(ObjectGraphError(.notADatabase, ""), at: url, mentioning: words) {
            let coordinator = PersistentStoreCoordinator(managedObjectModel: NotesVersions.v2())
            try coordinator.addPersistentStore(type: .sqlite, at: url, options: Migrating.from(NotesVersions.v1(), NotesVersions.v2()))
        }
    }

    /// sqlite-open: a damaged row in a to-many's destination table whose `Z_ENT` named an entity of
    /// another kind (a note's row numbered as a folder) made the relationship list a folder's ID; a
    /// fetch prefetching it then read the inverse to-one of the registered folder with that key, and
    /// stopped the program (index out of range in `ManagedObject.toOneID`). A destination is now always
    /// of the relationship's destination entity or one of its sub-entities.
    @Test func aToManyRowNumberedAsAnotherEntityIsReadAsTheDestination() throws {
        let directory = TemporaryDirectory()
        let url = directory.file("notes.sqlite")
        try NotesVersions.seedV1(.sqlite, at: url)
        try DatabaseQueue(path: url.path).write { db in
            try db.execute(sql: "UPDATE ZNOTE SET Z_ENT = (SELECT Z_ENT FROM Z_PRIMARYKEY WHERE Z_NAME = 'Folder') WHERE Z_PK = 1")
        }
        let coordinator = PersistentStoreCoordinator(managedObjectModel: NotesVersions.v1())
        try coordinator.addPersistentStore(type: .sqlite, at: url)
        let context = ManagedObjectContext(concurrencyType: .confinement)
        context.persistentStoreCoordinator = coordinator
        // As the fuzz target has it: the damaged row is not a note's to a fetch, so its fault is inaccessible.
        context.shouldDeleteInaccessibleFaults = true
        func request(_ entity: String, prefetching: [String] = []) -> ObjectGraphCore.FetchRequest<ManagedObject> {
            let request = FetchRequest<ManagedObject>(entityName: entity)
            request.returnsObjectsAsFaults = false
            request.relationshipKeyPathsForPrefetching = prefetching
            return request
        }
        // Folders 1 and 2 registered with their values, as the fuzz target had them.
        #expect(try context.fetch(request("Folder")).count == 2)
        let folders = try context.fetch(request("Folder", prefetching: ["notes"]))
        let notes = folders.flatMap { ($0.value(forKey: "notes") as? Set<ManagedObject>) ?? [] }
        #expect(notes.count == 3)
        #expect(notes.allSatisfy { $0.entity.name == "Note" }, "\(notes.map { $0.objectID })")

        // The same rule for a destination with sub-entities (and for a to-one's entity column).
        let schema = CoreDataLayout(model: ManagedObjectModel(entities: [
            EntityDescription(name: "Animal", properties: [.attribute("name", .string)]),
            EntityDescription(name: "Dog", superentity: "Animal", properties: [.attribute("breed", .string)]),
            EntityDescription(name: "Bowl", properties: [.attribute("size", .integer16)]),
        ]))
        let base = try #require(schema.model.entitiesByName["Animal"]), sub = try #require(schema.model.entitiesByName["Dog"])
        let other = try #require(schema.model.entitiesByName["Bowl"])
        #expect(schema.destinationEntity(forNumber: schema.entityNumber(for: sub), of: base) === sub)
        #expect(schema.destinationEntity(forNumber: schema.entityNumber(for: other), of: base) === base)
        #expect(schema.destinationEntity(forNumber: schema.entityNumber(for: base), of: sub) === sub)
        #expect(schema.destinationEntity(forNumber: 15_999, of: base) === base)
        #expect(schema.destinationEntity(forNumber: nil, of: base) === base)
    }
}
