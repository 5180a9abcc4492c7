import Foundation
import GRDB
import Testing

import ObjectGraph
@testable import ObjectGraphCore

/// Everything a compiled model says about a model, one line per entity and property, for comparing
/// a model with the one read back from its archive. A renaming identifier that is the element's own
/// name is no renaming (Core Data archives the name when there is none), and a to-one's maximum
/// count is 1 however it was declared.
func compiledModelSummary(_ model: ManagedObjectModel) -> [String] {
    var lines: [String] = []
    lines.append("versions \(model.versionIdentifiers.subtracting([""]).sorted())")
    for configuration in model.configurations {
        lines.append("configuration \(configuration): \((model.entities(forConfigurationName: configuration) ?? []).map(\.name).sorted())")
    }
    for entity in model.entities.sorted(by: { $0.name < $1.name }) {
        lines.append("""
            entity \(entity.name) abstract \(entity.isAbstract) super \(entity.superentityName ?? "-") \
            constraints \(entity.uniquenessConstraints) indexes \(entity.indexes) userInfo \(entity.userInfo.sorted { $0.key < $1.key }) \
            renaming \(entity.renamingIdentifier.flatMap { $0 == entity.name ? nil : $0 } ?? "-") modifier \(entity.versionHashModifier ?? "-") \
            class \(entity.managedObjectClassName ?? "-")
            """)
        for property in entity.declaredProperties.sorted(by: { $0.name < $1.name }) {
            var line = """
                \(entity.name).\(property.name) optional \(property.isOptional) transient \(property.isTransient) \
                readOnly \(property.isReadOnly) userInfo \(property.userInfo.sorted { $0.key < $1.key }) \
                renaming \(property.renamingIdentifier.flatMap { $0 == property.name ? nil : $0 } ?? "-") modifier \(property.versionHashModifier ?? "-")
                """
            if let attribute = property as? AttributeDescription {
                // Core Data's isIndexed: the flag, or a fetch index of the attribute alone.
                let indexed = attribute.isIndexed || entity.indexes.contains([attribute.name])
                let defaultText = attribute.attributeType == .transformable ? "-" : String(describing: attribute.defaultStoredValue)
                line += """
                     attribute \(attribute.attributeType) code \(attribute.coreDataAttributeTypeCode.map(String.init) ?? "-") \
                    default \(defaultText) min \(attribute.minimumValue.map { String(describing: $0) } ?? "-") max \(attribute.maximumValue.map { String(describing: $0) } ?? "-") \
                    length \(attribute.minimumLength ?? -1)...\(attribute.maximumLength ?? -1) indexed \(indexed) \
                    transformer \(attribute.valueTransformerName ?? "-") external \(attribute.allowsExternalBinaryDataStorage) \
                    preserve \(attribute.preservesValueInHistoryOnDeletion) derivation \(attribute.derivation.map { "\($0.expression) \($0.filter ?? "")" } ?? "-")
                    """
            } else if let relationship = property as? RelationshipDescription {
                line += """
                     relationship → \(relationship.destinationEntityName) inverse \(relationship.inverseName ?? "-") \
                    toMany \(relationship.isToMany) ordered \(relationship.isOrdered) rule \(relationship.deleteRule) \
                    count \(relationship.minCount)...\(relationship.isToMany ? relationship.maxCount : 1)
                    """
            }
            lines.append(line)
        }
    }
    return lines
}

/// The lines of two summaries that differ (empty when they are the same).
func summaryDifferences(_ a: ManagedObjectModel, _ b: ManagedObjectModel) -> [String] {
    let (left, right) = (compiledModelSummary(a), compiledModelSummary(b))
    return left.filter { !right.contains($0) }.map { "- " + $0 } + right.filter { !left.contains($0) }.map { "+ " + $0 }
}

/// A model read back from the archive ObjectGraph writes for it.
func roundTrip(_ model: ManagedObjectModel) throws -> ManagedObjectModel {
    try ManagedObjectModel(compiledModelData: CompiledModelWriter.archive(model), source: URL(fileURLWithPath: "/round-trip.mom"))
}

@Suite("Compiled models written by ObjectGraph")
struct CompiledModelWriterTests {
    // MARK: - Binary property lists

