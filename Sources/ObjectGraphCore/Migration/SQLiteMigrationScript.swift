import Foundation
import GRDB

/// What an SQLite store file holds that a migration step reads, read inside the migration's
/// transaction (or, for the steps of a dry run after the first, what the step before leaves).
struct SQLiteFileState: Sendable {
    /// `Z_PRIMARYKEY`: `Z_ENT` by `Z_NAME`, and `Z_MAX` by `Z_ENT`.
    var entityNumbers: [String: Int] = [:]
    var maxKeys: [Int: Int64] = [:]
    /// Every table's columns, in order.
    var columns: [String: [String]] = [:]
    /// Triggers (Core Data's derived attributes keep theirs): dropped, they name the old tables.
    var triggers: [String] = []
    /// The decoded `Z_PLIST`.
    var metadata: [String: any Sendable] = [:]
    /// The indexes of each table (those SQLite did not make itself), by table.
    var indexes: [String: [String]] = [:]
    /// `sqlite_version()`, as numbers: `ALTER TABLE … DROP COLUMN` needs 3.35.
    var sqliteVersion: [Int] = []

    static let historyTables = ["ATRANSACTION", "ACHANGE", "ATRANSACTIONSTRING"]

    /// Reads the state of the database `db`, inside the migration's transaction.
    static func read(_ db: Database, url: URL) throws -> SQLiteFileState {
        try read(url: url) { sql in
            try Row.fetchAll(db, sql: sql).map { row in
                row.databaseValues.map { value -> Value in
                    switch value.storage {
                    case .null: .null
                    case .int64(let v): .int(v)
                    case .double(let v): .double(v)
                    case .string(let v): .string(v)
                    case .blob(let v): .data(v)
                    }
                }
            }
        }
    }

    /// Reads the state of the store at `url` through a read-only connection (a dry run).
    static func read(storeAt url: URL) throws -> SQLiteFileState {
        try SQLiteStore.withReadOnlyConnection(to: url) { rows in try read(url: url, rows: rows) }
    }

    private static func read(url: URL, rows: (String) throws -> [[Value]]) throws -> SQLiteFileState {
        func text(_ value: Value) -> String? { if case .string(let s) = value { s } else { nil } }
        func int(_ value: Value) -> Int64? { if case .int(let v) = value { v } else { nil } }
        var state = SQLiteFileState()
        let tables = try rows("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'").compactMap { text($0[0]) }
        for table in tables {
            state.columns[table] = try rows("SELECT name FROM pragma_table_info(\(Value.quoteLiteral(table)))").compactMap { text($0[0]) }
        }
        if let history = tables.first(where: historyTables.contains) {
            throw ObjectGraphError(
                .migration,
                "Cannot migrate the store at \(url.path): it records Core Data's persistent history (\(history)), which ObjectGraph does not migrate; the store was left as it was",
                url: url)
        }
        state.triggers = try rows("SELECT name FROM sqlite_master WHERE type = 'trigger'").compactMap { text($0[0]) }
        for row in try rows("SELECT name, tbl_name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL") {
            if let name = text(row[0]), let table = text(row[1]) { state.indexes[table, default: []].append(name) }
        }
        state.sqliteVersion = (try rows("SELECT sqlite_version()").first.flatMap { text($0[0]) } ?? "").split(separator: ".").compactMap { Int($0) }
        if tables.contains(CoreDataLayout.primaryKeyTable) {
            var entities: [(number: Int64, name: String)] = []
            for row in try rows("SELECT Z_ENT, Z_NAME, Z_MAX FROM \(CoreDataLayout.primaryKeyTable)") {
                guard let number = int(row[0]) else { continue }
                if let name = text(row[1]) { entities.append((number, name)) }
                state.maxKeys[Int(number)] = int(row[2]) ?? 0
            }
            state.entityNumbers = try CoreDataLayout.entityNumbers(primaryKeyRows: entities, store: url)
        }
        if tables.contains(CoreDataLayout.metadataTable),
           case .data(let plist)? = try rows("SELECT Z_PLIST FROM \(CoreDataLayout.metadataTable) ORDER BY Z_VERSION LIMIT 1").first?.first,
           let metadata = CoreDataMetadata.decode(plist) {
            state.metadata = metadata
        }
        return state
    }

