import Foundation

/// The rules of the relational layout every store type shares (tables by root entity, primary
/// keys, foreign keys, join tables: ``SQLiteSchema`` names them), that are not SQL.
enum RelationalLayout {
    /// The uniqueness constraints an entity's rows must satisfy: its own and its ancestors', each
    /// as (a key naming it, the entity that declared it, its attributes).
    static func uniquenessConstraints(of entity: EntityDescription) -> [(String, EntityDescription, [AttributeDescription])] {
        var result: [(String, EntityDescription, [AttributeDescription])] = []
        var current: EntityDescription? = entity
        while let e = current {
            for (n, constraint) in e.uniquenessConstraints.enumerated() {
                result.append(("\(e.name)#\(n)", e, constraint.compactMap { e.attributesByName[$0] }))
            }
            current = e.superentity
        }
        return result
    }

    /// Whether a row's values for a constraint can collide with another row's: never when one is
    /// nil or NaN, which equal nothing (in SQL as in memory).
    static func canCollide(_ values: [Value]) -> Bool {
        !values.contains { $0.isNull || $0.isNaN }
    }
}
