import Foundation
import Testing

import ObjectGraph
@testable import ObjectGraphCore

@Managed final class RenamedMemo: ManagedObject {
    @Attribute(originalName: "name") var title: String = ""
    var body: String = ""
}

@Suite("Renaming identifiers")
struct RenamingIdentifierTests {
    @Test("@Attribute(originalName:) sets the attribute's renaming identifier")
    func macroSetsRenamingIdentifier() throws {
        let model = ManagedObjectModel(types: [RenamedMemo.self])
        let memo = try #require(model.entitiesByName["RenamedMemo"])
        #expect(memo.attributesByName["title"]?.renamingIdentifier == "name")
        #expect(memo.attributesByName["body"]?.renamingIdentifier == nil)
    }

    @Test("renaming identifiers set before the model is built survive the copy a second model makes")
    func survivesCopy() throws {
        let title = PropertyDescription.attribute("title", .string)
        title.renamingIdentifier = "name"
        let entity = EntityDescription(name: "Memo", properties: [title])
        entity.renamingIdentifier = "Note"
        entity.versionHashModifier = "2"
        let first = ManagedObjectModel(entities: [entity])
        let second = ManagedObjectModel(entities: [entity])
        let copy = try #require(second.entitiesByName["Memo"])
        #expect(copy !== entity)
        #expect(copy.renamingIdentifier == "Note" && copy.versionHashModifier == "2")
        #expect(copy.attributesByName["title"]?.renamingIdentifier == "name")
        #expect(first.entityVersionHashesByName == second.entityVersionHashesByName)
    }
}
