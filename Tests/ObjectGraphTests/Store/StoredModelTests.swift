import Foundation
import GRDB
import Testing

import ObjectGraph
@testable import ObjectGraphCore

/// Every store records the model that wrote it: an SQLite store in `Z_MODELCACHE` (as Core Data
/// does), an atomic store inside its file; `PersistentStore.storedModel(at:type:)` and
/// `storedVersionHashes(at:type:)` read them back.
@Suite("Stores record their model")
struct StoredModelTests {
    /// A model using everything a compiled model holds.
    static func everyFeature() -> ManagedObjectModel {
        let uuid = UUID(uuidString: "6F9619FF-8B86-D011-B42D-00C04FC964FF")!
        let reference = Date(timeIntervalSinceReferenceDate: 700_000_000.25)
        let external = AttributeDescription(name: "photo", attributeType: .binaryData)
        external.allowsExternalBinaryDataStorage = true
        let preserved = AttributeDescription(name: "serial", attributeType: .string, isOptional: false, defaultValue: "none")
        preserved.preservesValueInHistoryOnDeletion = true
        preserved.renamingIdentifier = "serialNumber"
        preserved.userInfo = ["source": "scanner", "version": "2"]
        preserved.versionHashModifier = "v2"
        let readOnly = AttributeDescription(name: "checksum", attributeType: .string)
        readOnly.isReadOnly = true
        let root = EntityDescription(name: "Item", isAbstract: true, properties: [
            .attribute("int16", .integer16, defaultValue: Int16(-3), minimum: Int16(-10), maximum: Int16(10)),
            .attribute("int32", .integer32, isOptional: false, defaultValue: Int32(70_000)),
            .attribute("int64", .integer64, defaultValue: Int64.max, isIndexed: true),
            .attribute("decimal", .decimal, defaultValue: Decimal(string: "-1234.5678")!, minimum: Decimal(0)),
            .attribute("double", .double, defaultValue: 2.5, maximum: 100.0),
            .attribute("float", .float, defaultValue: Float(0.25)),
            .attribute("string", .string, defaultValue: "héllo ✓", minimumLength: 1, maximumLength: 40),
            .attribute("flag", .boolean, isOptional: false, defaultValue: true),
            .attribute("date", .date, defaultValue: reference, minimum: Date(timeIntervalSinceReferenceDate: 0)),
            .attribute("blob", .binaryData, defaultValue: Data([1, 2, 3])),
            .attribute("uuid", .uuid, defaultValue: uuid),
            .attribute("link", .uri, defaultValue: URL(string: "https://example.com/a?b=c")!),
            .attribute("payload", .transformable),
            .attribute("scratch", .string, isTransient: true),
            external, preserved, readOnly,
            .relationship("owner", destination: "Person", inverse: "items", deleteRule: .nullify, isOptional: false),
            .relationship("tags", destination: "Tag", toMany: true, inverse: "items", deleteRule: .noAction),
            .relationship("parts", destination: "Part", toMany: true, isOrdered: true, inverse: "item", deleteRule: .cascade,
                          minimumCount: 1, maximumCount: 5),
            .relationship("related", destination: "Item", toMany: true, inverse: "related", deleteRule: .deny),
            .relationship("lastViewer", destination: "Person"),
        ], uniquenessConstraints: [["serial"], ["int32", "string"]], indexes: [["string", "date"], ["int16"]])
        root.userInfo = ["table": "items"]
        root.renamingIdentifier = "Thing"
        root.versionHashModifier = "2"
        let tool = EntityDescription(name: "Tool", superentity: "Item", properties: [
            .attribute("weight", .double, defaultValue: 1.0),
        ], uniquenessConstraints: [["weight"]])
        let hammer = EntityDescription(name: "Hammer", superentity: "Tool", properties: [
            .attribute("head", .string),
            .relationship("maker", destination: "Person", inverse: "hammers"),
        ])
        let model = ManagedObjectModel(entities: [
            root, tool, hammer,
            EntityDescription(name: "Person", properties: [
                .attribute("name", .string),
                .relationship("items", destination: "Item", toMany: true, inverse: "owner", deleteRule: .cascade),
                .relationship("hammers", destination: "Hammer", toMany: true, inverse: "maker"),
            ]),
            EntityDescription(name: "Tag", properties: [
                .attribute("name", .string),
                .relationship("items", destination: "Item", toMany: true, inverse: "tags"),
            ]),
            EntityDescription(name: "Part", properties: [
                .relationship("item", destination: "Item", inverse: "parts"),
            ]),
        ])
        model.versionIdentifiers = ["3.1"]
        model.setEntities([model.entitiesByName["Tag"]!, model.entitiesByName["Person"]!], forConfigurationName: "Shared")
        return model
    }

