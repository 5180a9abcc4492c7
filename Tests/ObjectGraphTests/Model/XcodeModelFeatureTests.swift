import Foundation
import Testing

import ObjectGraph
@testable import ObjectGraphCore

/// Parts of Xcode's model format that the fixtures do not use, read from small models written here
/// in Xcode's own form.
@Suite("Xcode model features")
struct XcodeModelFeatureTests {
    private static let contents = """
        <?xml version="1.0" encoding="UTF-8" standalone="yes"?>
        <model type="com.apple.IDECoreDataModeler.DataModel" documentVersion="1.0" lastSavedToolsVersion="22758" systemVersion="23E224" minimumToolsVersion="Automatic" sourceLanguage="Swift" userDefinedModelVersionIdentifier="7">
            <!-- a comment Xcode never writes, but a person might -->
            <entity name="Shape" representedClassName="Shape" isAbstract="YES" versionHashModifier="round-2" syncable="YES">
                <attribute name="name" attributeType="String" minValueString="1" maxValueString="40" regularExpressionString="[a-z]+" versionHashModifier="m"/>
                <attribute name="image" optional="YES" attributeType="Binary" allowsExternalBinaryDataStorage="YES"/>
                <attribute name="link" optional="YES" attributeType="URI" defaultValueString="https://example.com/a?b=1&amp;c=2"/>
                <attribute name="scale" optional="YES" attributeType="Double" defaultValueString="1.5" minValueString="0" maxValueString="10"/>
                <attribute name="created" optional="YES" attributeType="Date" defaultDateTimeInterval="86400"/>
                <attribute name="notes" optional="YES" attributeType="Undefined" transient="YES"/>
                <attribute name="size" optional="YES" attributeType="Integer 32" defaultValueString="twelve"/>
                <attribute name="cornerCount" optional="YES" attributeType="Integer 64" derived="YES" derivationExpression="corners.@count"/>
                <relationship name="corners" optional="YES" toMany="YES" maxCount="8" deletionRule="Deny" ordered="YES" destinationEntity="Corner" inverseName="shape" inverseEntity="Corner"/>
                <fetchedProperty name="bigCorners" optional="YES">
                    <fetchRequest name="fetchedPropertyFetchRequest" entity="Corner" predicateString="x &gt; 10"/>
                </fetchedProperty>
                <compositeAttribute name="origin" optional="YES">
                    <attribute name="x" optional="YES" attributeType="Double"/>
                    <attribute name="y" optional="YES" attributeType="Double"/>
                </compositeAttribute>
                <fetchIndex name="byNameDescending">
                    <fetchIndexElement property="name" type="Binary" order="descending"/>
                </fetchIndex>
                <userInfo>
                    <entry key="owner" value="geometry"/>
                </userInfo>
            </entity>
            <entity name="Square" parentEntity="Shape" elementID="Quad" syncable="YES"/>
            <entity name="Corner" syncable="YES">
                <attribute name="x" attributeType="Float" defaultValueString="0.0" usesScalarValueType="YES">
                    <userInfo>
                        <entry key="unit" value="pt"/>
                    </userInfo>
                </attribute>
                <relationship name="shape" maxCount="1" deletionRule="No Action" destinationEntity="Shape" inverseName="corners" inverseEntity="Shape" elementID="polygon"/>
            </entity>
            <fetchRequest name="AllShapes" entity="Shape"/>
            <configuration name="Local">
                <memberEntity name="Shape"/>
                <memberEntity name="Square"/>
            </configuration>
            <configuration name="Cloud">
                <memberEntity name="Corner"/>
            </configuration>
        </model>
        """