    @Test("binary property lists round-trip every kind of value, and Foundation reads them")
    func binaryPropertyListRoundTrip() throws {
        let many = (0..<300).map { PropertyListValue.string("item \($0)") }
        let value = PropertyListValue.dictionary([
            "ascii": .string("plain"),
            "unicode": .string("Ünïcödé ✓ 𝄞"),
            "empty": .string(""),
            "small": .integer(7), "byte": .integer(255), "short": .integer(65_535), "word": .integer(4_000_000_000),
            "big": .integer(Int64.max), "negative": .integer(-42), "min": .integer(Int64.min),
            "real": .real(-0.125), "true": .boolean(true), "false": .boolean(false),
            "date": .date(700_000_000.5), "data": .data(Data((0..<40).map { UInt8($0) })),
            "long": .array(many), "nested": .array([.dictionary(["a": .array([])]), .string("plain")]),
        ])
        let data = try BinaryPropertyListWriter.encode(value)
        #expect(data.starts(with: Array("bplist00".utf8)))
        #expect(try BinaryPropertyList.decode(data) == value)
        let foundation = try #require(try PropertyListSerialization.propertyList(from: data, options: [], format: nil) as? [String: Any])
        #expect(foundation["unicode"] as? String == "Ünïcödé ✓ 𝄞")
        #expect(foundation["min"] as? Int == Int(Int64.min))
        #expect((foundation["long"] as? [String])?.last == "item 299")
        #expect(foundation["date"] as? Date == Date(timeIntervalSinceReferenceDate: 700_000_000.5))
        // UIDs, which Foundation cannot write, read back too.
        let uids = PropertyListValue.array([.uid(0), .uid(255), .uid(256), .uid(70_000)])
        #expect(try BinaryPropertyList.decode(BinaryPropertyListWriter.encode(uids)) == uids)
    }

    // MARK: - DEFLATE

    @Test("DEFLATE streams round-trip through Inflate: empty, short, repetitive, random and longer than the window")
    func deflateRoundTrip() throws {
        var random = [UInt8](repeating: 0, count: 50_000)
        for i in random.indices { random[i] = UInt8.random(in: 0...255) }
        let text = Data(String(repeating: "NSAttributeDescription NSPropertyDescription NSObject ", count: 2_000).utf8)
        var mixed = [UInt8](repeating: 0, count: 200_000)
        for i in mixed.indices { mixed[i] = UInt8((i * 7 + i / 1000) % 251) }
        for input in [Data(), Data("a".utf8), Data("abcabcabcabcabcabc".utf8), Data(random), text, Data(mixed)] {
            let compressed = Deflate.compress(input)
            #expect(try Inflate.decompress(compressed) == input, "\(input.count) bytes")
        }
        #expect(Deflate.compress(text).count < text.count / 20)
        // A known stream: zlib's own raw DEFLATE of the same text decodes to what ours does.
        #expect(try Inflate.decompress(Deflate.compress(Data("hello hello hello hello".utf8))) == Data("hello hello hello hello".utf8))
    }

    // MARK: - Fixture models

    @Test("every fixture model version, written and read back, has the same version hashes, entities and properties", .needsCoreDataFixtures)
    func fixtureModelsRoundTrip() throws {
        var checked = 0
        for (fixture, bundle) in try CoreDataFixtures.modelBundles() {
            for version in try CoreDataFixtures.versions(of: bundle) {
                let model = try ManagedObjectModel(contentsOf: version)
                let back = try roundTrip(model)
                let name = "\(fixture)/\(version.lastPathComponent)"
                #expect(back.entityVersionHashesByName == model.entityVersionHashesByName, "\(name)")
                #expect(back.versionChecksum == model.versionChecksum, "\(name)")
                #expect(summaryDifferences(model, back) == [], "\(name)")
                checked += 1
            }
        }
        #expect(checked >= 40)
    }