    @Test("a model built in code with every feature round-trips through its compiled form: hashes, checksum, entities and properties")
    func modelInCodeRoundTrips() throws {
        let model = Self.everyFeature()
        try model.validate()
        let back = try roundTrip(model)
        #expect(back.entityVersionHashesByName == model.entityVersionHashesByName)
        #expect(back.versionChecksum == model.versionChecksum)
        #expect(summaryDifferences(model, back) == [])
        #expect(back.unsupportedFeatures.isEmpty)
        // Spot checks of values that only a correct encoding gives back.
        let item = try #require(back.entitiesByName["Item"])
        #expect(item.attributesByName["decimal"]?.defaultValue as? Decimal == Decimal(string: "-1234.5678"))
        #expect(item.attributesByName["int64"]?.defaultValue as? Int64 == Int64.max)
        #expect(item.attributesByName["link"]?.defaultValue as? URL == URL(string: "https://example.com/a?b=c"))
        #expect(item.attributesByName["photo"]?.allowsExternalBinaryDataStorage == true)
        #expect(item.attributesByName["serial"]?.renamingIdentifier == "serialNumber")
        #expect(back.entitiesByName["Hammer"]?.superentity?.superentity === item)
        #expect(back.entitiesByName["Hammer"]?.declaredProperties.map(\.name).sorted() == ["head", "maker"])
        #expect(back.entities(forConfigurationName: "Shared")?.map(\.name).sorted() == ["Person", "Tag"])
    }

    @Test("a store ObjectGraph creates holds Z_MODELCACHE as Core Data's, and its model loads back with equal hashes")
    func sqliteStoreRecordsItsModel() throws {
        let directory = TemporaryDirectory()
        for model in [Self.everyFeature(), TestModels.notes()] {
            let url = directory.file("\(UUID().uuidString).sqlite")
            let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
            let store = try coordinator.addPersistentStore(type: .sqlite, at: url)
            try coordinator.removePersistentStore(store)
            let sql = try DatabaseQueue(path: url.path).read {
                try String.fetchAll($0, sql: "SELECT sql FROM sqlite_master WHERE name = 'Z_MODELCACHE'")
            }
            #expect(sql == ["CREATE TABLE Z_MODELCACHE (Z_CONTENT BLOB)"])
            let loaded = try ManagedObjectModel(contentsOfStoreAt: url)
            #expect(loaded.entityVersionHashesByName == model.entityVersionHashesByName)
            #expect(loaded.versionChecksum == model.versionChecksum)
            #expect(summaryDifferences(model, loaded) == [])
            let stored = try #require(try PersistentStore.storedModel(at: url, type: .sqlite))
            #expect(stored.entityVersionHashesByName == model.entityVersionHashesByName)
            #expect(try PersistentStore.storedVersionHashes(at: url, type: .sqlite) == model.entityVersionHashesByName)
            // The store the cached model describes opens with it.
            let reopened = PersistentStoreCoordinator(managedObjectModel: loaded)
            try reopened.removePersistentStore(try reopened.addPersistentStore(type: .sqlite, at: url))
        }
    }

