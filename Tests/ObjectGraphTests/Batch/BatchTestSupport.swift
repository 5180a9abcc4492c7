import Foundation
import ObjectGraph
@testable import ObjectGraphCore

enum BatchModels {
    /// Users with a unique email and a required flag without default, teams (nullify both ways),
    /// accounts whose cards forbid deleting them (deny).
    static func rules() -> ManagedObjectModel {
        ManagedObjectModel(entities: [
            EntityDescription(name: "User", properties: [
                .attribute("email", .string, isOptional: false),
                .attribute("name", .string),
                .attribute("age", .integer64, defaultValue: Int64(18)),
                .attribute("active", .boolean, isOptional: false),
                .relationship("team", destination: "Team", toMany: false, inverse: "members", deleteRule: .nullify),
            ], uniquenessConstraints: [["email"]]),
            EntityDescription(name: "Team", properties: [
                .attribute("name", .string),
                .relationship("members", destination: "User", toMany: true, inverse: "team", deleteRule: .nullify),
            ]),
            EntityDescription(name: "Account", properties: [
                .attribute("number", .string, isOptional: false, defaultValue: ""),
                .relationship("cards", destination: "Card", toMany: true, inverse: "account", deleteRule: .deny),
            ]),
            EntityDescription(name: "Card", properties: [
                .attribute("label", .string),
                .relationship("account", destination: "Account", toMany: false, inverse: "cards", deleteRule: .nullify),
            ]),
        ])
    }
}

extension TestStack {
    /// The objects of an entity as a new context reads them from the store, sorted by a key.
    func stored(_ entity: String, sortedBy key: String) throws -> [ManagedObject] {
        try context("reader").all(entity, sortedBy: key)
    }
}

extension TestStack {
    /// The optimistic-locking version of an object's row, read from the store (not the row cache).
    func storedVersion(of id: ManagedObjectID) throws -> Int64? {
        try store.backend.snapshots(for: [id], store: store)[id]?.version
    }
}
