import Foundation
import Testing

import ObjectGraph
@testable import ObjectGraphCore

/// Loading real Xcode and compiled models (the fixtures), checked against what their files say.
@Suite("Loading Core Data models", .needsCoreDataFixtures)
struct CoreDataModelLoadingTests {
    private func model(_ path: String) throws -> ManagedObjectModel {
        try ManagedObjectModel(contentsOf: CoreDataFixtures.url(path))
    }

    private func counts(_ model: ManagedObjectModel) -> (entities: Int, attributes: Int, relationships: Int) {
        (model.entities.count,
         model.entities.reduce(0) { $0 + $1.declaredProperties.filter { $0 is AttributeDescription }.count },
         model.entities.reduce(0) { $0 + $1.declaredProperties.filter { $0 is RelationshipDescription }.count })
    }

    @Test("every version of every fixture model loads with nothing unsupported, and only Artsy's old crossed inverses are inconsistent")
    func everyVersionLoads() throws {
        var loaded = 0, crossed = 0
        for (fixture, bundle) in try CoreDataFixtures.modelBundles() {
            for version in try CoreDataFixtures.versions(of: bundle) {
                let model = try ManagedObjectModel(contentsOf: version)
                #expect(!model.entities.isEmpty, "\(fixture) \(version.lastPathComponent)")
                #expect(model.unsupportedFeatures.isEmpty, "\(fixture) \(version.lastPathComponent): \(model.unsupportedFeatures)")
                // Early Artsy models give Image.artist the inverse Artist.thumbnail, whose own inverse is
                // Image.thumbnail: Core Data lets it pass, ObjectGraph reports it (and still hashes it as Apple does).
                if model.validationErrors.isEmpty { loaded += 1; continue }
                #expect(fixture == "artsy-folio" && model.validationErrors.count == 1, "\(fixture) \(version.lastPathComponent): \(model.validationErrors)")
                #expect(model.validationErrors.first?.message.contains("'Image.artist' names inverse 'Artist.thumbnail'") == true)
                crossed += 1
            }
        }
        #expect(loaded == 41 && crossed == 7)
    }

    @Test("a model bundle loads its current version, named by .xccurrentversion, with its counts")
    func currentVersionsAndCounts() throws {
        let expected: [(String, String, (Int, Int, Int))] = [
            ("artsy-folio/ArtsyPartner.xcdatamodeld", "ArtsyFolio v2.7.0", (21, 169, 55)),
            ("bergier-rename-chain/Model.xcdatamodeld", "v2.0.0", (1, 1, 0)),
            ("bookmigration/Model.xcdatamodeld", "Model3", (4, 4, 6)),
            ("coredataplus-samplemodel/SampleModel.xcdatamodeld", "SampleModel", (4, 12, 2)),
            ("coredataplus-samplemodel3/SampleModel3.xcdatamodeld", "SampleModel3", (1, 2, 0)),
            ("wibosco-migration-revised/CoreDataMigration_Example.xcdatamodeld", "CoreDataMigration_Example 4", (2, 7, 2)),
            ("wibosco-migration-wal/CoreDataMigration_Example.xcdatamodeld", "CoreDataMigration_Example 4", (2, 5, 2)),
            ("xcserver/XCServerCoreData.xcdatamodeld", "XCServerCoreData2.0.3", (23, 166, 106)),
        ]
        for (path, version, count) in expected {
            let bundle = try model(path)
            let single = try model(path + "/" + version + ".xcdatamodel")
            #expect(counts(bundle) == count, "\(path)")
            #expect(bundle.entityVersionHashesByName == single.entityVersionHashesByName, "\(path) is not its version \(version)")
        }
    }

