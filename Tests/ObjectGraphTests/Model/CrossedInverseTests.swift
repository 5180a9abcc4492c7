import Foundation
import Logging
import Testing
import ObjectGraph
@testable import ObjectGraphCore

/// Crossed to-one inverses (A.x names B.y, B.y names another relationship), as early Artsy Folio
/// models have them: `Image.artist` declares the inverse `Artist.thumbnail`, whose own inverse is
/// `Image.thumbnail`. momc warns and compiles them as declared; Core Data keeps each inverse as the
/// model says, and so does ObjectGraph, with a warning.
@Suite("A model's declared inverse is kept when the other side does not point back", .needsCoreDataFixtures)
struct CrossedInverseTests {
    static let bundle = "artsy-folio/ArtsyPartner.xcdatamodeld"

    /// A coordinator on `model` whose log is kept.
    private func coordinatorLogging(_ model: ManagedObjectModel) -> (PersistentStoreCoordinator, CapturingLogHandler.Box) {
        let box = CapturingLogHandler.Box()
        let coordinator = PersistentStoreCoordinator(
            managedObjectModel: model, name: "artsy", logger: Logger(label: "objectgraph") { _ in CapturingLogHandler(box: box) })
        return (coordinator, box)
    }

    @Test func everyArtsyVersionLoadsWithEachInverseAsDeclaredAndAWarningWhereTheyCross() throws {
        let versions = try CoreDataFixtures.versions(of: CoreDataFixtures.url(Self.bundle))
        #expect(versions.count == 19)
        var crossed = 0
        for version in versions {
            let name = version.lastPathComponent
            let model = try ManagedObjectModel(contentsOf: version)
            try model.validate()
            // Every relationship's inverse is the one its model names.
            for entity in model.entities {
                for relationship in entity.relationships {
                    if let inverseName = relationship.inverseName {
                        #expect(relationship.inverseRelationship?.name == inverseName, "\(name): \(entity.name).\(relationship.name)")
                        #expect(relationship.inverseRelationship === relationship.destinationEntity?.relationshipsByName[inverseName], "\(name): \(entity.name).\(relationship.name)")
                    } else if let inverse = relationship.inverseRelationship {
                        // Declared on the other side only.
                        #expect(inverse.inverseName == relationship.name, "\(name): \(entity.name).\(relationship.name)")
                    }
                }
            }
            // From v1.7 on, Image has no artist.
            let artist = model.entitiesByName["Image"]?.relationshipsByName["artist"]
            let (coordinator, log) = coordinatorLogging(model)
            let warnings = log.messages.filter { $0.hasPrefix("warning ") }
            if let artist, artist.inverseName == "thumbnail" {
                crossed += 1
                #expect(artist.inverseRelationship?.name == "thumbnail", "\(name)")
                #expect(artist.inverseRelationship?.entity?.name == "Artist", "\(name)")
                // The declared inverse's own inverse is still the one it declares.
                #expect(artist.inverseRelationship?.inverseRelationship?.name == "thumbnail", "\(name)")
                #expect(artist.inverseRelationship?.inverseRelationship?.entity?.name == "Image", "\(name)")
                #expect(model.validationWarnings.count == 1, "\(name): \(model.validationWarnings)")
                let message = try #require(model.validationWarnings.first?.message)
                #expect(message.contains("'Image.artist' names inverse 'Artist.thumbnail', whose own inverse is 'thumbnail'"), "\(message)")
                #expect(message.contains("kept as declared"), "\(message)")
                #expect(warnings.count == 1 && warnings.first?.contains("Image.artist") == true, "\(name): \(log.messages)")
            } else {
                #expect(model.validationWarnings.isEmpty, "\(name): \(model.validationWarnings)")
                #expect(warnings.isEmpty, "\(name): \(log.messages)")
            }
            _ = coordinator
        }
        #expect(crossed == 7)
    }

    @Test func theStoresArtsyWroteStillOpenWithTheirCrossedModel() throws {
        // ArtsyPartner_1.3.5 was written with "ArtsyPartner 5", ArtsyPartner_1.4 with "ArtsyFolio v1.4": both cross.
        for file in ["ArtsyPartner_1.3.5.sqlite", "ArtsyPartner_1.4.sqlite"] {
            let store = try CoreDataFixtures.open(try CoreDataFixtures.url("artsy-folio/stores/\(file)"), fixture: "artsy-folio", readOnly: true)
            defer { store.remove() }
            #expect(store.model.validationWarnings.count == 1, "\(file)")
            let context = store.context()
            for image in try context.all("Image") {
                guard let artist = image.value(forKey: "artist") as? ManagedObject else { continue }
                #expect(artist.entity.name == "Artist")
            }
        }
    }

    @Test(arguments: StoreKind.everyStore)
    func settingARelationshipWithACrossedInverseSetsTheDeclaredInverse(_ kind: StoreKind) throws {
        let model = try ManagedObjectModel(contentsOf: CoreDataFixtures.url(Self.bundle + "/ArtsyPartner 5.xcdatamodel"))
        let stack = try TestStack(kind, model: model)
        let context = stack.context()
        let artwork = context.insert("Artwork", [:])
        let a = context.insert("Artist", ["slug": "a"])
        let b = context.insert("Artist", ["slug": "b"])
        let c = context.insert("Artist", ["slug": "c"])
        let image = context.insert("Image", ["baseURL": "one", "artwork": artwork])
        let other = context.insert("Image", ["baseURL": "two", "artwork": artwork])
        func to(_ object: ManagedObject, _ key: String) -> ManagedObject? { object.value(forKey: key) as? ManagedObject }

        // Image.artist's declared inverse is Artist.thumbnail.
        image.setValue(a, forKey: "artist")
        #expect(to(a, "thumbnail") === image)
        #expect(to(image, "thumbnail") == nil)
        // Moving to another artist clears the one it leaves.
        image.setValue(b, forKey: "artist")
        #expect(to(a, "thumbnail") == nil)
        #expect(to(b, "thumbnail") === image)
        // Artist.thumbnail's declared inverse is Image.thumbnail, not Image.artist.
        c.setValue(other, forKey: "thumbnail")
        #expect(to(other, "thumbnail") === c)
        #expect(to(other, "artist") == nil)
        try context.save()

        let reader = stack.context("reader")
        func read(_ object: ManagedObject) throws -> ManagedObject { try reader.existingObject(with: object.objectID) }
        func id(_ object: ManagedObject, _ key: String) throws -> ManagedObjectID? { to(try read(object), key)?.objectID }
        #expect(try id(image, "artist") == b.objectID)
        #expect(try id(b, "thumbnail") == image.objectID)
        #expect(try id(a, "thumbnail") == nil)
        #expect(try id(c, "thumbnail") == other.objectID)
        #expect(try id(other, "thumbnail") == c.objectID)
        #expect(try id(other, "artist") == nil)

        // Deleting the image nullifies its artist's inverse, the artist's thumbnail.
        reader.delete(try read(image))
        reader.processPendingChanges()
        #expect(to(try read(b), "thumbnail") == nil)
        try reader.save()
        let again = stack.context("again")
        #expect(to(try again.existingObject(with: b.objectID), "thumbnail") == nil)
        #expect(to(try again.existingObject(with: c.objectID), "thumbnail")?.objectID == other.objectID)
    }
}
