import Foundation

/// The rules of the relational layout every store type shares (rows by root entity, primary keys,
/// foreign keys, pairs for many-to-many relationships), that are not SQL. ``CoreDataLayout`` gives
/// them Core Data's table and column names; the in-memory and atomic stores use them as they are.
enum RelationalLayout {
    /// How a to-many relationship's destinations are found, whatever the store.
    enum ToMany: Equatable {
        /// Through the inverse to-one's foreign key in the destinations' rows.
        case inverseForeignKey
        /// Through a set of pairs that both sides of a many-to-many (or the one side of a to-many
        /// without an inverse) share: `key` names the set, and `isForward` says whether this side
        /// reads its pairs from source to destination.
        case pairs(key: String, isForward: Bool)
    }

    /// How a to-many relationship is stored.
    static func toMany(_ relationship: RelationshipDescription) -> ToMany {
        if relationship.isForeignKeyDerived { return .inverseForeignKey }
        let me = "\(relationship.entity?.name ?? "")_\(relationship.name)"
        guard let inverse = relationship.inverseRelationship else { return .pairs(key: me, isForward: true) }
        let other = "\(inverse.entity?.name ?? "")_\(inverse.name)"
        return .pairs(key: min(me, other), isForward: me <= other)
    }

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