    @Test("SampleModel: types, transients, transformers, UUIDs, constraints and three levels of inheritance")
    func sampleModel() throws {
        let model = try model("coredataplus-samplemodel/SampleModel.xcdatamodeld/SampleModel.xcdatamodel")
        #expect(model.versionIdentifiers == ["1"])
        let car = try #require(model.entitiesByName["Car"])
        let color = try #require(car.attributesByName["color"])
        #expect(color.attributeType == .transformable)
        #expect(color.valueTransformerName == "ColorTransformer")
        #expect(color.attributeValueClassName == "Color")
        let speed = try #require(car.attributesByName["currentDrivingSpeed"])
        #expect(speed.isTransient && speed.attributeType == .integer64 && speed.defaultValue as? Int64 == 0)
        let plate = try #require(car.attributesByName["numberPlate"])
        #expect(!plate.isOptional && plate.attributeType == .string)
        #expect(car.uniquenessConstraints == [["numberPlate"]])
        #expect(car.managedObjectClassName == "Car")
        let owner = try #require(car.relationshipsByName["owner"])
        #expect(!owner.isToMany && owner.destinationEntity?.name == "Person" && owner.inverseRelationship?.name == "cars")
        #expect(owner.deleteRule == .nullify)

        let person = try #require(model.entitiesByName["Person"])
        let id = try #require(person.attributesByName["id"])
        #expect(id.attributeType == .uuid && !id.isOptional && id.preservesValueInHistoryOnDeletion)
        #expect(person.attributesByName["isDriving"]?.isTransient == true)
        #expect(person.attributesByName["isDriving"]?.defaultValue as? Bool == false)
        #expect(person.uniquenessConstraints == [["firstName", "lastName"]])
        #expect(person.relationshipsByName["cars"]?.isToMany == true)

        let expensive = try #require(model.entitiesByName["ExpensiveSportCar"])
        #expect(expensive.superentity?.name == "SportCar")
        #expect(expensive.superentity?.superentity?.name == "Car")
        #expect(model.entitiesByName["SportCar"]?.subentities.map(\.name) == ["ExpensiveSportCar"])
        #expect(expensive.attributesByName["numberPlate"] != nil, "inherited from Car")
        #expect(expensive.attributesByName["isLimitedEdition"]?.defaultValue as? Bool == false)
    }

    @Test("SampleModel 2: an entity's renaming identifier and a fetch index")
    func sampleModel2() throws {
        let model = try model("coredataplus-samplemodel/SampleModel.xcdatamodeld/SampleModel2.xcdatamodel")
        #expect(model.versionIdentifiers == ["2"])
        #expect(model.entitiesByName["LuxuryCar"]?.renamingIdentifier == "ExpensiveSportCar")
        #expect(model.entitiesByName["Car"]?.renamingIdentifier == nil)
        #expect(model.entitiesByName["Car"]?.indexes == [["maker", "numberPlate"]])
    }