    @Test("binary and XML stores record their model and version hashes; files written before they did stay readable", arguments: [StoreType.binary, .xml])
    func atomicStoresRecordTheirModel(type: StoreType) throws {
        let directory = TemporaryDirectory()
        let url = directory.file("store.\(type.rawValue)")
        let model = Self.everyFeature()
        do {
            let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
            let store = try coordinator.addPersistentStore(type: type, at: url)
            #expect(store.metadata["NSStoreModelVersionHashes"] as? [String: Data] == model.entityVersionHashesByName)
            let context = ManagedObjectContext(concurrencyType: .confinement)
            context.persistentStoreCoordinator = coordinator
            _ = context.insert("Tag", ["name": "red"])
            try context.save()
            try coordinator.removePersistentStore(store)
        }
        let stored = try #require(try PersistentStore.storedModel(at: url, type: type))
        #expect(stored.entityVersionHashesByName == model.entityVersionHashesByName)
        #expect(summaryDifferences(model, stored) == [])
        #expect(try PersistentStore.storedVersionHashes(at: url, type: type) == model.entityVersionHashesByName)

        // A file as ObjectGraph wrote it before: no recorded model. It opens, records nothing, and
        // the next save records both.
        let format: PropertyListSerialization.PropertyListFormat = type == .xml ? .xml : .binary
        var file = try #require(try PropertyListSerialization.propertyList(from: Data(contentsOf: url), options: [], format: nil) as? [String: Any])
        file["versionHashes"] = nil
        file["modelCache"] = nil
        try PropertyListSerialization.data(fromPropertyList: file, format: format, options: 0).write(to: url)
        #expect(try PersistentStore.storedModel(at: url, type: type) == nil)
        #expect(try PersistentStore.storedVersionHashes(at: url, type: type) == nil)
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        let store = try coordinator.addPersistentStore(type: type, at: url)
        let context = ManagedObjectContext(concurrencyType: .confinement)
        context.persistentStoreCoordinator = coordinator
        #expect(try context.all("Tag").count == 1)
        _ = context.insert("Tag", ["name": "blue"])
        try context.save()
        try coordinator.removePersistentStore(store)
        #expect(try PersistentStore.storedVersionHashes(at: url, type: type) == model.entityVersionHashesByName)
        #expect(try PersistentStore.storedModel(at: url, type: type)?.versionChecksum == model.versionChecksum)
    }

    @Test(
        "the model a store records is made once per model, and made again after what it records changes",
        arguments: [StoreType.sqlite, .binary, .xml])
    func recordedModelFollowsLaterChanges(_ type: StoreType) throws {
        let directory = TemporaryDirectory()
        let model = TestModels.notes()
        func recorded() throws -> ManagedObjectModel {
            let url = directory.file("\(UUID().uuidString).\(type.rawValue)")
            let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
            try coordinator.removePersistentStore(try coordinator.addPersistentStore(type: type, at: url))
            return try #require(try PersistentStore.storedModel(at: url, type: type))
        }
        let first = try recorded()
        #expect(first.versionIdentifiers.subtracting([""]).isEmpty)
        let cached = try #require(model.derived.withLock { $0.modelCache })
        #expect(try CompiledModelWriter.modelCacheContent(model) == cached)
        #expect(model.derived.withLock { $0.versionHashes } == model.entityVersionHashesByName)

        // Each of these is recorded in the compiled model, not in the version hashes.
        model.versionIdentifiers = ["2"]
        #expect(model.derived.withLock { $0.modelCache } == nil)
        #expect(try recorded().versionIdentifiers.subtracting([""]) == ["2"])
        let note = try #require(model.entitiesByName["Note"])
        note.userInfo = ["owner": "notes team"]
        #expect(try recorded().entitiesByName["Note"]?.userInfo == ["owner": "notes team"])
        let title = try #require(note.attributesByName["title"])
        title.userInfo = ["shown": "yes"]
        #expect(try recorded().entitiesByName["Note"]?.attributesByName["title"]?.userInfo == ["shown": "yes"])
        model.setEntities([note], forConfigurationName: "Notes")
        #expect(try recorded().entities(forConfigurationName: "Notes")?.map(\.name) == ["Note"])
        // The hashes did not change, and the model still opens what it wrote first.
        #expect(try recorded().entityVersionHashesByName == first.entityVersionHashesByName)
    }

