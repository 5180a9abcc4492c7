import Foundation
import GRDB

/// How a model is laid out in the tables of a relational store: Core Data's own layout, so a
/// SQLite store Apple's Core Data wrote opens here and a store written here opens in Core Data.
/// The PostgreSQL store uses the same tables and names, written in its dialect (``SQLDialect``).
///
/// - One table `Z<ROOT>` per root entity (sub-entities share it, told apart by `Z_ENT`), with
///   `Z_PK` (the primary key), `Z_ENT` (the entity number) and `Z_OPT` (the optimistic-lock version).
/// - A column `Z<ATTRIBUTE>` per stored attribute, `Z<RELATIONSHIP>` per to-one (the destination's
///   `Z_PK`), and `Z<n>_<RELATIONSHIP>` beside it (the destination's `Z_ENT`) when the destination
///   has sub-entities; a name already used in the table gets a number (`ZNAME1`).
/// - A to-many whose inverse is to-one is read through that foreign key; a to-many without an
///   inverse through a hidden foreign key `Z<n><RELATIONSHIP>` in the destination's table; a
///   many-to-many through a join table `Z_<n><RELATIONSHIP>` whose columns `Z_<n><RELATIONSHIP>`
///   are unique across join tables (`Z_3ARTWORKS1`). Ordered relationships keep positions in
///   `Z_FOK_` columns.
/// - Entity numbers are those of the store's `Z_PRIMARYKEY` when it exists; a new store numbers
///   entities as Core Data does: roots in name order, each followed by its sub-entities, depth first.
struct CoreDataLayout: Sendable {
    static let primaryKeyColumn = "Z_PK"
    static let entityColumn = "Z_ENT"
    static let versionColumn = "Z_OPT"
    static let metadataTable = "Z_METADATA"
    static let primaryKeyTable = "Z_PRIMARYKEY"
    static let modelCacheTable = "Z_MODELCACHE"

    /// How a to-many relationship's destinations are found.
    enum ToManyStorage: Sendable, Equatable {
        /// The destinations are the rows of `table` whose `column` holds the source's primary key;
        /// `orderColumn` holds the position of each in an ordered relationship. `column` is the
        /// inverse to-one's column, or a hidden one for a to-many without an inverse.
        case foreignKey(table: String, column: String, orderColumn: String?)
        /// The pairs are rows of a join table. `sourceColumn` holds the source's primary key,
        /// `destinationColumn` the destination's, and `orderColumn` the destination's position for
        /// an ordered relationship. Core Data's join tables hold no entity numbers:
        /// `destinationEntityColumn` is always nil, and a destination's entity is read from its table.
        case joinTable(table: String, sourceColumn: String, destinationColumn: String,
                       destinationEntityColumn: String?, orderColumn: String?)
    }

    let model: ManagedObjectModel
    /// `Z_ENT` of each entity, by entity code.
    private let numbers: [Int]
    /// Entities by `Z_ENT` (nil where no entity of the model has that number).
    private let entitiesByNumber: [EntityDescription?]
    private let columns: [ObjectIdentifier: String]
    private let toOneEntityColumns: [ObjectIdentifier: String]
    private let toManyStorage: [ObjectIdentifier: ToManyStorage]
    /// Per root table: the hidden foreign keys and order columns other relationships keep in it.
    private let extraColumns: [String: [String]]
    /// The join tables, each with its two columns (first is the primary key's first) and order columns.
    private let joinTables: [(table: String, first: String, second: String, orders: [String])]

    /// The layout of a new store: Core Data's entity numbers and names.
    init(model: ManagedObjectModel) {
        self.init(model: model, entityNumbers: Self.coreDataEntityNumbers(for: model), existingColumns: nil)
    }

    /// The layout of a store whose `Z_PRIMARYKEY` gave `entityNumbers` (by entity name) and whose
    /// tables have `existingColumns` (by table name, in order): join tables and their columns are
    /// taken from the file where the names Core Data chose differ from the ones derived here.
    init(model: ManagedObjectModel, entityNumbers byName: [String: Int], existingColumns: [String: [String]]?) {
        self.model = model
        let numbers = Self.numbers(of: model, byName: byName)
        self.numbers = numbers
        var byNumber = [EntityDescription?](repeating: nil, count: (numbers.max() ?? 0) + 1)
        for (code, n) in numbers.enumerated() { byNumber[n] = model.entitiesByCode[code] }
        self.entitiesByNumber = byNumber
        var naming = Naming(model: model, numbers: numbers)
        naming.nameColumns()
        naming.nameForeignKeyToMany()
        naming.nameJoinTables(existingColumns: existingColumns)
        self.columns = naming.columns
        self.toOneEntityColumns = naming.toOneEntityColumns
        self.toManyStorage = naming.toMany
        self.extraColumns = naming.extra
        self.joinTables = naming.joins
    }