    private func load(_ text: String = contents) throws -> ManagedObjectModel {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("xcode-model-\(UUID().uuidString)/Shapes.xcdatamodel")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder.deletingLastPathComponent()) }
        try Data(text.utf8).write(to: folder.appendingPathComponent("contents"))
        return try ManagedObjectModel(contentsOf: folder)
    }

    @Test("abstract entities, modifiers, renaming identifiers, user info, configurations and version identifiers load")
    func entityLevel() throws {
        let model = try load()
        #expect(model.versionIdentifiers == ["7"])
        let shape = try #require(model.entitiesByName["Shape"])
        #expect(shape.isAbstract && shape.versionHashModifier == "round-2" && shape.userInfo == ["owner": "geometry"])
        #expect(model.entitiesByName["Square"]?.renamingIdentifier == "Quad")
        #expect(model.entitiesByName["Square"]?.superentity === shape)
        #expect(model.configurations == ["Cloud", "Local"])
        #expect(model.entities(forConfigurationName: "Local")?.map(\.name) == ["Shape", "Square"])
        #expect(model.entities(forConfigurationName: "Cloud")?.map(\.name) == ["Corner"])
        #expect(shape.indexes == [["name"]])
    }

    @Test("attributes keep bounds, defaults, external storage and user info; relationships keep counts, order and rules")
    func propertyLevel() throws {
        let model = try load()
        let shape = try #require(model.entitiesByName["Shape"])
        let name = try #require(shape.attributesByName["name"])
        #expect(name.minimumLength == 1 && name.maximumLength == 40 && name.regularExpression == "[a-z]+" && name.versionHashModifier == "m")
        #expect(shape.attributesByName["image"]?.allowsExternalBinaryDataStorage == true)
        #expect(shape.attributesByName["link"]?.defaultValue as? URL == URL(string: "https://example.com/a?b=1&c=2"))
        #expect(shape.attributesByName["scale"]?.defaultValue as? Double == 1.5)
        #expect(shape.attributesByName["scale"]?.maximum as? Double == 10)
        #expect(shape.attributesByName["created"]?.defaultValue as? Date == Date(timeIntervalSinceReferenceDate: 86400))
        #expect(shape.attributesByName["notes"]?.isTransient == true)
        #expect(shape.attributesByName["size"]?.defaultValue == nil)
        let corners = try #require(shape.relationshipsByName["corners"])
        #expect(corners.isToMany && corners.isOrdered && corners.maxCount == 8 && corners.deleteRule == .deny)
        let corner = try #require(model.entitiesByName["Corner"])
        #expect(corner.relationshipsByName["shape"]?.deleteRule == .noAction)
        #expect(corner.relationshipsByName["shape"]?.renamingIdentifier == "polygon")
        #expect(corner.relationshipsByName["shape"]?.isOptional == false)
        #expect(corner.attributesByName["x"]?.userInfo == ["unit": "pt"])
        #expect(corner.attributesByName["x"]?.defaultValue as? Float == 0)
    }

    @Test("fetched properties, derived and composite attributes, undefined types, unreadable defaults and fetch requests are reported, not dropped in silence")
    func unsupportedFeatures() throws {
        let model = try load()
        let reported = Set(model.unsupportedFeatures.map(\.description))
        #expect(reported == [
            "Shape.notes: undefined attribute type",
            "Shape.size: unreadable default value ('twelve' is not a valid integer32 value)",
            "Shape.cornerCount: derived attribute (count:(corners))",
            "Shape.bigCorners: fetched property (fetch request on Corner where x > 10)",
            "Shape.origin: composite attribute (elements: x, y)",
            "Shape.name: fetch index element (index 'byNameDescending': type Binary, order descending)",
            "model: fetch request template (AllShapes on Shape)",
        ])
        let shape = try #require(model.entitiesByName["Shape"])
        #expect(shape.propertiesByName["bigCorners"] == nil)
        #expect(shape.attributesByName["cornerCount"]?.isTransient == false)
        #expect(shape.attributesByName["origin"] != nil)
    }

    @Test("a derived attribute hashes by its derivation, external storage and ordering change hashes")
    func hashesOfFeatures() throws {
        let model = try load()
        let derived = try #require(model.entitiesByName["Shape"]?.attributesByName["cornerCount"])
        #expect(derived.versionHash == SHA256.hash(Array("count:(corners)".utf8)))
        let plain = try load(Self.contents.replacingOccurrences(of: " allowsExternalBinaryDataStorage=\"YES\"", with: ""))
        #expect(plain.entityVersionHashesByName["Shape"] != model.entityVersionHashesByName["Shape"])
        #expect(plain.entityVersionHashesByName["Corner"] == model.entityVersionHashesByName["Corner"])
        let unordered = try load(Self.contents.replacingOccurrences(of: " ordered=\"YES\"", with: ""))
        #expect(unordered.entityVersionHashesByName["Shape"] != model.entityVersionHashesByName["Shape"])
        // The sub-entity's hash covers its super-entity's.
        #expect(unordered.entityVersionHashesByName["Square"] != model.entityVersionHashesByName["Square"])
    }
}
