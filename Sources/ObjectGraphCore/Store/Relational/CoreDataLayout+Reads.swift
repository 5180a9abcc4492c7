import Foundation

// Queries both SQL stores read with, written once in the store's dialect.

extension CoreDataLayout {
    /// The query that reads the destinations of a to-many relationship for `count` source keys,
    /// bound in order: rows of (source key, destination key, destination's `Z_ENT`), by source,
    /// in the relationship's order (or by key).
    ///
    /// Core Data's join tables hold no entity numbers: where the destination has sub-entities they
    /// are read from the destinations' table.
    ///
    /// - Parameter table: a table's name as statements write it, from its unquoted name.
    func destinationsQuery(of relationship: RelationshipDescription, count: Int, dialect: SQLDialect, table: (String) -> String) -> String? {
        guard let destination = relationship.destinationEntity else { return nil }
        let marks = dialect.placeholders(count)
        let (pk, ent) = (dialect.keyColumnName(Self.primaryKeyColumn), dialect.keyColumnName(Self.entityColumn))
        switch storage(forToMany: relationship) {
        case .foreignKey(let name, let column, let orderColumn):
            let column = Self.quote(column)
            let order = orderColumn.map { ", \(Self.quote($0))" } ?? ", \(pk)"
            return "SELECT \(column), \(pk), \(ent) FROM \(table(name)) WHERE \(column) IN (\(marks)) ORDER BY \(column)\(order)"
        case .joinTable(let name, let sourceColumn, let destinationColumn, _, let orderColumn):
            let (source, target) = (Self.quote(sourceColumn), Self.quote(destinationColumn))
            let order = orderColumn.map { ", j.\(Self.quote($0))" } ?? ", j.\(target)"
            if destination.subentities.isEmpty {
                return "SELECT j.\(source), j.\(target), \(entityNumber(for: destination)) FROM \(table(name)) AS j WHERE j.\(source) IN (\(marks)) ORDER BY j.\(source)\(order)"
            }
            return """
                SELECT j.\(source), j.\(target), d.\(ent) FROM \(table(name)) AS j \
                JOIN \(table(tableName(for: destination))) AS d ON d.\(pk) = j.\(target) \
                WHERE j.\(source) IN (\(marks)) ORDER BY j.\(source)\(order)
                """
        }
    }
}
