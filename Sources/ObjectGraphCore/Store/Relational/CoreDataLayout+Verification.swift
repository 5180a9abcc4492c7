import Foundation

/// What `objectgraph verify` found in a store: the database's own integrity check (SQLite's; a
/// PostgreSQL server keeps its own pages), then the invariants of Core Data's layout that the
/// database does not enforce (the layout has no foreign keys).
package struct StoreVerification: Sendable, Codable {
    /// One broken invariant: where, what, and how many rows.
    package struct Problem: Sendable, Codable, CustomStringConvertible {
        package var check: String
        package var table: String
        package var detail: String
        package var rows: Int

        package var description: String { "\(table): \(detail) (\(rows) row\(rows == 1 ? "" : "s"))" }
    }

    /// What ``integrity`` says of a PostgreSQL store: the tool runs no check of the server's pages.
    package static let integrityOfTheServer = "not checked here (PostgreSQL checks its own pages)"

    /// SQLite's `PRAGMA integrity_check` ("ok", or what it found), or ``integrityOfTheServer``.
    package var integrity: String
    /// The checks run, in order.
    package var checks: [String] = []
    package var problems: [Problem] = []

    package var isValid: Bool { (integrity == "ok" || integrity == Self.integrityOfTheServer) && problems.isEmpty }
}

/// One invariant of the layout: a query counting the rows that break it.
struct VerificationCheck {
    var check: String
    var table: String
    var detail: String
    var sql: String
}

extension CoreDataLayout {
    /// The invariants of the layout, for every table of the model: optimistic-lock versions are
    /// positive, `Z_ENT` names an entity of the table, `Z_PRIMARYKEY`'s `Z_MAX` is at or above
    /// every key, every to-one points at a row of its destination, and every join-table row at
    /// rows of both sides. Each is one query counting the rows that break it, in SQL both dialects
    /// read (every name quoted).
    ///
    /// - Parameters:
    ///   - primaryKeyTable: `Z_PRIMARYKEY`, quoted (and qualified by its schema, on PostgreSQL).
    ///   - table: a table's name quoted (and qualified).
    func verificationChecks(primaryKeyTable: String, table: (String) -> String) -> [VerificationCheck] {
        var checks: [VerificationCheck] = []
        let q = CoreDataLayout.quote
        let keys = Set(primaryKeyRows().map(\.0))
        for root in model.entities where root.superentity == nil {
            let name = tableName(for: root)
            let quoted = table(name)
            let numbers = root.selfAndDescendants.map { String(entityNumber(for: $0)) }.joined(separator: ", ")
            checks.append(.init(check: "versions", table: name, detail: "Z_OPT missing or below 1",
                                sql: "SELECT COUNT(*) FROM \(quoted) WHERE \(q("Z_OPT")) IS NULL OR \(q("Z_OPT")) < 1"))
            checks.append(.init(check: "entities", table: name, detail: "Z_ENT is not \(root.name) or one of its sub-entities (\(numbers))",
                                sql: "SELECT COUNT(*) FROM \(quoted) WHERE \(q("Z_ENT")) NOT IN (\(numbers)) OR \(q("Z_ENT")) IS NULL"))
            if keys.contains(entityNumber(for: root)) {
                checks.append(.init(check: "keys", table: name, detail: "Z_PK above Z_PRIMARYKEY.Z_MAX of \(root.name) (new objects would reuse keys)", sql: """
                    SELECT COUNT(*) FROM \(quoted) WHERE \(q("Z_PK")) > (SELECT \(q("Z_MAX")) FROM \(primaryKeyTable) WHERE \(q("Z_ENT")) = \(entityNumber(for: root)))
                    """))
            }
            for entity in root.selfAndDescendants {
                for relationship in entity.relationships where !relationship.isToMany {
                    guard let destination = relationship.destinationEntity else { continue }
                    let column = columnName(for: relationship)
                    let target = tableName(for: destination)
                    checks.append(.init(check: "to-one", table: name, detail: "\(entity.name).\(relationship.name) (\(column)) points at no row of \(target)", sql: """
                        SELECT COUNT(*) FROM \(quoted) s WHERE s.\(q(column)) IS NOT NULL \
                        AND NOT EXISTS (SELECT 1 FROM \(table(target)) d WHERE d.\(q("Z_PK")) = s.\(q(column)))
                        """))
                }
                for relationship in entity.relationships where relationship.isToMany {
                    guard case .joinTable(let join, let sourceColumn, let destinationColumn, _, _) = storage(forToMany: relationship),
                          let destination = relationship.destinationEntity else { continue }
                    // Each many-to-many once: from the side whose join column comes first.
                    if let other = relationship.inverseRelationship?.entity?.rootEntity.name, other < root.name { continue }
                    let target = tableName(for: destination)
                    checks.append(.init(check: "join", table: join, detail: "rows of \(entity.name).\(relationship.name) whose \(sourceColumn) points at no row of \(name)", sql: """
                        SELECT COUNT(*) FROM \(table(join)) j WHERE NOT EXISTS (SELECT 1 FROM \(quoted) s WHERE s.\(q("Z_PK")) = j.\(q(sourceColumn)))
                        """))
                    checks.append(.init(check: "join", table: join, detail: "rows of \(entity.name).\(relationship.name) whose \(destinationColumn) points at no row of \(target)", sql: """
                        SELECT COUNT(*) FROM \(table(join)) j WHERE NOT EXISTS (SELECT 1 FROM \(table(target)) d WHERE d.\(q("Z_PK")) = j.\(q(destinationColumn)))
                        """))
                }
            }
        }
        // Sub-entities inherit their parents' relationships: each check once.
        var seen = Set<String>()
        return checks.filter { seen.insert($0.sql).inserted }
    }
}