    /// Each entity's `Z_ENT`, by entity code: the store's number for it (by name, or by the name
    /// it had), Core Data's numbering for a new store, or a fresh number.
    private static func numbers(of model: ManagedObjectModel, byName: [String: Int]) -> [Int] {
        let fallback = coreDataEntityNumbers(for: model)
        var numbers: [Int] = []
        var used = Set(byName.values)
        for entity in model.entitiesByCode {
            if let n = byName[entity.name] ?? entity.renamingIdentifier.flatMap({ byName[$0] }) {
                // By name, or by the name it had (Core Data keeps Z_NAME when a migration renames an entity).
                numbers.append(n)
            } else if byName.isEmpty, let n = fallback[entity.name] {
                numbers.append(n)
            } else {
                // An entity the store does not number (it cannot be when the hashes matched) gets a fresh number.
                let n = (used.max() ?? 0) + 1
                used.insert(n)
                numbers.append(n)
            }
        }
        return numbers
    }

    /// Core Data's numbering of a new store's entities: roots in name order, each followed by its
    /// sub-entities (in name order, depth first), from 1.
    static func coreDataEntityNumbers(for model: ManagedObjectModel) -> [String: Int] {
        var result: [String: Int] = [:]
        func visit(_ entity: EntityDescription) {
            result[entity.name] = result.count + 1
            for sub in entity.subentities.sorted(by: { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) }) { visit(sub) }
        }
        for root in model.entitiesByCode.filter({ $0.superentity == nil })
            .sorted(by: { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) }) { visit(root) }
        return result
    }

    /// Quotes an identifier for SQL.
    static func quote(_ identifier: String) -> String {
        "\"" + identifier.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    static func tableName(_ root: EntityDescription) -> String { "Z" + root.name.uppercased() }

    /// The `Z_ENT` numbers a model's entities can have. Core Data numbers a model's entities from 1, and
    /// keeps numbers from 16000 up for entities of its own (persistent history's are 16001 to 16003).
    static let modelEntityNumbers = 1..<16000

    /// The model entities' numbers by name, from the (`Z_ENT`, `Z_NAME`) rows of the `Z_PRIMARYKEY` of the
    /// store at `url`. Rows of Core Data's own entities (numbered 16000 and up) are left out. A number below 1,
    /// a number given to two names or a name given two numbers is damage: the file is refused as
    /// `.notADatabase`, naming the row (a schema is sized by its largest number, so none can be trusted).
    static func entityNumbers(primaryKeyRows rows: [(number: Int64, name: String)], store url: URL) throws -> [String: Int] {
        var numbers: [String: Int] = [:]
        var names: [Int64: String] = [:]
        for (number, name) in rows where number < modelEntityNumbers.upperBound {
            func damaged(_ problem: String) -> ObjectGraphError {
                ObjectGraphError(
                    .notADatabase,
                    "The store at \(url.path) is damaged: its \(primaryKeyTable) \(problem); it was left as it was",
                    entityName: name, url: url)
            }
            guard number >= modelEntityNumbers.lowerBound else {
                throw damaged("numbers entity '\(name)' \(number) (Core Data numbers a model's entities from 1)")
            }
            if let other = names[number], other != name {
                throw damaged("gives entities '\(other)' and '\(name)' one number, \(number)")
            }
            if let other = numbers[name], other != Int(number) {
                throw damaged("gives entity '\(name)' two numbers, \(other) and \(number)")
            }
            names[number] = name
            numbers[name] = Int(number)
        }
        return numbers
    }

    /// The entity's `Z_ENT` in this store.
    func entityNumber(for entity: EntityDescription) -> Int { numbers[entity.entityCode] }

    /// The entity whose `Z_ENT` is `number` in this store, if any.
    func entity(forNumber number: Int) -> EntityDescription? {
        number >= 0 && number < entitiesByNumber.count ? entitiesByNumber[number] : nil
    }

    /// The entity of a relationship's destination whose stored `Z_ENT` is `number`: the entity with that
    /// number when it is `destination` or one of its sub-entities, and otherwise (no number, a number the
    /// model lacks, or a damaged row naming an entity of another kind) `destination` itself, the only
    /// entity the relationship can hold. An ID of another kind would be read with the wrong properties.
    func destinationEntity(forNumber number: Int?, of destination: EntityDescription) -> EntityDescription {
        guard let number, let entity = entity(forNumber: number), entity.isKindOf(entity: destination) else { return destination }
        return entity
    }

    /// The (unquoted) name of the table that holds the entity's rows: `Z` and its root entity's name.
    func tableName(for entity: EntityDescription) -> String { Self.tableName(entity.rootEntity) }

    /// The (unquoted) column of a stored attribute or a to-one relationship (which holds the
    /// destination's primary key).
    func columnName(for property: PropertyDescription) -> String {
        columns[ObjectIdentifier(property)] ?? "Z" + property.name.uppercased()
    }

    /// For a to-one relationship whose destination has sub-entities, the column holding the
    /// destination's entity number (`Z<n>_<RELATIONSHIP>`).
    func entityColumnName(forToOne relationship: RelationshipDescription) -> String? {
        toOneEntityColumns[ObjectIdentifier(relationship)]
    }

    /// How a to-many relationship is stored.
    func storage(forToMany relationship: RelationshipDescription) -> ToManyStorage {
        toManyStorage[ObjectIdentifier(relationship)]!
    }

    /// The SQL condition restricting the root table (aliased `alias`) to the entity (and its
    /// sub-entities when `includesSubentities`), or nil when every row qualifies; `Z_ENT` written
    /// as `dialect` writes it.
    func entityRestriction(for entity: EntityDescription, includesSubentities: Bool, alias: String, _ dialect: SQLDialect = .sqlite) -> String? {
        if entity.superentity == nil && includesSubentities { return nil }
        if entity.superentity == nil && entity.subentities.isEmpty { return nil }
        let codes = (includesSubentities ? entity.selfAndDescendants : [entity]).map(entityNumber(for:))
        let column = "\(alias).\(dialect.keyColumnName(Self.entityColumn))"
        if codes.count == 1 { return "\(column) = \(codes[0])" }
        return "\(column) IN (\(codes.map(String.init).joined(separator: ",")))"
    }

    /// Core Data's column type for an attribute type (SQLite's).
    static func columnType(_ type: AttributeType) -> String {
        switch type {
        case .integer16, .integer32, .integer64, .boolean: "INTEGER"
        case .double, .float: "FLOAT"
        case .date: "TIMESTAMP"
        case .decimal: "DECIMAL"
        case .string, .uri: "VARCHAR"
        case .binaryData, .uuid, .transformable: "BLOB"
        }
    }

    /// The `Z_PRIMARYKEY` rows of a new store: (Z_ENT, Z_NAME, Z_SUPER).
    func primaryKeyRows() -> [(Int, String, Int)] {
        model.entitiesByCode.map { entity in
            (entityNumber(for: entity), entity.name, entity.superentity.map(entityNumber(for:)) ?? 0)
        }.sorted { $0.0 < $1.0 }
    }

    // MARK: - DDL

    /// The indexes users declared (indexed attributes, fetch indexes). Created with `IF NOT EXISTS`
    /// each time a store opens, so adding an index does not make a store incompatible.
    func userIndexStatements(_ dialect: SQLDialect = .sqlite) -> [String] {
        var statements: [String] = []
        var names: Set<String> = []
        for entity in model.entitiesByCode {
            let table = tableName(for: entity)
            var indexes = entity.declaredProperties.compactMap { $0 as? AttributeDescription }
                .filter { $0.isIndexed && !$0.isTransient }.map { [$0 as PropertyDescription] }
            indexes += entity.indexes.map { $0.compactMap { entity.propertiesByName[$0] } }.filter { !$0.isEmpty }
            for properties in indexes {
                // Core Data's names: Z_<Entity>_<property>[_<property>...], columns in binary collation.
                let name = "Z_\(entity.name)_" + properties.map(\.name).joined(separator: "_")
                guard names.insert(name).inserted else { continue }
                let list = properties.map { "\(Self.quote(columnName(for: $0)))\(dialect.binaryCollation($0)) ASC" }
                statements.append("CREATE INDEX IF NOT EXISTS \(Self.quote(name)) ON \(Self.quote(table)) (\(list.joined(separator: ", ")))")
            }
        }
        return statements
    }

    /// Core Data's UNIQUE index for each uniqueness constraint of the entities stored in `root`'s
    /// table: `Z_<Entity>_UNIQUE_<attribute>[_<attribute>...]`, columns in binary collation (a
    /// partial index, over the entity's rows, for a sub-entity's constraint on inherited attributes). The
    /// save path checks constraints first, to report a conflict with the object that holds the
    /// values; an insert or update the index refuses is reported the same way.
    func uniquenessIndexStatements(root: EntityDescription, _ dialect: SQLDialect = .sqlite) -> [String] {
        uniquenessIndexes(root: root, dialect).map(\.statement)
    }

    /// The names of the UNIQUE indexes of every table (``uniquenessIndexStatements(root:_:)``).
    var uniquenessIndexNames: [String] {
        model.entitiesByCode.filter { $0.superentity == nil }.flatMap { uniquenessIndexes(root: $0, .sqlite).map(\.name) }
    }

    private func uniquenessIndexes(root: EntityDescription, _ dialect: SQLDialect) -> [(name: String, statement: String)] {
        let table = tableName(for: root)
        var statements: [(name: String, statement: String)] = []
        for entity in root.selfAndDescendants.sorted(by: { entityNumber(for: $0) < entityNumber(for: $1) }) {
            for constraint in entity.uniquenessConstraints {
                let attributes = constraint.compactMap { entity.attributesByName[$0] }.filter { !$0.isTransient }
                guard !attributes.isEmpty else { continue }
                let name = "Z_\(entity.name)_UNIQUE_" + attributes.map(\.name).joined(separator: "_")
                let list = attributes.map { "\(Self.quote(columnName(for: $0)))\(dialect.binaryCollation($0)) ASC" }
                // A sub-entity's constraint on an attribute it inherits must not bind the other rows
                // of the table, which hold that column too: the index covers its own rows only.
                let inherited = entity.superentity != nil && attributes.contains { $0.entity !== entity }
                let rows = inherited ? " WHERE \(dialect.keyColumnName(Self.entityColumn)) IN (\(entity.selfAndDescendants.map { String(entityNumber(for: $0)) }.joined(separator: ",")))" : ""
                statements.append((name, "CREATE UNIQUE INDEX \(Self.quote(name)) ON \(Self.quote(table)) (\(list.joined(separator: ", ")))\(rows)"))
            }
        }
        return statements
    }

    /// The statements that create the entity and join tables in an empty database (`Z_PRIMARYKEY`
    /// and `Z_METADATA` are the store's: see ``SQLiteStore``).
    func createStatements(_ dialect: SQLDialect = .sqlite) -> [String] {
        var statements: [String] = []
        for root in model.entitiesByCode.filter({ $0.superentity == nil }).sorted(by: { entityNumber(for: $0) < entityNumber(for: $1) }) {
            let table = tableName(for: root)
            var definitions = [
                "\(dialect.keyColumnName(Self.primaryKeyColumn)) \(dialect.integer) PRIMARY KEY",
                "\(dialect.keyColumnName(Self.entityColumn)) \(dialect.integer)",
                "\(dialect.keyColumnName(Self.versionColumn)) \(dialect.integer)",
            ]
            var indexes: [String] = []
            for entity in root.selfAndDescendants.sorted(by: { entityNumber(for: $0) < entityNumber(for: $1) }) {
                for property in entity.declaredProperties {
                    if let attribute = property as? AttributeDescription, !attribute.isTransient {
                        definitions.append("\(Self.quote(columnName(for: attribute))) \(dialect.columnType(attribute.attributeType))")
                    } else if let relationship = property as? RelationshipDescription, !relationship.isToMany {
                        let column = columnName(for: relationship)
                        definitions.append("\(Self.quote(column)) \(dialect.integer)")
                        if let entityColumn = entityColumnName(forToOne: relationship) {
                            definitions.append("\(Self.quote(entityColumn)) \(dialect.integer)")
                        }
                        indexes.append(column)
                    }
                }
            }
            for column in extraColumns[table] ?? [] {
                definitions.append("\(Self.quote(column)) \(dialect.integer)")
                if !column.hasPrefix("Z_FOK_") { indexes.append(column) }
            }
            statements.append("CREATE TABLE \(Self.quote(table)) ( \(definitions.joined(separator: ", ")) )")
            for column in indexes {
                statements.append("CREATE INDEX \(Self.quote("\(table)_\(column)_INDEX")) ON \(Self.quote(table)) (\(Self.quote(column)))")
            }
            if !root.subentities.isEmpty {
                statements.append("CREATE INDEX \(Self.quote("\(table)_Z_ENT_INDEX")) ON \(Self.quote(table)) (\(dialect.keyColumnName(Self.entityColumn)))")
            }
            statements += uniquenessIndexStatements(root: root, dialect)
        }
        for join in joinTables {
            let orders = join.orders.map { ", \(Self.quote($0)) \(dialect.integer)" }.joined()
            statements.append("""
                CREATE TABLE \(Self.quote(join.table)) ( \(Self.quote(join.first)) \(dialect.integer), \(Self.quote(join.second)) \(dialect.integer)\(orders), \
                PRIMARY KEY (\(Self.quote(join.first)), \(Self.quote(join.second))) )
                """)
            statements.append("""
                CREATE INDEX \(Self.quote("\(join.table)_\(join.second)_INDEX")) ON \(Self.quote(join.table)) \
                (\(Self.quote(join.second)), \(Self.quote(join.first)))
                """)
        }
        return statements
    }
}