    /// The state a migration to `schema` leaves (for planning the steps after it without running it).
    static func after(_ schema: CoreDataLayout, state before: SQLiteFileState) -> SQLiteFileState {
        var state = SQLiteFileState()
        for (number, name, _) in schema.primaryKeyRows() { state.entityNumbers[name] = number }
        for statement in schema.createStatements() + schema.userIndexStatements() {
            if let (table, columns) = SQLiteMigrationScript.createdTable(statement) { state.columns[table] = columns }
            if let (index, table) = SQLiteMigrationScript.createdIndex(statement) { state.indexes[table, default: []].append(index) }
        }
        state.metadata = before.metadata
        state.sqliteVersion = before.sqliteVersion
        return state
    }
}

/// The SQL of one lightweight migration step on an SQLite store in Core Data's layout.
///
/// Every table the old model's entities and many-to-many relationships use is renamed aside,
/// the new model's tables are created (Core Data's entity numbers for the new model, so `Z_ENT`
/// values and join-table names follow the new model), the rows are copied with one
/// `INSERT … SELECT` per table (renamed properties read their old column, widened numbers are
/// cast, a new required attribute gets its default, relationships whose shape changed are
/// rebuilt from the old pairs), the old tables are dropped, the indexes created, and
/// `Z_PRIMARYKEY` and the metadata rewritten. The store's UUID is kept.
struct SQLiteMigrationScript: Sendable {
    struct Statement: Sendable {
        var sql: String
        var arguments: [Value] = []

        /// The statement prepared, its arguments bound as a fetch binds them.
        func prepared(in db: Database) throws -> GRDB.Statement {
            try db.makeStatement(sql: sql, arguments: arguments)
        }
    }

    /// Queries whose result (a count) must be 0, each with the condition it checks.
    var checks: [(check: MigrationMapping.DataCheck, statement: Statement)] = []
    /// The statements of the step, in order.
    var statements: [Statement] = []

    static let asidePrefix = "ZMIGRATING_"

