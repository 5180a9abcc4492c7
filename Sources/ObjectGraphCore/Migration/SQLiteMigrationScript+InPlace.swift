import Foundation
import GRDB

// The in-place form of a migration step: when every table of the old model stays the table of the
// new one (same names, same entity numbers, relationships stored the same way), the step alters
// the tables where they are — columns renamed (`RENAME COLUMN`), added (`ADD COLUMN`, then filled
// with the default value) and dropped (`DROP COLUMN`, SQLite 3.35) — instead of copying every row.

extension SQLiteMigrationScript {
    /// The statements of the step done in place, or nil when it needs the tables rebuilt.
    static func inPlace(
        mapping: MigrationMapping, old: CoreDataLayout, new: CoreDataLayout, state: SQLiteFileState, create: [String]
    ) -> [Statement]? {
        guard !state.sqliteVersion.lexicographicallyPrecedes([3, 35]) else { return nil }
        let q = CoreDataLayout.quote
        let newTables = Dictionary(create.compactMap(createdTable), uniquingKeysWith: { a, _ in a })
        let indexStatements = (create + new.userIndexStatements()).filter { createdIndex($0) != nil }
        var createTables: Set<String> = [], dropTables: [String] = [], managed: Set<String> = []
        var renames: [Statement] = [], drops: [Statement] = [], adds: [Statement] = [], fills: [Statement] = []

        // Entity numbers stay; an entity is removed only with its whole table.
        for entity in mapping.destination.entitiesByCode {
            if let was = mapping.source(of: entity), old.entityNumber(for: was) != new.entityNumber(for: entity) { return nil }
        }
        var removedRoots: [EntityDescription] = []
        for was in mapping.source.entitiesByCode where was.superentity == nil {
            let kept = was.selfAndDescendants.filter { mapping.destination(of: $0) != nil }
            if kept.isEmpty { removedRoots.append(was) } else if kept.count != was.selfAndDescendants.count { return nil }
        }

        for root in mapping.destination.entitiesByCode where root.superentity == nil {
            let table = new.tableName(for: root)
            managed.insert(table)
            guard let oldRoot = root.selfAndDescendants.lazy.compactMap({ mapping.source(of: $0) }).first?.rootEntity else {
                if state.columns[table] != nil { return nil }
                createTables.insert(table)
                continue
            }
            guard old.tableName(for: oldRoot) == table, let existing = state.columns[table] else { return nil }
            for was in oldRoot.selfAndDescendants {
                guard let mapped = mapping.destination(of: was), mapped.rootEntity === root else { return nil }
            }
            let shared = oldRoot.selfAndDescendants.count > 1
            var kept: Set<String> = [CoreDataLayout.primaryKeyColumn, CoreDataLayout.entityColumn, CoreDataLayout.versionColumn]
            /// Keeps the old column `name` as `newName` (renamed when they differ).
            func keep(_ name: String, as newName: String) -> Bool {
                guard existing.contains(name), !kept.contains(name) else { return false }
                if name != newName {
                    guard !existing.contains(newName) else { return false }
                    renames.append(Statement(sql: "ALTER TABLE \(q(table)) RENAME COLUMN \(q(name)) TO \(q(newName))"))
                }
                kept.insert(name)
                return true
            }
            func add(_ column: String, _ type: String) {
                adds.append(Statement(sql: "ALTER TABLE \(q(table)) ADD COLUMN \(q(column)) \(type)"))
            }
            func fill(_ column: String, with value: Value, for entity: EntityDescription, onlyNil: Bool) {
                var conditions = onlyNil ? ["\(q(column)) IS NULL"] : []
                if shared {
                    let kinds = entity.selfAndDescendants.compactMap { mapping.source(of: $0) }
                    if kinds.isEmpty { return }
                    conditions.append("Z_ENT IN (\(kinds.map { String(old.entityNumber(for: $0)) }.joined(separator: ", ")))")
                }
                let condition = conditions.isEmpty ? "" : " WHERE " + conditions.joined(separator: " AND ")
                fills.append(Statement(sql: "UPDATE \(q(table)) SET \(q(column)) = ?\(condition)", arguments: [value]))
            }
            for entity in root.selfAndDescendants {
                for property in entity.declaredProperties where !property.isTransient {
                    if let attribute = property as? AttributeDescription {
                        let column = new.columnName(for: attribute)
                        let fallback = attribute.defaultStoredValue
                        if let was = mapping.source(of: attribute) as? AttributeDescription {
                            guard CoreDataLayout.columnType(was.attributeType) == CoreDataLayout.columnType(attribute.attributeType),
                                  keep(old.columnName(for: was), as: column) else { return nil }
                            if !attribute.isOptional && !fallback.isNull { fill(column, with: fallback, for: entity, onlyNil: true) }
                        } else {
                            add(column, CoreDataLayout.columnType(attribute.attributeType))
                            if !fallback.isNull { fill(column, with: fallback, for: entity, onlyNil: false) }
                        }
                    } else if let relationship = property as? RelationshipDescription, !relationship.isToMany {
                        let column = new.columnName(for: relationship)
                        let entityColumn = new.entityColumnName(forToOne: relationship)
                        if let was = mapping.source(of: relationship) as? RelationshipDescription {
                            guard !was.isToMany, keep(old.columnName(for: was), as: column) else { return nil }
                            if let entityColumn {
                                guard let oldColumn = old.entityColumnName(forToOne: was), keep(oldColumn, as: entityColumn) else { return nil }
                            }
                        } else {
                            if let inverse = relationship.inverseRelationship, mapping.source(of: inverse) != nil { return nil }
                            add(column, "INTEGER")
                            if let entityColumn { add(entityColumn, "INTEGER") }
                        }
                    }
                }
            }
            // Hidden foreign keys and order columns of to-many relationships, kept in this table.
            for entity in mapping.destination.entitiesByCode {
                for relationship in entity.declaredProperties.compactMap({ $0 as? RelationshipDescription }) where relationship.isToMany {
                    guard case .foreignKey(let fkTable, let column, let order) = new.storage(forToMany: relationship), fkTable == table else { continue }
                    let was = mapping.source(of: relationship) as? RelationshipDescription
                    let hasData = was != nil || relationship.inverseRelationship.flatMap { mapping.source(of: $0) } != nil
                    var oldForeignKey: (column: String, order: String?)?
                    if let was, was.isToMany, was.isForeignKeyDerived == relationship.isForeignKeyDerived,
                       case .foreignKey(let t, let c, let o) = old.storage(forToMany: was), t == table {
                        oldForeignKey = (c, o)
                    }
                    if !relationship.isForeignKeyDerived {
                        if let oldForeignKey { guard keep(oldForeignKey.column, as: column) else { return nil } }
                        else if !hasData { add(column, "INTEGER") } else { return nil }
                    }
                    if let order {
                        if let oldOrder = oldForeignKey?.order { guard keep(oldOrder, as: order) else { return nil } }
                        else if !hasData { add(order, "INTEGER") } else { return nil }
                    }
                }
            }
            for column in existing where !kept.contains(column) {
                drops.append(Statement(sql: "ALTER TABLE \(q(table)) DROP COLUMN \(q(column))"))
            }
        }
        for was in removedRoots {
            let table = old.tableName(for: was)
            if state.columns[table] != nil && newTables[table] == nil { dropTables.append(table) }
        }

        // Join tables: the same ones in the same place, new ones (empty), removed ones.
        var oldJoinTables: Set<String> = []
        for entity in mapping.source.entitiesByCode {
            for relationship in entity.declaredProperties.compactMap({ $0 as? RelationshipDescription }) where relationship.isToMany {
                if case .joinTable(let table, _, _, _, _) = old.storage(forToMany: relationship) { oldJoinTables.insert(table) }
            }
        }
        var newJoinTables: Set<String> = []
        for entity in mapping.destination.entitiesByCode {
            for relationship in entity.declaredProperties.compactMap({ $0 as? RelationshipDescription }) where relationship.isToMany {
                guard case .joinTable(let table, let source, let target, _, let order) = new.storage(forToMany: relationship) else { continue }
                newJoinTables.insert(table)
                managed.insert(table)
                let hasData = mapping.source(of: relationship) != nil || relationship.inverseRelationship.flatMap { mapping.source(of: $0) } != nil
                if let existing = state.columns[table] {
                    guard Set(existing) == Set(newTables[table] ?? []), let was = mapping.source(of: relationship) as? RelationshipDescription, was.isToMany,
                          case .joinTable(let t, let s, let d, _, let o) = old.storage(forToMany: was), (t, s, d) == (table, source, target), o == order
                    else { return nil }
                } else {
                    guard !hasData else { return nil }
                    createTables.insert(table)
                }
            }
        }
        for table in oldJoinTables.sorted() where !newJoinTables.contains(table) && state.columns[table] != nil {
            dropTables.append(table)
        }

        // Indexes: those the new model does not name are dropped first (a column they cover may go).
        let indexNames = Set(indexStatements.compactMap { createdIndex($0)?.name })
        var statements: [Statement] = state.triggers.map { Statement(sql: "DROP TRIGGER IF EXISTS \(q($0))") }
        for table in managed.union(oldJoinTables).sorted() where !dropTables.contains(table) {
            for index in state.indexes[table] ?? [] where !indexNames.contains(index) {
                statements.append(Statement(sql: "DROP INDEX \(q(index))"))
            }
        }
        statements += dropTables.map { Statement(sql: "DROP TABLE \(q($0))") }
        statements += renames + drops + adds + fills
        statements += create.filter { createdTable($0).map { createTables.contains($0.name) } ?? false }.map { Statement(sql: $0) }
        statements += indexStatements.map { sql in
            for kind in ["CREATE INDEX", "CREATE UNIQUE INDEX"] where sql.hasPrefix(kind + " \"") {
                return Statement(sql: kind + " IF NOT EXISTS" + sql.dropFirst(kind.count))
            }
            return Statement(sql: sql)
        }
        return statements
    }

