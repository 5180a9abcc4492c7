import Foundation
import GRDB

/// What `objectgraph verify` found in an SQLite store: SQLite's own integrity check, then the
/// invariants of Core Data's layout that SQLite does not enforce (it has no foreign keys there).
package struct StoreVerification: Sendable, Codable {
    /// One broken invariant: where, what, and how many rows.
    package struct Problem: Sendable, Codable, CustomStringConvertible {
        package var check: String
        package var table: String
        package var detail: String
        package var rows: Int

        package var description: String { "\(table): \(detail) (\(rows) row\(rows == 1 ? "" : "s"))" }
    }

    /// SQLite's `PRAGMA integrity_check` ("ok", or what it found).
    package var integrity: String
    /// The checks run, in order.
    package var checks: [String] = []
    package var problems: [Problem] = []

    package var isValid: Bool { integrity == "ok" && problems.isEmpty }
}

extension SQLiteStore {
    /// Checks the store: `PRAGMA integrity_check`, then, for every table of the model, that
    /// optimistic-lock versions are positive, `Z_ENT` names an entity of the table, `Z_PRIMARYKEY`'s
    /// `Z_MAX` is at or above every key, every to-one points at a row of its destination, and every
    /// join-table row at rows of both sides. Reads only.
    ///
    /// - Parameter progress: called with (checks done, checks in all) as it goes.
    /// - Throws: ``ObjectGraphError`` when the file cannot be opened or read with the model.
    static func verify(at url: URL, model: ManagedObjectModel, progress: (Int, Int) -> Void = { _, _ in }) throws -> StoreVerification {
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        let store = try coordinator.addPersistentStore(type: .sqlite, at: url, options: [PersistentStoreOption.readOnly: true])
        defer { try? coordinator.removePersistentStore(store) }
        guard let backend = store.backend as? SQLiteStore else {
            throw ObjectGraphError(.unsupported, "The store at \(url.path) is not an SQLite store", url: url)
        }
        return try backend.verify(progress: progress)
    }

    private func verify(progress: (Int, Int) -> Void) throws -> StoreVerification {
        // The checks, each a query counting offending rows.
        var checks: [(check: String, table: String, detail: String, sql: String)] = []
        let q = CoreDataLayout.quote
        let keys = Dictionary(uniqueKeysWithValues: schema.primaryKeyRows().map { ($0.0, $0.1) })
        for root in schema.model.entities where root.superentity == nil {
            let table = schema.tableName(for: root)
            let numbers = root.selfAndDescendants.map { String(schema.entityNumber(for: $0)) }.joined(separator: ", ")
            checks.append(("versions", table, "Z_OPT missing or below 1", "SELECT COUNT(*) FROM \(q(table)) WHERE Z_OPT IS NULL OR Z_OPT < 1"))
            checks.append(("entities", table, "Z_ENT is not \(root.name) or one of its sub-entities (\(numbers))",
                           "SELECT COUNT(*) FROM \(q(table)) WHERE Z_ENT NOT IN (\(numbers)) OR Z_ENT IS NULL"))
            if keys[schema.entityNumber(for: root)] != nil {
                checks.append(("keys", table, "Z_PK above Z_PRIMARYKEY.Z_MAX of \(root.name) (new objects would reuse keys)", """
                    SELECT COUNT(*) FROM \(q(table)) WHERE Z_PK > (SELECT Z_MAX FROM Z_PRIMARYKEY WHERE Z_ENT = \(schema.entityNumber(for: root)))
                    """))
            }
            for entity in root.selfAndDescendants {
                for relationship in entity.relationships where !relationship.isToMany {
                    guard let destination = relationship.destinationEntity else { continue }
                    let column = schema.columnName(for: relationship)
                    let target = schema.tableName(for: destination)
                    checks.append(("to-one", table, "\(entity.name).\(relationship.name) (\(column)) points at no row of \(target)", """
                        SELECT COUNT(*) FROM \(q(table)) s WHERE s.\(q(column)) IS NOT NULL \
                        AND NOT EXISTS (SELECT 1 FROM \(q(target)) d WHERE d.Z_PK = s.\(q(column)))
                        """))
                }
                for relationship in entity.relationships where relationship.isToMany {
                    guard case .joinTable(let join, let sourceColumn, let destinationColumn, _, _) = schema.storage(forToMany: relationship),
                          let destination = relationship.destinationEntity else { continue }
                    // Each many-to-many once: from the side whose join column comes first.
                    if let other = relationship.inverseRelationship?.entity?.rootEntity.name, other < root.name { continue }
                    let target = schema.tableName(for: destination)
                    checks.append(("join", join, "rows of \(entity.name).\(relationship.name) whose \(sourceColumn) points at no row of \(table)", """
                        SELECT COUNT(*) FROM \(q(join)) j WHERE NOT EXISTS (SELECT 1 FROM \(q(table)) s WHERE s.Z_PK = j.\(q(sourceColumn)))
                        """))
                    checks.append(("join", join, "rows of \(entity.name).\(relationship.name) whose \(destinationColumn) points at no row of \(target)", """
                        SELECT COUNT(*) FROM \(q(join)) j WHERE NOT EXISTS (SELECT 1 FROM \(q(target)) d WHERE d.Z_PK = j.\(q(destinationColumn)))
                        """))
                }
            }
        }
        // Sub-entities inherit their parents' relationships: each check once.
        var seen = Set<String>()
        checks = checks.filter { seen.insert($0.sql).inserted }
        let total = checks.count + 1
        progress(0, total)
        return try read("verifying the store") { db in
            var result = StoreVerification(integrity: "")
            result.checks.append("integrity")
            result.integrity = try String.fetchAll(db, sql: "PRAGMA integrity_check").joined(separator: "; ")
            progress(1, total)
            for (i, check) in checks.enumerated() {
                result.checks.append("\(check.check) \(check.table)")
                let rows = try Int.fetchOne(db, sql: check.sql) ?? 0
                if rows > 0 { result.problems.append(.init(check: check.check, table: check.table, detail: check.detail, rows: rows)) }
                progress(i + 2, total)
            }
            return result
        }
    }
}