    @Test("every compiled .mom and every model Core Data cached in a store, written again and read back, is the same model", .needsCoreDataFixtures)
    func compiledModelsRoundTrip() throws {
        var checked = 0
        let root = try CoreDataFixtures.root()
        for fixture in try CoreDataFixtures.contents(of: root) {
            let folder = root.appendingPathComponent(fixture)
            for bundle in (try? CoreDataFixtures.contents(of: folder)) ?? [] where bundle.hasSuffix(".momd") {
                for mom in try CoreDataFixtures.contents(of: folder.appendingPathComponent(bundle)) where mom.hasSuffix(".mom") {
                    let model = try ManagedObjectModel(contentsOf: folder.appendingPathComponent(bundle).appendingPathComponent(mom))
                    let back = try roundTrip(model)
                    #expect(back.entityVersionHashesByName == model.entityVersionHashesByName, "\(fixture)/\(mom)")
                    #expect(summaryDifferences(model, back) == [], "\(fixture)/\(mom)")
                    checked += 1
                }
            }
        }
        for (fixture, store) in try CoreDataFixtures.stores() {
            let copy = try CoreDataFixtures.copyOfStore(store)
            defer { try? FileManager.default.removeItem(at: copy.deletingLastPathComponent()) }
            guard let model = try PersistentStore.storedModel(at: copy, type: .sqlite) else { continue }
            let back = try roundTrip(model)
            #expect(back.entityVersionHashesByName == (try CoreDataFixtures.versionHashes(ofStore: store)), "\(fixture)/\(store.lastPathComponent)")
            #expect(summaryDifferences(model, back) == [], "\(fixture)/\(store.lastPathComponent)")
            checked += 1
        }
        #expect(checked >= 12 + 19)
    }
}

/// The structure of a compiled-model archive, one line per archived entity, property and fetch
/// index: class names, the keys each object has, flags, types, names and references, as Core Data's
/// decoder reads them. Two archives of the same model have the same lines whoever wrote them.
func archiveShape(_ data: Data, entityKeys: Bool) throws -> [String] {
    let archive = try KeyedArchive(data: data)
    let model = try archive.object(at: archive.root)
    var lines = ["model \(model.className) keys \(model.fields.keys.filter { $0 != "$class" }.sorted())"]
    func name(_ reference: PropertyListValue?, _ key: String) throws -> String {
        try archive.object(reference).flatMap { try archive.string($0.fields[key]) } ?? "-"
    }
    func plain(_ reference: PropertyListValue?) throws -> String {
        guard let value = try archive.value(reference) else { return "-" }
        if let string = try? archive.string(reference) { return string }
        if let object = try? archive.object(reference) {
            if let string = object.fields["NS.string"]?.string { return string }
            return object.className + " " + object.fields.filter { $0.key != "$class" }.sorted { $0.key < $1.key }
                .map { "\($0.key)=\((try? archive.value($0.value)).map { "\(String(describing: $0))" } ?? "?")" }.joined(separator: ",")
        }
        return "\(value)"
    }
    for (entityName, reference) in try archive.entries(model.fields["NSEntities"]) {
        guard let entity = try archive.object(reference) else { continue }
        let keys = entity.fields.keys.filter { $0 != "$class" }.sorted()
        let subentities = try archive.entries(entity.fields["NSSubentities"]).map(\.key).sorted()
        let properties = try archive.entries(entity.fields["NSProperties"]).map(\.key).sorted()
        let tuples = try archive.elements(entity.fields["NSUniqueTuples"]).map { try archive.elements($0).map { try plain($0) } }
        lines.append("""
            entity \(entityName) \(entity.className) \(entityKeys ? "keys \(keys) " : "")abstract \(try plain(entity.fields["NSIsAbstract"])) \
            super \(try name(entity.fields["NSSuperentity"], "NSEntityName")) subentities \(subentities) properties \(properties) \
            tuples \(tuples) renaming \(try plain(entity.fields["NSRenamingIdentifier"])) userInfo \(try archive.entries(entity.fields["NSUserInfo"]).map(\.key))
            """)
        for index in try archive.elements(entity.fields["NSFetchIndexDescriptions"]) {
            guard let index = try archive.object(index) else { continue }
            let elements = try archive.elements(index.fields["NSIndexElements"]).compactMap { try archive.object($0) }.map { element in
                "\(element.className) \(try plain(element.fields["NSPropertyName"])) \(try plain(element.fields["NSAscending"])) \(element.fields.keys.sorted())"
            }
            // Fetch index names are not compared: ObjectGraph's model keeps none (its own are Xcode's default names).
            lines.append("index \(entityName) \(index.className) \(index.fields.keys.sorted()) \(elements)")
        }
        for (propertyName, propertyReference) in try archive.entries(entity.fields["NSProperties"]) {
            guard let property = try archive.object(propertyReference) else { continue }
            let owner = try name(property.fields["NSEntity"], "NSEntityName")
            var line = "\(entityName).\(propertyName) \(property.className) of \(owner) keys \(property.fields.keys.filter { $0 != "$class" }.sorted())"
            for key in ["_P", "NSFlagsKey", "NSAttributeType", "NSAttributeValueClassName", "NSValueTransformerName", "NSRenamingIdentifier",
                        "NSDefaultValue", "NSIsOptional", "NSIsTransient", "NSIsReadOnly", "NSIsIndexed", "NSDeleteRule", "NSMaxCount",
                        "NSMinCount", "_NSDestinationEntityName", "_NSInverseRelationshipName"] where property.fields[key] != nil {
                line += " \(key)=\(try plain(property.fields[key]))"
            }
            if property.fields["NSDestinationEntity"] != nil {
                line += " → \(try name(property.fields["NSDestinationEntity"], "NSEntityName"))"
                if let inverse = try archive.object(property.fields["NSInverseRelationship"]) {
                    line += " inverse \(try name(inverse.fields["NSEntity"], "NSEntityName")).\(try archive.string(inverse.fields["NSPropertyName"]) ?? "-")"
                }
            }
            lines.append(line)
        }
    }
    return lines.sorted()
}

