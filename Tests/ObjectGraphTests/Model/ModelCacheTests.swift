import Foundation
import GRDB
import Testing

import ObjectGraph
@testable import ObjectGraphCore

/// The compiled model Core Data caches in a store (`Z_MODELCACHE.Z_CONTENT`, raw DEFLATE): decoded
/// and hashed, it must give the store's own version hashes. For one fixture it is the only copy of
/// the model there is.
@Suite("Core Data model caches")
struct ModelCacheTests {
    private func cachedModel(ofStore store: URL) throws -> ManagedObjectModel? {
        let blob = try CoreDataFixtures.withCopy(of: store) { database -> Data? in
            guard try database.tableExists("Z_MODELCACHE") else { return nil }
            return try Data.fetchOne(database, sql: "SELECT Z_CONTENT FROM Z_MODELCACHE")
        }
        guard let blob else { return nil }
        return try ManagedObjectModel(compiledModelData: Inflate.decompress(blob), source: store)
    }

    @Test("raw DEFLATE streams decode: fixed Huffman codes, stored blocks, the empty stream")
    func inflateKnownStreams() throws {
        func bytes(_ hex: String) -> Data {
            Data(stride(from: 0, to: hex.count, by: 2).map { UInt8(hex.dropFirst($0).prefix(2), radix: 16)! })
        }
        #expect(try Inflate.decompress(bytes("cb48cdc9c957c8402701")) == Data("hello hello hello hello".utf8))
        #expect(try Inflate.decompress(bytes("010c00f3ff73746f72656420626c6f636b")) == Data("stored block".utf8))
        #expect(try Inflate.decompress(bytes("0300")) == Data())
    }

    @Test("damaged DEFLATE streams throw")
    func inflateDamagedStreams() throws {
        #expect(throws: Inflate.Malformed.self) { try Inflate.decompress(Data()) }
        #expect(throws: Inflate.Malformed.self) { try Inflate.decompress(Data([0x07])) }  // block type 3
        #expect(throws: Inflate.Malformed.self) { try Inflate.decompress(Data([0x01, 0x0c, 0x00, 0x00, 0x00])) }  // bad complement
        #expect(throws: Inflate.Malformed.self) { try Inflate.decompress(Data([0xcb, 0x48, 0xcd])) }  // ends early
        #expect(throws: Inflate.Malformed.self) { try Inflate.decompress(Data([0xcb, 0x48, 0xcd, 0xc9, 0xc9, 0x57, 0xc8, 0x40, 0x27, 0x01]), limit: 10) }
    }

    @Test("every store's cached model hashes to the store's own version hashes", .needsCoreDataFixtures)
    func cachedModelsMatchTheirStores() throws {
        var checked = 0
        for (fixture, store) in try CoreDataFixtures.stores() {
            guard let model = try cachedModel(ofStore: store) else { continue }
            let hashes = try CoreDataFixtures.versionHashes(ofStore: store)
            #expect(model.entityVersionHashesByName == hashes, "\(fixture)/\(store.lastPathComponent)")
            checked += 1
        }
        #expect(checked == 19)  // the Artsy and BookMigration stores predate Z_MODELCACHE
    }

