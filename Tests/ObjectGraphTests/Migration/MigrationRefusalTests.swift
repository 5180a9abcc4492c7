import Foundation
import Testing
import ObjectGraph
@testable import ObjectGraphCore

/// What cannot be inferred is refused before anything is written: the error names the entity,
/// the property and why, and the store's bytes are those it had.
@Suite("Migration refusals")
struct MigrationRefusalTests {
    private func items(_ properties: [PropertyDescription], unique: [[String]] = []) -> ManagedObjectModel {
        ManagedObjectModel(entities: [EntityDescription(name: "Item", properties: properties, uniquenessConstraints: unique)])
    }

    private var v1: ManagedObjectModel { items([.attribute("name", .string), .attribute("count", .integer64)]) }

    private func seed(_ type: StoreType, at url: URL, names: [String?]) throws {
        try Migrating.with(items([.attribute("name", .string), .attribute("count", .integer64)]), type, at: url) { (context: ManagedObjectContext) throws in
            for name in names { context.insertNewObject(forEntityName: "Item").setValue(name, forKey: "name") }
        }
    }

    @Test(arguments: Migrating.fileTypes)
    func aTypeChangeWithoutAConversionIsRefused(_ type: StoreType) throws {
        let directory = TemporaryDirectory()
        let url = directory.file("items")
        try seed(type, at: url, names: ["a"])
        Migrating.expectRefusal(.migration, at: url, mentioning: ["Item.name", "string", "integer64"]) {
            try Migrating.with(items([.attribute("name", .integer64), .attribute("count", .integer64)]), type, at: url, options: Migrating.from(v1)) { _ in }
        }
        // A narrowing is a type change without a lossless conversion too.
        Migrating.expectRefusal(.migration, at: url, mentioning: ["Item.count", "integer16"]) {
            try Migrating.with(items([.attribute("name", .string), .attribute("count", .integer16)]), type, at: url, options: Migrating.from(v1)) { _ in }
        }
    }

    @Test(arguments: Migrating.fileTypes)
    func aRequiredAttributeAddedWithoutADefaultIsRefusedWhileRowsExist(_ type: StoreType) throws {
        let directory = TemporaryDirectory()
        let url = directory.file("items")
        try seed(type, at: url, names: ["a", "b"])
        let v2 = { self.items([.attribute("name", .string), .attribute("count", .integer64), .attribute("code", .string, isOptional: false)]) }
        Migrating.expectRefusal(.migration, at: url, mentioning: ["Item.code", "required", "2 row(s)"]) {
            try Migrating.with(v2(), type, at: url, options: Migrating.from(v1)) { _ in }
        }
        // With no rows, nothing stands in the way.
        let empty = directory.file("empty")
        try seed(type, at: empty, names: [])
        try Migrating.with(v2(), type, at: empty, options: Migrating.from(v1)) { (context: ManagedObjectContext) throws in
            #expect(try Migrating.fetch("Item", in: context).isEmpty)
        }
    }

    @Test(arguments: Migrating.fileTypes)
    func anAttributeBecomingRequiredWithoutADefaultIsRefusedWhileARowHasNil(_ type: StoreType) throws {
        let directory = TemporaryDirectory()
        let url = directory.file("items")
        try seed(type, at: url, names: ["a", nil])
        Migrating.expectRefusal(.migration, at: url, mentioning: ["Item.name", "1 row(s)"]) {
            try Migrating.with(items([.attribute("name", .string, isOptional: false), .attribute("count", .integer64)]), type, at: url, options: Migrating.from(v1)) { _ in }
        }
    }

    @Test(arguments: Migrating.fileTypes)
    func aNewUniquenessConstraintTheRowsViolateIsRefused(_ type: StoreType) throws {
        let directory = TemporaryDirectory()
        let url = directory.file("items")
        try seed(type, at: url, names: ["a", "a", "b"])
        Migrating.expectRefusal(.migration, at: url, mentioning: ["Item.name", "uniqueness"]) {
            try Migrating.with(items([.attribute("name", .string), .attribute("count", .integer64)], unique: [["name"]]), type, at: url, options: Migrating.from(v1)) { _ in }
        }
    }

    @Test(arguments: Migrating.fileTypes)
    func aToManyBecomingToOneIsRefusedWhenAnObjectHasSeveralDestinations(_ type: StoreType) throws {
        let directory = TemporaryDirectory()
        let url = directory.file("notes")
        try NotesVersions.seedV1(type, at: url)
        // Folder.notes (to-many) becomes Folder.note (to-one, no inverse); Work has two notes.
        let note = PropertyDescription.relationship("note", destination: "Note")
        note.renamingIdentifier = "notes"
        let v2 = ManagedObjectModel(entities: [
            EntityDescription(name: "Folder", properties: [.attribute("name", .string), note]),
            EntityDescription(name: "Note", properties: [
                .attribute("title", .string, isOptional: false, defaultValue: ""), .attribute("rank", .integer16, defaultValue: Int16(0)),
                .attribute("body", .string), .attribute("obsolete", .string),
            ]),
        ])
        Migrating.expectRefusal(.migration, at: url, mentioning: ["Folder.note", "more than one"]) {
            try Migrating.with(v2, type, at: url, options: Migrating.from(NotesVersions.v1())) { _ in }
        }
    }

    @Test(arguments: Migrating.fileTypes)
    func aPropertyTurningFromAttributeToRelationshipIsRefused(_ type: StoreType) throws {
        let directory = TemporaryDirectory()
        let url = directory.file("items")
        try seed(type, at: url, names: ["a"])
        let v2 = ManagedObjectModel(entities: [
            EntityDescription(name: "Item", properties: [.relationship("name", destination: "Label"), .attribute("count", .integer64)]),
            EntityDescription(name: "Label", properties: [.attribute("text", .string)]),
        ])
        Migrating.expectRefusal(.migration, at: url, mentioning: ["Item.name", "attribute", "relationship"]) {
            try Migrating.with(v2, type, at: url, options: Migrating.from(v1)) { _ in }
        }
    }

    @Test(arguments: Migrating.fileTypes)
    func aStoreWhoseModelIsUnknownIsRefusedNamingTheFile(_ type: StoreType) throws {
        let directory = TemporaryDirectory()
        let url = directory.file("items")
        try seed(type, at: url, names: ["a"])
        try Migrating.forgetModel(type, at: url)
        Migrating.expectRefusal(.migration, at: url, mentioning: [url.path, "unknown"]) {
            try Migrating.with(items([.attribute("name", .string)]), type, at: url, options: Migrating.automatic) { _ in }
        }
    }

    @Test func errorsCarryTheEntityAndTheProperty() throws {
        do {
            _ = try MigrationMapping(
                from: items([.attribute("name", .string)]), to: items([.attribute("name", .date)]))
            Issue.record("expected a refusal")
        } catch let error as ObjectGraphError {
            #expect(error == .migration)
            #expect(error.entityName == "Item")
            #expect(error.key == "name")
        }
    }
}
