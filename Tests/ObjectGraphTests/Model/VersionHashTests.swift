import Foundation
import Testing

import ObjectGraph
@testable import ObjectGraphCore

/// Apple's version hashes, checked against what Apple's tools wrote: the `NSStoreModelVersionHashes`
/// of every fixture store and the `VersionInfo.plist` of every committed `.momd`.
@Suite("Core Data version hashes")
struct VersionHashTests {
    private func hex(_ hashes: [String: Data]) -> [String: String] {
        hashes.mapValues { $0.map { String(format: "%02x", $0) }.joined() }
    }

    @Test("every fixture store's hashes equal those of exactly one version of its model", .needsCoreDataFixtures)
    func storesMatchExactlyOneVersion() throws {
        let stores = try CoreDataFixtures.stores()
        #expect(stores.count == 24)
        var matched = 0
        for (fixture, store) in stores {
            let storeHashes = try CoreDataFixtures.versionHashes(ofStore: store)
            #expect(!storeHashes.isEmpty, "\(store.lastPathComponent) has no version hashes")
            guard let bundle = try CoreDataFixtures.modelBundles().first(where: { $0.fixture == fixture })?.bundle else {
                #expect(fixture == "coredataplus-samplemodel2-storeonly", "\(fixture) has no model bundle")
                continue
            }
            var matching: [String] = []
            for version in try CoreDataFixtures.versions(of: bundle) {
                let model = try ManagedObjectModel(contentsOf: version)
                if model.entityVersionHashesByName == storeHashes { matching.append(version.lastPathComponent) }
            }
            #expect(matching.count == 1, "\(fixture)/\(store.lastPathComponent) matches \(matching)")
            if matching.count == 1 { matched += 1 }
        }
        #expect(matched == 23)
    }

    @Test("the stores are matched to the versions that wrote them", .needsCoreDataFixtures)
    func knownStoreVersions() throws {
        let expected = [
            ("bookmigration", "Model1.sqlite", "Model1.xcdatamodel"),
            ("artsy-folio", "ArtsyPartner_1.3.5.sqlite", "ArtsyPartner 5.xcdatamodel"),
            ("artsy-folio", "oss_stubbed_data.sqlite", "ArtsyFolio v2.3.xcdatamodel"),
            ("coredataplus-samplemodel", "SampleModel_V2.sqlite", "SampleModel2.xcdatamodel"),
            ("wibosco-migration-wal", "CoreDataMigration_Example_WAL.sqlite", "CoreDataMigration_Example 4.xcdatamodel"),
            ("xcserver", "XCServerCoreData_2.0.1.sqlite", "XCServerCoreData2.0.1.xcdatamodel"),
        ]
        for (fixture, store, version) in expected {
            let storeURL = try CoreDataFixtures.url("\(fixture)/stores/\(store)")
            let bundle = try #require(try CoreDataFixtures.modelBundles().first { $0.fixture == fixture }?.bundle)
            let model = try ManagedObjectModel(contentsOf: bundle.appendingPathComponent(version))
            #expect(hex(model.entityVersionHashesByName) == hex(try CoreDataFixtures.versionHashes(ofStore: storeURL)), "\(fixture)/\(store)")
        }
    }