extension CompiledModelWriterTests {
    @Test("ObjectGraph's archive of a fixture's model has the structure of the one Apple's Core Data cached in the store", .needsCoreDataFixtures)
    func archivesHaveApplesStructure() throws {
        var compared = 0
        for (fixture, store) in try CoreDataFixtures.stores() where fixture != "coredataplus-samplemodel2-storeonly" {
            let apples = try CoreDataFixtures.withCopy(of: store) { database -> Data? in
                guard try database.tableExists("Z_MODELCACHE") else { return nil }
                return try Data.fetchOne(database, sql: "SELECT Z_CONTENT FROM Z_MODELCACHE")
            }
            guard let apples else { continue }
            let framework = try CoreDataFixtures.metadata(ofStore: store)["NSPersistenceFrameworkVersion"] as? Int ?? 0
            let model = try CoreDataFixtures.modelThatWrote(store, fixture: fixture)
            // Entities' keys changed across Core Data versions (empty fetch indexes, nil sub-entities): compared on 1344.
            var expected = try archiveShape(Inflate.decompress(apples), entityKeys: framework >= 1344)
            var ours = try archiveShape(CompiledModelWriter.archive(model), entityKeys: framework >= 1344)
            let name = "\(fixture)/\(store.lastPathComponent)"
            if framework < 1344 {
                // Older Core Data cached a transformable's custom class name as nil (1344 keeps it, as
                // ObjectGraph does) and, before 1044, a Boolean default as an integer.
                let normalize = { (line: String) -> String in
                    var line = line
                    if line.contains("NSAttributeType=integer(1800)") {
                        line = line.replacingOccurrences(of: #"NSAttributeValueClassName=\S+"#, with: "", options: .regularExpression)
                    }
                    if line.contains("NSAttributeType=integer(800)") {
                        line = line.replacingOccurrences(of: "NSDefaultValue=integer(0)", with: "NSDefaultValue=boolean(false)")
                            .replacingOccurrences(of: "NSDefaultValue=integer(1)", with: "NSDefaultValue=boolean(true)")
                    }
                    return line
                }
                (expected, ours) = (expected.map(normalize), ours.map(normalize))
            }
            if framework < 800 {
                // Fetch index descriptions came with iOS 11 (Core Data 8xx): before, an indexed attribute had only its flag.
                ours.removeAll { $0.hasPrefix("index ") }
            }
            #expect(ours.filter { !expected.contains($0) } == [], "\(name): ours")
            #expect(expected.filter { !ours.contains($0) } == [], "\(name): Apple's")
            compared += 1
        }
        #expect(compared == 18)
    }
}