    @Test("Apple's stores: the cached model where there is one, nil where there is none, the recorded hashes always", .needsCoreDataFixtures)
    func applesStores() throws {
        for (fixture, store) in try CoreDataFixtures.stores() {
            let copy = try CoreDataFixtures.copyOfStore(store)
            defer { try? FileManager.default.removeItem(at: copy.deletingLastPathComponent()) }
            let hashes = try CoreDataFixtures.versionHashes(ofStore: store)
            #expect(try PersistentStore.storedVersionHashes(at: copy, type: .sqlite) == hashes, "\(fixture)")
            let model = try PersistentStore.storedModel(at: copy, type: .sqlite)
            let hasCache = try DatabaseQueue(path: copy.path).read { try $0.tableExists("Z_MODELCACHE") }
            #expect((model != nil) == hasCache, "\(fixture)/\(store.lastPathComponent)")
            if let model { #expect(model.entityVersionHashesByName == hashes, "\(fixture)") }
        }
    }

    @Test("what cannot be read says which file and why, and leaves it as it was")
    func refusals() throws {
        let directory = TemporaryDirectory()
        let missing = directory.file("missing.sqlite")
        for type in [StoreType.sqlite, .binary, .xml] {
            let error = try #require(throws: ObjectGraphError.self) { try PersistentStore.storedModel(at: missing, type: type) }
            #expect(error.code == .io && error.message.contains(missing.path))
            let hashesError = try #require(throws: ObjectGraphError.self) { try PersistentStore.storedVersionHashes(at: missing, type: type) }
            #expect(hashesError.code == .io)
        }
        let garbage = directory.file("garbage")
        try Data("not a store at all, not even close".utf8).write(to: garbage)
        for type in [StoreType.sqlite, .binary, .xml] {
            let error = try #require(throws: ObjectGraphError.self) { try PersistentStore.storedVersionHashes(at: garbage, type: type) }
            #expect(error.code == .notADatabase && error.message.contains(garbage.path), "\(type)")
        }
        #expect(try Data(contentsOf: garbage) == Data("not a store at all, not even close".utf8))
        let inMemory = try #require(throws: ObjectGraphError.self) { try PersistentStore.storedModel(at: garbage, type: .inMemory) }
        #expect(inMemory.code == .unsupported)

        // A damaged Z_MODELCACHE is an invalid model, named as such.
        let url = directory.file("damaged.sqlite")
        let coordinator = PersistentStoreCoordinator(managedObjectModel: TestModels.notes())
        try coordinator.removePersistentStore(try coordinator.addPersistentStore(type: .sqlite, at: url))
        try DatabaseQueue(path: url.path).write { try $0.execute(sql: "UPDATE Z_MODELCACHE SET Z_CONTENT = x'07'") }
        let damaged = try #require(throws: ObjectGraphError.self) { try PersistentStore.storedModel(at: url, type: .sqlite) }
        #expect(damaged.code == .invalidModel && damaged.message.contains("Z_MODELCACHE") && damaged.message.contains(url.path))
        // Another model's cache is refused: it does not match the store's hashes.
        try DatabaseQueue(path: url.path).write {
            try $0.execute(sql: "UPDATE Z_MODELCACHE SET Z_CONTENT = ?", arguments: [try CompiledModelWriter.modelCacheContent(Self.everyFeature())])
        }
        let mismatch = try #require(throws: ObjectGraphError.self) { try PersistentStore.storedModel(at: url, type: .sqlite) }
        #expect(mismatch.code == .invalidModel && mismatch.message.contains("version hashes"))
    }
}