    @Test("a compiled model bundle's VersionInfo.plist equals the hashes of the XML and of the compiled .mom of every version", .needsCoreDataFixtures)
    func versionInfoMatchesXMLAndCompiledModels() throws {
        var compared = 0
        for (fixture, bundle) in try CoreDataFixtures.modelBundles() {
            let folder = bundle.deletingLastPathComponent()
            guard let momd = try CoreDataFixtures.contents(of: folder).first(where: { $0.hasSuffix(".momd") }) else { continue }
            let momdURL = folder.appendingPathComponent(momd)
            let info = try PropertyListSerialization.propertyList(
                from: Data(contentsOf: momdURL.appendingPathComponent("VersionInfo.plist")), options: [], format: nil)
            let versions = try #require((info as? [String: Any])?["NSManagedObjectModel_VersionHashes"] as? [String: [String: Any]])
            #expect(!versions.isEmpty)
            for (version, rawHashes) in versions {
                let expected = try rawHashes.mapValues { try #require($0 as? Data) }
                let fromXML = try ManagedObjectModel(contentsOf: bundle.appendingPathComponent(version + ".xcdatamodel"))
                let fromMom = try ManagedObjectModel(contentsOf: momdURL.appendingPathComponent(version + ".mom"))
                #expect(hex(fromXML.entityVersionHashesByName) == hex(expected), "\(fixture) \(version) from XML")
                #expect(hex(fromMom.entityVersionHashesByName) == hex(expected), "\(fixture) \(version) from .mom")
                compared += 1
            }
        }
        #expect(compared == 12)  // xcserver 6, samplemodel 3, samplemodel3 3
    }

    @Test("the model version checksum equals the NSStoreModelVersionChecksumKey Core Data wrote", .needsCoreDataFixtures)
    func versionChecksum() throws {
        let store = try CoreDataFixtures.url("coredataplus-samplemodel3/stores/SampleModel3_V1.sqlite")
        let metadata = try CoreDataFixtures.metadata(ofStore: store)
        let expected = try #require(metadata["NSStoreModelVersionChecksumKey"] as? String)
        #expect(expected == "u970QgYhRHEJGIt0zQr1UhuZL2ZJ1KxBS+B7rkAx0ik=")
        let model = try ManagedObjectModel(
            contentsOf: CoreDataFixtures.url("coredataplus-samplemodel3/SampleModel3.xcdatamodeld/SampleModel3.xcdatamodel"))
        #expect(model.versionChecksum == expected)
        #expect(model.versionHashesDigest == metadata["NSStoreModelVersionHashesDigest"] as? String)
        let other = try ManagedObjectModel(
            contentsOf: CoreDataFixtures.url("coredataplus-samplemodel3/SampleModel3.xcdatamodeld/SampleModel3_v2.xcdatamodel"))
        #expect(other.versionChecksum != expected)
    }

    @Test("what Core Data hashes changes the hash, and what it leaves out does not")
    func hashInputs() throws {
        func hash(_ properties: [PropertyDescription], _ build: (EntityDescription) -> Void = { _ in }) -> Data {
            let entity = EntityDescription(name: "Note", properties: properties)
            build(entity)
            return ManagedObjectModel(entities: [entity]).entityVersionHashesByName["Note"]!
        }
        let base = hash([.attribute("title", .string)])
        #expect(base == hash([.attribute("title", .string)]))
        #expect(base != hash([.attribute("title", .string, isOptional: false)]))
        #expect(base != hash([.attribute("title", .integer32)]))
        #expect(base != hash([.attribute("name", .string)]))
        #expect(base != hash([.attribute("title", .string)]) { $0.versionHashModifier = "2" })
        // Transient properties, defaults, indexes and renaming identifiers are not part of the hash.
        #expect(base == hash([.attribute("title", .string), .attribute("scratch", .string, isTransient: true)]))
        #expect(base == hash([.attribute("title", .string, defaultValue: "x", isIndexed: true)]))
        #expect(base == hash([.attribute("title", .string)]) { $0.renamingIdentifier = "Memo" })
        let renamed = PropertyDescription.attribute("title", .string)
        renamed.renamingIdentifier = "name"
        #expect(base == hash([renamed]))
        let modified = PropertyDescription.attribute("title", .string)
        modified.versionHashModifier = "v2"
        #expect(base != hash([modified]))
    }

    @Test("a relationship that is its own inverse hashes without the inverse's name, as in Core Data; any other inverse is hashed")
    func selfInverse() throws {
        func spouseHash(inverse: String?) -> Data {
            let model = ManagedObjectModel(entities: [EntityDescription(name: "Person", properties: [
                .relationship("spouse", destination: "Person", inverse: inverse), .relationship("partner", destination: "Person", inverse: "partner"),
            ])])
            return model.entitiesByName["Person"]!.relationshipsByName["spouse"]!.versionHash
        }
        #expect(spouseHash(inverse: "spouse") == spouseHash(inverse: nil))
        #expect(spouseHash(inverse: "partner") != spouseHash(inverse: nil))
    }
}
