import Foundation
import Testing
import ObjectGraph
@testable import ObjectGraphCore

@Suite("The model")
struct ModelTests {
    @Test func validationRulesThatCouldNeverBeCheckedAreRefused() throws {
        let model = ManagedObjectModel(entities: [
            EntityDescription(name: "Account", properties: [
                .attribute("name", .string, regularExpression: "[a-z"),
                .attribute("age", .integer16, minimum: "zero", maximum: Int64(150)),
                .attribute("joined", .date, maximum: "tomorrow"),
                .attribute("code", .string, regularExpression: "[A-Z]{3}"),
            ])
        ])
        let error = try #require(throws: ObjectGraphError.self) { try model.validate() }
        #expect(error.code == .invalidModel)
        let messages = error.underlyingErrors.map(\.message)
        #expect(messages.count == 3, "\(messages)")
        #expect(messages.contains { $0.contains("Account.name") && $0.contains("\"[a-z\" is not a regular expression") })
        #expect(messages.contains { $0.contains("Account.age") && $0.contains("minimum zero is not a value of its type, integer16") })
        #expect(messages.contains { $0.contains("Account.joined") && $0.contains("maximum tomorrow") })
        #expect(error.underlyingErrors.allSatisfy { $0.entityName == "Account" && $0.key != nil })
    }

    @Test func resolvesDestinationsAndInversesWhenBuilt() throws {
        let model = TestModels.notes()
        try model.validate()
        let note = try #require(model.entitiesByName["Note"])
        let folder = try #require(note.relationshipsByName["folder"])
        #expect(folder.destinationEntity === model.entitiesByName["Folder"])
        #expect(folder.inverseRelationship?.name == "notes")
        #expect(folder.isToMany == false)
        #expect(folder.deleteRule == .nullify)
        #expect(note.attributesByName["title"]?.attributeType == .string)
        #expect(note.attributesByName["title"]?.isOptional == false)
        #expect(note.attributesByName["rank"]?.defaultValue as? Int64 == 0)
        #expect(model.entitiesByName["Folder"]?.relationshipsByName["notes"]?.deleteRule == .cascade)
    }

    @Test func refusesADanglingDestinationNamingIt() {
        let model = ManagedObjectModel(entities: [
            EntityDescription(name: "A", properties: [.relationship("b", destination: "Missing")]),
        ])
        #expect(throws: ObjectGraphError.invalidModel) { try model.validate() }
        #expect(model.validationErrors.first?.message.contains("Missing") == true)
        #expect(model.validationErrors.first?.message.contains("A.b") == true)
    }

    @Test func refusesADanglingInverseNamingIt() {
        let model = ManagedObjectModel(entities: [
            EntityDescription(name: "A", properties: [.relationship("b", destination: "B", inverse: "nope")]),
            EntityDescription(name: "B", properties: []),
        ])
        #expect(model.validationErrors.count == 1)
        #expect(model.validationErrors[0].message.contains("nope"))
    }

    @Test func refusesDuplicateEntityAndPropertyNames() {
        let model = ManagedObjectModel(entities: [
            EntityDescription(name: "A", properties: [.attribute("x", .string), .attribute("x", .integer16)]),
            EntityDescription(name: "A", properties: []),
        ])
        let messages = model.validationErrors.map(\.message).joined(separator: "\n")
        #expect(messages.contains("Duplicate entity name 'A'"))
        #expect(messages.contains("'x'"))
        #expect(throws: ObjectGraphError.invalidModel) { try ManagedObjectModel(validating: model.entities) }
    }

    /// Found by the xcode-model fuzz target: an entity whose parent entity is itself made building
    /// the model recurse until the stack overflowed. Each cycle is refused, naming the entity where
    /// it was cut, and the model is still built, its entities each with one root.
    @Test(arguments: [["A": "A"], ["A": "B", "B": "A"], ["C": "A", "A": "B", "B": "A"], ["A": "B", "B": "C", "C": "A", "D": "C"]])
    func refusesAnInheritanceCycleWithoutStopping(_ parents: [String: String]) throws {
        let names = Set(parents.keys).union(parents.values).sorted()
        let model = ManagedObjectModel(entities: names.map { name in
            EntityDescription(name: name, superentity: parents[name], properties: [.attribute("x\(name)", .string)])
        })
        let cycles = model.validationErrors.filter { $0.message.contains("inheritance cycle") }
        #expect(cycles.count == 1, "\(model.validationErrors)")
        #expect(throws: ObjectGraphError.invalidModel) { try model.validate() }
        for entity in model.entities {
            // The tree left is a tree: walking up ends, walking down ends, and both agree.
            var up: [String] = [entity.name]
            var next = entity.superentity
            while let e = next, up.count <= names.count { up.append(e.name); next = e.superentity }
            #expect(up.count <= names.count, "\(entity.name): \(up)")
            #expect(entity.rootEntity.name == up.last)
            #expect(!entity.subentities.contains { $0 === entity })
            for sub in entity.subentities { #expect(sub.superentity === entity) }
        }
        #expect(model.entityVersionHashesByName.count == names.count)
    }

    @Test func addingAStoreWithAnInvalidModelThrows() {
        let model = ManagedObjectModel(entities: [EntityDescription(name: "A", properties: [.relationship("b", destination: "Nope")])])
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        #expect(throws: ObjectGraphError.invalidModel) { try coordinator.addPersistentStore(type: .inMemory, at: nil) }
    }

    @Test func versionHashIsStableAndFollowsStorageChanges() {
        #expect(TestModels.notes().versionHash == TestModels.notes().versionHash)
        let other = ManagedObjectModel(entities: [EntityDescription(name: "Folder", properties: [.attribute("name", .string)])])
        #expect(other.versionHash != TestModels.notes().versionHash)
    }

    @Test func subentitiesInheritPropertiesWithStableIndices() throws {
        let model = ManagedObjectModel(entities: [
            EntityDescription(name: "Shape", isAbstract: true, properties: [.attribute("name", .string)]),
            EntityDescription(name: "Circle", superentity: "Shape", properties: [.attribute("radius", .double)]),
            EntityDescription(name: "Square", superentity: "Shape", properties: [.attribute("side", .double)]),
        ])
        try model.validate()
        let circle = try #require(model.entitiesByName["Circle"])
        #expect(circle.superentity?.name == "Shape")
        #expect(circle.properties.map(\.name) == ["name", "radius"])
        #expect(model.entitiesByName["Shape"]?.subentities.map(\.name).sorted() == ["Circle", "Square"])
        #expect(circle.isKindOf(entity: model.entitiesByName["Shape"]!))
    }

    @Test func anInverseDeclaredOnOneSideLinksBothSides() throws {
        let model = ManagedObjectModel(entities: [
            EntityDescription(name: "A", properties: [.relationship("bs", destination: "B", toMany: true, inverse: "a")]),
            EntityDescription(name: "B", properties: [.relationship("a", destination: "A")]),
        ])
        try model.validate()
        #expect(model.entitiesByName["B"]?.relationshipsByName["a"]?.inverseRelationship?.name == "bs")
    }
}