    init(mapping: MigrationMapping, state: SQLiteFileState) {
        let old = CoreDataLayout(model: mapping.source, entityNumbers: state.entityNumbers, existingColumns: state.columns.isEmpty ? nil : state.columns)
        let new = CoreDataLayout(model: mapping.destination)
        let q = CoreDataLayout.quote
        let aside = Self.asidePrefix
        func numbers(_ entities: [EntityDescription], _ schema: CoreDataLayout) -> String {
            entities.map { String(schema.entityNumber(for: $0)) }.joined(separator: ", ")
        }
        /// The (source key, destination key, position) pairs of an old relationship, from the old tables.
        func pairs(_ relationship: RelationshipDescription, prefix: String) -> String {
            guard let entity = relationship.entity, let destination = relationship.destinationEntity else { return "SELECT NULL AS s, NULL AS d, NULL AS o WHERE 0" }
            if !relationship.isToMany {
                let column = q(old.columnName(for: relationship))
                var sql = "SELECT Z_PK AS s, \(column) AS d, NULL AS o FROM \(q(prefix + old.tableName(for: entity))) WHERE \(column) IS NOT NULL"
                if entity.rootEntity.selfAndDescendants.count > 1 { sql += " AND Z_ENT IN (\(numbers(entity.selfAndDescendants, old)))" }
                return sql
            }
            switch old.storage(forToMany: relationship) {
            case .foreignKey(let table, let column, let order):
                var sql = "SELECT \(q(column)) AS s, Z_PK AS d, \(order.map(q) ?? "NULL") AS o FROM \(q(prefix + table)) WHERE \(q(column)) IS NOT NULL"
                if destination.rootEntity.selfAndDescendants.count > 1 { sql += " AND Z_ENT IN (\(numbers(destination.selfAndDescendants, old)))" }
                return sql
            case .joinTable(let table, let source, let target, _, let order):
                return "SELECT \(q(source)) AS s, \(q(target)) AS d, \(order.map(q) ?? "NULL") AS o FROM \(q(prefix + table))"
            }
        }
        /// The pairs of a new relationship, in its direction, from the old relationship or the old inverse.
        func newPairs(_ relationship: RelationshipDescription, prefix: String) -> String? {
            if let was = mapping.source(of: relationship) as? RelationshipDescription { return pairs(was, prefix: prefix) }
            if let inverse = relationship.inverseRelationship, let was = mapping.source(of: inverse) as? RelationshipDescription {
                return "SELECT p.d AS s, p.s AS d, NULL AS o FROM (\(pairs(was, prefix: prefix))) AS p"
            }
            return nil
        }

        // Checks, on the old tables.
        for check in mapping.checks {
            let sql: String
            switch check {
            case .noRows(let entities, _, _):
                sql = "SELECT COUNT(*) FROM \(q(old.tableName(for: entities[0]))) WHERE Z_ENT IN (\(numbers(entities, old)))"
            case .noNils(let entities, let attribute, _, _):
                sql = "SELECT COUNT(*) FROM \(q(old.tableName(for: entities[0]))) WHERE Z_ENT IN (\(numbers(entities, old))) AND \(q(old.columnName(for: attribute))) IS NULL"
            case .unique(let entities, let attributes, _, _):
                let table = "\(q(old.tableName(for: entities[0]))) WHERE Z_ENT IN (\(numbers(entities, old)))"
                sql = attributes.isEmpty
                    ? "SELECT COUNT(*) > 1 FROM \(table)"
                    : "SELECT COUNT(*) FROM (SELECT 1 FROM \(table) GROUP BY \(attributes.map { q(old.columnName(for: $0)) }.joined(separator: ", ")) HAVING COUNT(*) > 1)"
            case .atMostOne(let relationship, _, _):
                sql = "SELECT COUNT(*) FROM (SELECT s FROM (\(pairs(relationship, prefix: ""))) GROUP BY s HAVING COUNT(*) > 1)"
            }
            checks.append((check, Statement(sql: sql)))
        }

        let create = new.createStatements()
        if let inPlace = Self.inPlace(mapping: mapping, old: old, new: new, state: state, create: create) {
            // The tables stay where they are: columns renamed, added and dropped.
            statements += inPlace
        } else {
            // The old tables, set aside.
            var oldTables: [String] = []
            for root in mapping.source.entitiesByCode where root.superentity == nil {
                oldTables.append(old.tableName(for: root))
            }
            for entity in mapping.source.entitiesByCode {
                for relationship in entity.declaredProperties.compactMap({ $0 as? RelationshipDescription }) where relationship.isToMany {
                    if case .joinTable(let table, _, _, _, _) = old.storage(forToMany: relationship), !oldTables.contains(table) { oldTables.append(table) }
                }
            }
            oldTables = oldTables.filter { state.columns[$0] != nil }
            for trigger in state.triggers { statements.append(Statement(sql: "DROP TRIGGER IF EXISTS \(q(trigger))")) }
            for table in oldTables { statements.append(Statement(sql: "ALTER TABLE \(q(table)) RENAME TO \(q(aside + table))")) }
            statements += create.filter { $0.hasPrefix("CREATE TABLE") }.map { Statement(sql: $0) }

            // Entity tables: one INSERT … SELECT each.
            for root in mapping.destination.entitiesByCode where root.superentity == nil {
                let mapped = root.selfAndDescendants.filter { mapping.source(of: $0) != nil }
                guard let oldRoot = mapped.first.flatMap({ mapping.source(of: $0)?.rootEntity }),
                      oldTables.contains(old.tableName(for: oldRoot)) else { continue }
                let table = new.tableName(for: root)
                let shared = root.selfAndDescendants.count > 1 || oldRoot.selfAndDescendants.count > 1
                var columns = ["Z_PK", "Z_ENT", "Z_OPT"]
                var expressions = [
                    "o.Z_PK",
                    "CASE o.Z_ENT " + mapped.map { "WHEN \(old.entityNumber(for: mapping.source(of: $0)!)) THEN \(new.entityNumber(for: $0))" }.joined(separator: " ") + " END",
                    "o.Z_OPT",
                ]
                var arguments: [Value] = []
                func add(_ column: String, _ expression: String, _ values: [Value] = []) {
                    guard !columns.contains(column) else { return }
                    columns.append(column)
                    expressions.append(expression)
                    arguments += values
                }
                for entity in root.selfAndDescendants {
                    let kinds = entity.selfAndDescendants.compactMap { mapping.source(of: $0) }
                    func onlyFor(_ expression: String) -> String {
                        shared && !kinds.isEmpty ? "CASE WHEN o.Z_ENT IN (\(numbers(kinds, old))) THEN \(expression) END" : expression
                    }
                    for property in entity.declaredProperties where !property.isTransient {
                        if let attribute = property as? AttributeDescription {
                            let column = new.columnName(for: attribute)
                            let fallback = attribute.defaultStoredValue
                            if let was = mapping.source(of: attribute) as? AttributeDescription {
                                var expression = "o.\(q(old.columnName(for: was)))"
                                if [.integer16, .integer32, .integer64].contains(was.attributeType) && [.double, .float].contains(attribute.attributeType) {
                                    expression = "CAST(\(expression) AS REAL)"
                                }
                                if !attribute.isOptional && !fallback.isNull {
                                    add(column, onlyFor("COALESCE(\(expression), ?)"), [fallback])
                                } else {
                                    add(column, expression)
                                }
                            } else if !fallback.isNull && !kinds.isEmpty {
                                add(column, onlyFor("?"), [fallback])
                            }
                        } else if let relationship = property as? RelationshipDescription, !relationship.isToMany {
                            let column = new.columnName(for: relationship)
                            if let was = mapping.source(of: relationship) as? RelationshipDescription, !was.isToMany {
                                add(column, "o.\(q(old.columnName(for: was)))")
                            } else if let sql = newPairs(relationship, prefix: aside) {
                                add(column, onlyFor("(SELECT p.d FROM (\(sql)) AS p WHERE p.s = o.Z_PK LIMIT 1)"))
                            }
                        }
                    }
                }
                // Hidden foreign keys and order columns other entities' to-many relationships keep in this table.
                for entity in mapping.destination.entitiesByCode {
                    for relationship in entity.declaredProperties.compactMap({ $0 as? RelationshipDescription }) where relationship.isToMany {
                        guard case .foreignKey(let fkTable, let column, let order) = new.storage(forToMany: relationship), fkTable == table else { continue }
                        let was = mapping.source(of: relationship) as? RelationshipDescription
                        var oldForeignKey: (column: String, order: String?)?
                        if let was, was.isToMany, case .foreignKey(let t, let c, let o) = old.storage(forToMany: was), t == old.tableName(for: oldRoot) {
                            oldForeignKey = (c, o)
                        }
                        if !relationship.isForeignKeyDerived {
                            if let oldForeignKey, !(was?.isForeignKeyDerived ?? true) {
                                add(column, "o.\(q(oldForeignKey.column))")
                            } else if let sql = newPairs(relationship, prefix: aside) {
                                add(column, "(SELECT p.s FROM (\(sql)) AS p WHERE p.d = o.Z_PK LIMIT 1)")
                            }
                        }
                        if let order {
                            add(order, oldForeignKey?.order.map { "o.\(q($0))" } ?? "o.Z_PK")
                        }
                    }
                }
                statements.append(Statement(
                    sql: "INSERT INTO \(q(table)) (\(columns.map(q).joined(separator: ", "))) SELECT \(expressions.joined(separator: ", ")) FROM \(q(aside + old.tableName(for: oldRoot))) AS o WHERE o.Z_ENT IN (\(numbers(mapped.compactMap { mapping.source(of: $0) }, old)))",
                    arguments: arguments))
            }

            // Join tables, from the old pairs of either side, keeping pairs whose two objects remain.
            var filled: Set<String> = []
            for entity in mapping.destination.entitiesByCode {
                for relationship in entity.declaredProperties.compactMap({ $0 as? RelationshipDescription }) where relationship.isToMany {
                    guard case .joinTable(let table, let source, let target, _, let order) = new.storage(forToMany: relationship),
                          !filled.contains(table), let sql = newPairs(relationship, prefix: aside),
                          let destination = relationship.destinationEntity else { continue }
                    filled.insert(table)
                    let columns = [source, target] + (order.map { [$0] } ?? [])
                    let values = ["p.s", "p.d"] + (order != nil ? ["COALESCE(p.o, p.d)"] : [])
                    statements.append(Statement(sql: """
                        INSERT OR IGNORE INTO \(q(table)) (\(columns.map(q).joined(separator: ", "))) SELECT \(values.joined(separator: ", ")) FROM (\(sql)) AS p \
                        WHERE p.s IN (SELECT Z_PK FROM \(q(new.tableName(for: entity))) WHERE Z_ENT IN (\(numbers(entity.selfAndDescendants, new)))) \
                        AND p.d IN (SELECT Z_PK FROM \(q(new.tableName(for: destination))) WHERE Z_ENT IN (\(numbers(destination.selfAndDescendants, new))))
                        """))
                }
            }
            // When entities were removed with their rows, references to those rows are cleared (a
            // to-one's key, a to-many's hidden key), so no object points at an object that is gone.
            if mapping.source.entitiesByCode.contains(where: { mapping.destination(of: $0) == nil }) {
                for entity in mapping.destination.entitiesByCode {
                    for relationship in entity.declaredProperties.compactMap({ $0 as? RelationshipDescription }) {
                        guard let destination = relationship.destinationEntity else { continue }
                        let (table, column, target): (String, String, EntityDescription)
                        if !relationship.isToMany {
                            (table, column, target) = (new.tableName(for: entity), new.columnName(for: relationship), destination)
                        } else if !relationship.isForeignKeyDerived, case .foreignKey(let t, let c, _) = new.storage(forToMany: relationship) {
                            (table, column, target) = (t, c, entity)
                        } else {
                            continue
                        }
                        statements.append(Statement(sql: """
                            UPDATE \(q(table)) SET \(q(column)) = NULL WHERE \(q(column)) IS NOT NULL AND \(q(column)) NOT IN \
                            (SELECT Z_PK FROM \(q(new.tableName(for: target))) WHERE Z_ENT IN (\(numbers(target.selfAndDescendants, new))))
                            """))
                    }
                }
            }
            // Entity columns of to-ones whose destination has sub-entities, from the destinations' rows.
            for entity in mapping.destination.entitiesByCode {
                for relationship in entity.declaredProperties.compactMap({ $0 as? RelationshipDescription }) where !relationship.isToMany {
                    guard let entityColumn = new.entityColumnName(forToOne: relationship), let destination = relationship.destinationEntity else { continue }
                    let table = q(new.tableName(for: entity)), column = q(new.columnName(for: relationship))
                    statements.append(Statement(sql: """
                        UPDATE \(table) SET \(q(entityColumn)) = (SELECT d.Z_ENT FROM \(q(new.tableName(for: destination))) AS d WHERE d.Z_PK = \(table).\(column)) \
                        WHERE \(column) IS NOT NULL
                        """))
                }
            }
            for table in oldTables { statements.append(Statement(sql: "DROP TABLE \(q(aside + table))")) }
            statements += create.filter { !$0.hasPrefix("CREATE TABLE") }.map { Statement(sql: $0) }
            statements += new.userIndexStatements().map { Statement(sql: $0) }
        }

        // Z_PRIMARYKEY: the new entity numbers; a root's Z_MAX is at least the old one and the largest key.
        statements.append(Statement(sql: "DELETE FROM \(CoreDataLayout.primaryKeyTable)"))
        for (number, name, superentity) in new.primaryKeyRows() {
            guard let entity = mapping.destination.entitiesByName[name] else { continue }
            if entity.superentity == nil {
                let oldMax = mapping.source(of: entity).flatMap { state.maxKeys[old.entityNumber(for: $0)] } ?? 0
                statements.append(Statement(
                    sql: "INSERT INTO \(CoreDataLayout.primaryKeyTable) (Z_ENT, Z_NAME, Z_SUPER, Z_MAX) VALUES (?, ?, ?, MAX(?, (SELECT IFNULL(MAX(Z_PK), 0) FROM \(q(new.tableName(for: entity))))))",
                    arguments: [.int(Int64(number)), .string(name), .int(Int64(superentity)), .int(Int64(max(oldMax, 0)))]))
            } else {
                statements.append(Statement(
                    sql: "INSERT INTO \(CoreDataLayout.primaryKeyTable) (Z_ENT, Z_NAME, Z_SUPER, Z_MAX) VALUES (?, ?, ?, 0)",
                    arguments: [.int(Int64(number)), .string(name), .int(Int64(superentity))]))
            }
        }
        // The metadata: the new model's hashes and checksum over the old keys (the UUID stays).
        var metadata = state.metadata
        for (key, value) in CoreDataMetadata.new(model: mapping.destination) { metadata[key] = value }
        let plist = (try? CoreDataMetadata.encode(metadata)) ?? Data()
        statements.append(Statement(
            sql: "UPDATE \(CoreDataLayout.metadataTable) SET Z_PLIST = ? WHERE Z_VERSION = (SELECT MIN(Z_VERSION) FROM \(CoreDataLayout.metadataTable))",
            arguments: [.data(plist)]))
        // The store records its new model, as Core Data caches it (the table is created for a
        // store written before stores recorded their model).
        if state.columns[CoreDataLayout.modelCacheTable] == nil {
            statements.append(Statement(sql: "CREATE TABLE \(CoreDataLayout.modelCacheTable) (Z_CONTENT BLOB)"))
        } else {
            statements.append(Statement(sql: "DELETE FROM \(CoreDataLayout.modelCacheTable)"))
        }
        if let cache = try? CompiledModelWriter.modelCacheContent(mapping.destination) {
            statements.append(Statement(
                sql: "INSERT INTO \(CoreDataLayout.modelCacheTable) (Z_CONTENT) VALUES (?)", arguments: [.data(cache)]))
        }
    }

    /// Runs the checks, then the statements, in `db` (inside the caller's transaction).
    ///
    /// - Throws: ``ObjectGraphError/migration`` for a failed check (nothing of this step was written).
    func run(in db: Database, url: URL, progress: (_ completed: Int, _ total: Int, _ statement: String) -> Void = { _, _, _ in }) throws {
        for (check, statement) in checks {
            let count = try Int.fetchOne(statement.prepared(in: db)) ?? 0
            if count > 0 { throw check.failure(count: count, url: url) }
        }
        for (i, statement) in statements.enumerated() {
            try statement.prepared(in: db).execute()
            progress(i + 1, statements.count, statement.sql)
        }
    }

    /// The step's SQL as text, for plans (arguments shown after the statements that take them).
    var text: String {
        (checks.map { "-- must be 0: \($0.statement.sql)" } + statements.map { statement in
            statement.arguments.isEmpty ? statement.sql + ";" : statement.sql + "; -- arguments: \(statement.arguments.map(\.databaseValue.description).joined(separator: ", "))"
        }).joined(separator: "\n")
    }
}