    @Test("the compiled .momd loads the same model as its XML, property by property")
    func compiledMatchesXML() throws {
        let pairs = [
            ("coredataplus-samplemodel/SampleModel.momd", "coredataplus-samplemodel/SampleModel.xcdatamodeld/SampleModel.xcdatamodel"),
            ("coredataplus-samplemodel/SampleModel.momd/SampleModel2.mom", "coredataplus-samplemodel/SampleModel.xcdatamodeld/SampleModel2.xcdatamodel"),
            ("coredataplus-samplemodel3/SampleModel3.momd", "coredataplus-samplemodel3/SampleModel3.xcdatamodeld/SampleModel3.xcdatamodel"),
            ("xcserver/XCServerCoreData.momd", "xcserver/XCServerCoreData.xcdatamodeld/XCServerCoreData2.0.2.xcdatamodel"),
            ("xcserver/XCServerCoreData.momd/XCServerCoreData1.1.0.mom", "xcserver/XCServerCoreData.xcdatamodeld/XCServerCoreData1.1.0.xcdatamodel"),
        ]
        for (compiledPath, xmlPath) in pairs {
            let compiled = try model(compiledPath), xml = try model(xmlPath)
            #expect(Set(compiled.entitiesByName.keys) == Set(xml.entitiesByName.keys), "\(compiledPath)")
            #expect(compiled.versionIdentifiers == xml.versionIdentifiers, "\(compiledPath)")
            for (name, entity) in xml.entitiesByName {
                let other = try #require(compiled.entitiesByName[name])
                #expect(other.superentity?.name == entity.superentity?.name && other.isAbstract == entity.isAbstract, "\(name)")
                #expect(other.renamingIdentifier == entity.renamingIdentifier || (entity.renamingIdentifier == nil && other.renamingIdentifier == name))
                #expect(other.uniquenessConstraints == entity.uniquenessConstraints, "\(name)")
                #expect(Set(other.propertiesByName.keys) == Set(entity.propertiesByName.keys), "\(name)")
                for (key, attribute) in entity.attributesByName {
                    let twin = try #require(other.attributesByName[key], "\(name).\(key)")
                    #expect(twin.attributeType == attribute.attributeType && twin.isOptional == attribute.isOptional
                        && twin.isTransient == attribute.isTransient && twin.valueTransformerName == attribute.valueTransformerName
                        && twin.preservesValueInHistoryOnDeletion == attribute.preservesValueInHistoryOnDeletion, "\(name).\(key)")
                    #expect(String(describing: twin.defaultValue) == String(describing: attribute.defaultValue), "\(name).\(key) default")
                }
                for (key, relationship) in entity.relationshipsByName {
                    let twin = try #require(other.relationshipsByName[key], "\(name).\(key)")
                    #expect(twin.destinationEntityName == relationship.destinationEntityName && twin.inverseName == relationship.inverseName
                        && twin.isToMany == relationship.isToMany && twin.isOrdered == relationship.isOrdered
                        && twin.deleteRule == relationship.deleteRule && twin.minCount == relationship.minCount
                        && twin.isOptional == relationship.isOptional, "\(name).\(key)")
                }
            }
        }
    }

    @Test("the oldest format (Xcode 4.3): a transformable without a transformer, counts on a to-one, defaults")
    func bookMigration() throws {
        let model = try model("bookmigration/Model.xcdatamodeld/Model1.xcdatamodel")
        #expect(counts(model) == (2, 4, 2))
        let fileURL = try #require(model.entitiesByName["Book"]?.attributesByName["fileURL"])
        #expect(fileURL.attributeType == .transformable && fileURL.valueTransformerName == nil)
        let user = try #require(model.entitiesByName["Book"]?.relationshipsByName["user"])
        #expect(!user.isToMany && user.minCount == 1 && user.inverseRelationship?.name == "books")
        #expect(model.entitiesByName["User"]?.attributesByName["userId"]?.defaultValue as? Int32 == 0)
        #expect(model.versionIdentifiers.isEmpty)
    }

    @Test("renaming identifiers chain an attribute through five versions")
    func renameChain() throws {
        let chain = [("v1.0.0", "v1_0_0_name", nil), ("v1.1.0", "v1_1_0_name", "v1_0_0_name"), ("v1.1.2", "v1_1_2_name", "v1_1_0_name"),
                     ("v1.2.0", "v1_2_0_name", "v1_1_2_name"), ("v2.0.0", "v2_0_0_name", "v1_2_0_name")]
        for (version, name, previous) in chain {
            let model = try model("bergier-rename-chain/Model.xcdatamodeld/\(version).xcdatamodel")
            let attribute = try #require(model.entitiesByName["BasicEntity"]?.attributesByName[name], "\(version)")
            #expect(attribute.renamingIdentifier == previous, "\(version)")
        }
    }

    @Test("delete rules, Integer 16 defaults, to-many relationships without an inverse, decimals and inheritance trees")
    func deleteRulesAndInheritance() throws {
        let revised = try model("wibosco-migration-revised/CoreDataMigration_Example.xcdatamodeld/CoreDataMigration_Example 3.xcdatamodel")
        #expect(revised.entitiesByName["Post"]?.relationshipsByName["sections"]?.deleteRule == .cascade)
        #expect(revised.entitiesByName["Section"]?.relationshipsByName["post"]?.deleteRule == .nullify)
        #expect(revised.entitiesByName["Section"]?.attributesByName["index"]?.attributeType == .integer16)
        #expect(revised.entitiesByName["Section"]?.attributesByName["index"]?.defaultValue as? Int16 == 0)

        let artsy = try model("artsy-folio/ArtsyPartner.xcdatamodeld")
        #expect(artsy.versionIdentifiers == ["2.7.0"])
        #expect(artsy.entitiesByName["Document"]?.subentities.map(\.name).sorted() == ["ArtistDocument", "ShowDocument"])
        #expect(artsy.entitiesByName["Image"]?.subentities.map(\.name).sorted() == ["InstallShotImage", "LocalImage"])
        let edit = try #require(artsy.entities.first { $0.relationshipsByName["removedArtworks"] != nil }?.relationshipsByName["removedArtworks"])
        #expect(edit.isToMany && edit.inverseName == nil && edit.deleteRule == .noAction)
        #expect(artsy.entitiesByName["Artwork"]?.attributesByName["depth"]?.attributeType == .decimal)
        #expect(artsy.entitiesByName["Artwork"]?.attributesByName["depth"]?.defaultValue as? Decimal == 0)
    }

    @Test("xcserver: binary and float attributes, cascades, and the compiled model's fetch indexes")
    func xcserver() throws {
        let model = try model("xcserver/XCServerCoreData.momd")
        #expect(model.entities.count == 23)
        let types = Set(model.entities.flatMap { $0.attributesByName.values.map(\.attributeType) })
        #expect(types.isSuperset(of: [.binaryData, .float, .date, .transformable, .string, .boolean, .integer32]))
        #expect(model.entitiesByName["Bot"]?.relationshipsByName["integrations"]?.deleteRule == .cascade)
        #expect(model.unsupportedFeatures.isEmpty)
    }
}
