import Foundation
import Testing

import ObjectGraph
@testable import ObjectGraphCore

/// Broken model files: each gives an `ObjectGraphError` that names the file and what is wrong, and
/// none crashes the process.
@Suite("Errors in Core Data model files")
struct ModelFileErrorTests {
    /// A temporary folder, deleted when the test is done.
    private final class Scratch {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("model-errors-\(UUID().uuidString)")
        init() throws { try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true) }
        deinit { try? FileManager.default.removeItem(at: url) }

        func write(_ text: String, to path: String) throws -> URL { try write(Data(text.utf8), to: path) }
        func write(_ data: Data, to path: String) throws -> URL {
            let file = url.appendingPathComponent(path)
            try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
            try data.write(to: file)
            return file
        }
    }

    private func loadError(_ url: URL) -> ObjectGraphError? {
        do {
            _ = try ManagedObjectModel(contentsOf: url)
            return nil
        } catch {
            return error as? ObjectGraphError
        }
    }

    private func xcdatamodel(_ scratch: Scratch, _ contents: String) throws -> URL {
        try scratch.write(contents, to: "Broken.xcdatamodel/contents").deletingLastPathComponent()
    }

    @Test("malformed XML names the contents file and the line")
    func malformedXML() throws {
        let scratch = try Scratch()
        let model = try xcdatamodel(scratch, "<?xml version=\"1.0\"?>\n<model>\n  <entity name=\"Note\">\n    <attribute name=\"title\" attributeType=\"String\"/>\n</model>")
        let error = try #require(loadError(model))
        #expect(error.code == .invalidModel)
        #expect(error.message.contains(model.appendingPathComponent("contents").path))
        #expect(error.message.contains("line 5"))
        #expect(error.url == model.appendingPathComponent("contents"))
    }

    @Test("an unknown attribute type, a missing destination and an unknown delete rule are named")
    func unknownSchemaValues() throws {
        let cases = [
            ("<model><entity name=\"Note\"><attribute name=\"title\" attributeType=\"Text\"/></entity></model>", "'Note.title' has unknown type 'Text'"),
            ("<model><entity name=\"Note\"><relationship name=\"folder\"/></entity></model>", "'Note.folder' has no destination entity"),
            ("<model><entity name=\"Note\"><relationship name=\"f\" destinationEntity=\"Note\" deletionRule=\"Explode\"/></entity></model>", "unknown delete rule 'Explode'"),
            ("<model><entity name=\"Note\"/><entity name=\"Note\"/></model>", "entity 'Note' is declared twice"),
            ("<plist><dict/></plist>", "the root element is <plist>, not <model>"),
            ("", "the document has no root element"),
            ("<model attr=unquoted></model>", "is not quoted"),
            ("<model><entity name=\"A&bogus;\"/></model>", "unknown reference &bogus;"),
        ]
        for (contents, expected) in cases {
            let scratch = try Scratch()
            let error = try #require(loadError(try xcdatamodel(scratch, contents)), "\(contents)")
            #expect(error.code == .invalidModel)
            #expect(error.message.contains(expected), "\(error.message)")
            #expect(error.message.contains("Broken.xcdatamodel/contents"))
        }
    }

    @Test("a model bundle whose current version is missing or unreadable names its .xccurrentversion")
    func brokenCurrentVersion() throws {
        let scratch = try Scratch()
        _ = try scratch.write("<model><entity name=\"A\"/></model>", to: "M.xcdatamodeld/V1.xcdatamodel/contents")
        let plist = """
            <?xml version="1.0" encoding="UTF-8"?>
            <plist version="1.0"><dict><key>_XCCurrentVersionName</key><string>V2.xcdatamodel</string></dict></plist>
            """
        let current = try scratch.write(plist, to: "M.xcdatamodeld/.xccurrentversion")
        let bundle = current.deletingLastPathComponent()
        let missing = try #require(loadError(bundle))
        #expect(missing.code == .invalidModel && missing.message.contains(".xccurrentversion") && missing.message.contains("'V2.xcdatamodel' is not in the bundle"))
        _ = try scratch.write("not a plist <<<", to: "M.xcdatamodeld/.xccurrentversion")
        let garbage = try #require(loadError(bundle))
        #expect(garbage.code == .invalidModel && garbage.message.contains(".xccurrentversion") && garbage.message.contains("malformed property list"))
        // Without .xccurrentversion, a bundle with one version loads it.
        try FileManager.default.removeItem(at: current)
        #expect(try ManagedObjectModel(contentsOf: bundle).entitiesByName["A"] != nil)
    }

    @Test("a file that is not a model, and a file that does not exist, are refused by name")
    func notAModel() throws {
        let scratch = try Scratch()
        let text = try scratch.write("hello", to: "notes.txt")
        let error = try #require(loadError(text))
        #expect(error.code == .invalidModel && error.message.contains("notes.txt") && error.message.contains("not a Core Data model"))
        let nowhere = scratch.url.appendingPathComponent("Nowhere.momd")
        let missing = try #require(loadError(nowhere))
        #expect(missing.code == .io && missing.message.contains("Nowhere.momd"))
    }

    @Test("a .mom that is not a keyed archive of a model is refused by name")
    func brokenCompiledModels() throws {
        let scratch = try Scratch()
        let cases: [(Data, String)] = [
            (Data("garbage that is not a property list".utf8), "not a binary property list"),
            (try PropertyListSerialization.data(fromPropertyList: ["a": 1], format: .binary, options: 0), "has no $objects"),
            (try PropertyListSerialization.data(fromPropertyList: [1, 2], format: .binary, options: 0), "not a keyed archive"),
        ]
        for (data, expected) in cases {
            let mom = try scratch.write(data, to: "Broken\(UUID().uuidString).mom")
            let error = try #require(loadError(mom))
            #expect(error.code == .invalidModel && error.message.contains(mom.lastPathComponent) && error.message.contains(expected), "\(error.message)")
        }
    }

    @Test("every truncation and thousands of random corruptions of a real .mom throw or load, and never crash", .needsCoreDataFixtures)
    func corruptedCompiledModels() throws {
        let original = try Data(contentsOf: CoreDataFixtures.url("coredataplus-samplemodel/SampleModel.momd/SampleModel.mom"))
        var truncationsRefused = 0
        for length in stride(from: 0, to: original.count, by: 7) {
            do { _ = try CompiledModelReader.read(original.prefix(length)) } catch { truncationsRefused += 1 }
        }
        #expect(truncationsRefused == (original.count + 6) / 7, "a truncated .mom must not load")
        var generator = SplitMix64(seed: 14)
        var refused = 0
        for _ in 0..<2000 {
            var bytes = [UInt8](original)
            for _ in 0..<Int(generator.next() % 4 + 1) {
                bytes[Int(generator.next() % UInt64(bytes.count))] = UInt8(truncatingIfNeeded: generator.next())
            }
            do {
                let contents = try CompiledModelReader.read(Data(bytes))
                _ = ManagedObjectModel(entities: contents.entities).entityVersionHashesByName
            } catch {
                refused += 1
            }
        }
        #expect(refused > 0)
    }

    @Test("truncated and corrupted XML models throw or load, and never crash", .needsCoreDataFixtures)
    func corruptedXMLModels() throws {
        let original = try Data(contentsOf: CoreDataFixtures.url(
            "coredataplus-samplemodel/SampleModel.xcdatamodeld/SampleModel.xcdatamodel/contents"))
        var refused = 0
        for length in stride(from: 0, to: original.count - 10, by: 13) {
            do { _ = try XcodeModelReader.read(original.prefix(length)) } catch { refused += 1 }
        }
        #expect(refused == (original.count - 10 + 12) / 13)
        var generator = SplitMix64(seed: 41)
        for _ in 0..<500 {
            var bytes = [UInt8](original)
            bytes[Int(generator.next() % UInt64(bytes.count))] = UInt8(truncatingIfNeeded: generator.next())
            if let contents = try? XcodeModelReader.read(Data(bytes)) {
                _ = ManagedObjectModel(entities: contents.entities).entityVersionHashesByName
            }
        }
    }

    @Test("the binary property list reader agrees with Foundation's on a store's metadata", .needsCoreDataFixtures)
    func binaryPropertyListAgreesWithFoundation() throws {
        let info = try Data(contentsOf: CoreDataFixtures.url("xcserver/XCServerCoreData.momd/VersionInfo.plist"))
        let ours = try BinaryPropertyList.decode(info)
        let theirs = try #require(try PropertyListSerialization.propertyList(from: info, options: [], format: nil) as? [String: Any])
        let versions = try #require(ours.dictionary?["NSManagedObjectModel_VersionHashes"]?.dictionary)
        let expected = try #require(theirs["NSManagedObjectModel_VersionHashes"] as? [String: [String: Data]])
        #expect(Set(versions.keys) == Set(expected.keys))
        for (version, hashes) in expected {
            for (entity, hash) in hashes { #expect(versions[version]?.dictionary?[entity] == .data(hash)) }
        }
        #expect(ours.dictionary?["NSManagedObjectModel_CurrentVersionName"] == .string("XCServerCoreData2.0.2"))
    }

    /// Found by the xcode-model and compiled-model fuzz targets: an entity whose parent entity is
    /// itself overflowed the stack while the model was built. Loaded from a file, the model now
    /// names the cycle and refuses to validate, and it can be written to a compiled model and read back.
    @Test("an Xcode model whose entity is its own parent loads, names the cycle and does not validate")
    func anEntityThatIsItsOwnParent() throws {
        let scratch = try Scratch()
        let url = try xcdatamodel(scratch, """
            <?xml version="1.0" encoding="UTF-8" standalone="yes"?>
            <model type="com.apple.IDECoreDataModeler.DataModel" documentVersion="1.0">
                <entity name="Item" representedClassName="Item" parentEntity="Item" syncable="YES">
                    <attribute name="due" optional="YES" attributeType="Date"/>
                </entity>
                <entity name="Tag" syncable="YES">
                    <attribute name="name" optional="YES" attributeType="String"/>
                </entity>
            </model>
            """)
        let model = try ManagedObjectModel(contentsOf: url)
        let cycle = try #require(model.validationErrors.first { $0.message.contains("inheritance cycle") })
        #expect(cycle.message.contains("'Item'"))
        #expect(throws: ObjectGraphError.invalidModel) { try model.validate() }
        #expect(model.entitiesByName["Item"]?.superentity == nil)
        #expect(model.entityVersionHashesByName.count == 2)
        let compiled = try scratch.write(try CompiledModelWriter.archive(model), to: "Broken.mom")
        let back = try ManagedObjectModel(contentsOf: compiled)
        #expect(back.entitiesByName.keys.sorted() == ["Item", "Tag"])
    }
}