    @Test("the store-only model: six entities, an abstract root, two configurations, fetched properties and derived attributes reported", .needsCoreDataFixtures)
    func storeOnlyModel() throws {
        let store = try CoreDataFixtures.url("coredataplus-samplemodel2-storeonly/stores/SampleModel2_V2.sqlite")
        let model = try #require(try cachedModel(ofStore: store))
        let metadata = try CoreDataFixtures.metadata(ofStore: store)
        #expect(model.entityVersionHashesByName == (try CoreDataFixtures.versionHashes(ofStore: store)))
        #expect(model.versionChecksum == metadata["NSStoreModelVersionChecksumKey"] as? String)
        #expect(model.versionChecksum == "rKAqeFkeBuVpMQIEEEFvBGH45XUJ88ai7Pdmz4VqQkE=")
        #expect(model.versionHashesDigest == metadata["NSStoreModelVersionHashesDigest"] as? String)
        #expect(Set(model.entitiesByName.keys) == ["Author", "Book", "Feedback", "GraphicNovel", "Page", "Writer"])
        let writer = try #require(model.entitiesByName["Writer"])
        #expect(writer.isAbstract && writer.superentity == nil)
        #expect(model.entitiesByName["Author"]?.superentity === writer)
        #expect(model.entitiesByName["GraphicNovel"]?.superentity?.name == "Book")
        #expect(model.configurations.count == 2)
        #expect(model.configurations.contains("SampleConfigurationV2Part2"))
        for configuration in model.configurations {
            let members = model.entities(forConfigurationName: configuration) ?? []
            #expect(!members.isEmpty && members.allSatisfy { model.entitiesByName[$0.name] === $0 }, "\(configuration)")
        }
        let types = Set(model.entities.flatMap { $0.attributesByName.values.map(\.attributeType) })
        #expect(types.isSuperset(of: [.uuid, .decimal, .double, .integer64]))

        let fetched = model.unsupportedFeatures.filter { $0.kind == .fetchedProperty }
        #expect(fetched.map { "\($0.entityName ?? "").\($0.propertyName ?? "")" }.sorted() == ["Author.favFeedbacks", "Author.feedbacks"])
        #expect(model.entitiesByName["Author"]?.propertiesByName["feedbacks"] == nil)
        let derived = model.unsupportedFeatures.filter { $0.kind == .derivedAttribute }
        #expect(!derived.isEmpty)
        for feature in derived {
            let attribute = try #require(model.entitiesByName[feature.entityName ?? ""]?.attributesByName[feature.propertyName ?? ""])
            #expect(!attribute.isTransient, "a derived attribute is stored: \(feature)")
        }
        #expect(derived.map(\.description) == ["Book.pagesCount: derived attribute (count:(pages))"])
        #expect(model.entitiesByName["GraphicNovel"]?.declaredProperties.map(\.name) == ["isBlackAndWhite"], "inherited copies are dropped")
        #expect(model.validationErrors.isEmpty, "\(model.validationErrors)")
    }

    @Test("corrupted model caches (compressed and decompressed) throw or load, and never crash", .needsCoreDataFixtures)
    func corruptedCaches() throws {
        let store = try CoreDataFixtures.url("coredataplus-samplemodel2-storeonly/stores/SampleModel2_V2.sqlite")
        let blob = try #require(try CoreDataFixtures.withCopy(of: store) { try Data.fetchOne($0, sql: "SELECT Z_CONTENT FROM Z_MODELCACHE") })
        let archive = try Inflate.decompress(blob)
        var generator = SplitMix64(seed: 1344)
        var refused = 0
        for _ in 0..<300 {
            var bytes = [UInt8](blob)
            bytes[Int(generator.next() % UInt64(bytes.count))] ^= UInt8(truncatingIfNeeded: generator.next() | 1)
            do { _ = try Inflate.decompress(Data(bytes), limit: 1 << 20) } catch { refused += 1 }
        }
        #expect(refused > 0)
        for _ in 0..<300 {
            var bytes = [UInt8](archive)
            for _ in 0..<Int(generator.next() % 3 + 1) {
                bytes[Int(generator.next() % UInt64(bytes.count))] = UInt8(truncatingIfNeeded: generator.next())
            }
            if let contents = try? CompiledModelReader.read(Data(bytes)) {
                _ = ManagedObjectModel(entities: contents.entities).entityVersionHashesByName
            }
        }
        for length in stride(from: 0, to: blob.count, by: 97) {
            #expect(throws: Inflate.Malformed.self) { try Inflate.decompress(blob.prefix(length)) }
        }
    }
}