    /// The table a `CREATE TABLE` statement of ``CoreDataLayout`` creates, with its columns.
    static func createdTable(_ sql: String) -> (name: String, columns: [String])? {
        let prefix = "CREATE TABLE \""
        guard sql.hasPrefix(prefix) else { return nil }
        let name = String(sql.dropFirst(prefix.count).prefix { $0 != "\"" })
        guard let open = sql.firstIndex(of: "("), let close = sql.lastIndex(of: ")"), open < close else { return (name, []) }
        var parts: [String] = [], depth = 0, current = ""
        for character in sql[sql.index(after: open)..<close] {
            if character == "(" { depth += 1 } else if character == ")" { depth -= 1 }
            if character == "," && depth == 0 { parts.append(current); current = "" } else { current.append(character) }
        }
        parts.append(current)
        let columns = parts.map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty && !$0.hasPrefix("PRIMARY KEY") }.map { definition in
            definition.hasPrefix("\"") ? String(definition.dropFirst().prefix { $0 != "\"" }) : String(definition.prefix { $0 != " " })
        }
        return (name, columns)
    }

    /// The index a `CREATE [UNIQUE] INDEX` statement of ``CoreDataLayout`` creates, with its table.
    static func createdIndex(_ sql: String) -> (name: String, table: String)? {
        for prefix in ["CREATE INDEX IF NOT EXISTS \"", "CREATE INDEX \"", "CREATE UNIQUE INDEX IF NOT EXISTS \"", "CREATE UNIQUE INDEX \""]
        where sql.hasPrefix(prefix) {
            let rest = sql.dropFirst(prefix.count)
            let name = String(rest.prefix { $0 != "\"" })
            guard let on = rest.range(of: "\" ON \"") else { return nil }
            return (name, String(rest[on.upperBound...].prefix { $0 != "\"" }))
        }
        return nil
    }
}
