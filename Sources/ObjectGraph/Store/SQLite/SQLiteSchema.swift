import Foundation
import GRDB

/// How a model is laid out in SQLite: one table per root entity (sub-entities share it, told apart
/// by the entity column), an integer primary key, a version column for optimistic locking, one
/// column per stored attribute, a foreign-key column per to-one relationship, a join table per
/// to-many relationship whose inverse is not to-one, and an index on every foreign key.
struct SQLiteSchema: Sendable {
    static let primaryKeyColumn = "Z_PK"
    static let entityColumn = "Z_ENT"
    static let versionColumn = "Z_OPT"
    static let metadataTable = "Z_METADATA"
    static let primaryKeyTable = "Z_PRIMARYKEY"

    /// How a to-many relationship's destinations are found.
    enum ToManyStorage: Sendable, Equatable {
        /// The destinations are the rows of `table` whose `column` holds the source's primary key;
        /// `orderColumn` holds the position of each in an ordered relationship.
        case foreignKey(table: String, column: String, orderColumn: String?)
        /// The pairs are rows of a join table. `sourceColumn` holds the source's primary key,
        /// `destinationColumn` the destination's, `destinationEntityColumn` the destination's entity
        /// code, and `orderColumn` the destination's position for an ordered relationship.
        case joinTable(table: String, sourceColumn: String, destinationColumn: String,
                       destinationEntityColumn: String, orderColumn: String?)
    }

    let model: ManagedObjectModel
    private let columns: [ObjectIdentifier: String]
    private let toOneEntityColumns: [ObjectIdentifier: String]
    private let toManyStorage: [ObjectIdentifier: ToManyStorage]

    init(model: ManagedObjectModel) {
        self.model = model
        var columns: [ObjectIdentifier: String] = [:]
        var toOneEntityColumns: [ObjectIdentifier: String] = [:]
        var toMany: [ObjectIdentifier: ToManyStorage] = [:]
        for root in model.entitiesByCode where root.superentity == nil {
            // Every property stored in the root's table, across the inheritance tree.
            var declared: [(EntityDescription, PropertyDescription)] = []
            for entity in root.selfAndDescendants {
                for property in entity.declaredProperties {
                    if let attribute = property as? AttributeDescription, !attribute.isTransient {
                        declared.append((entity, property))
                    } else if let relationship = property as? RelationshipDescription, !relationship.isToMany {
                        declared.append((entity, property))
                    }
                }
            }
            var counts: [String: Int] = [:]
            for (_, property) in declared { counts[property.name.lowercased(), default: 0] += 1 }
            for (entity, property) in declared {
                let unique = counts[property.name.lowercased()] == 1 && !Self.isReserved(property.name)
                let name = unique ? property.name : "\(property.name)_\(entity.name)"
                columns[ObjectIdentifier(property)] = name
                if let relationship = property as? RelationshipDescription,
                   let destination = relationship.destinationEntity, !destination.rootEntity.subentities.isEmpty {
                    toOneEntityColumns[ObjectIdentifier(property)] = name + "_ENT"
                }
            }
        }
        for entity in model.entitiesByCode {
            for relationship in entity.declaredProperties.compactMap({ $0 as? RelationshipDescription }) where relationship.isToMany {
                guard let destination = relationship.destinationEntity else { continue }
                if let inverse = relationship.inverseRelationship, !inverse.isToMany {
                    let column = columns[ObjectIdentifier(inverse)] ?? inverse.name
                    toMany[ObjectIdentifier(relationship)] = .foreignKey(
                        table: destination.rootEntity.name, column: column,
                        orderColumn: relationship.isOrdered ? column + "_ORDER" : nil)
                } else {
                    // A many-to-many pair shares one join table, named after the side whose
                    // "Entity.relationship" sorts first; each side reads it in its own direction.
                    let me = "\(entity.name)_\(relationship.name)"
                    let other = relationship.inverseRelationship.map { "\($0.entity?.name ?? "")_\($0.name)" }
                    let primary = other.map { min(me, $0) } ?? me
                    let isPrimary = primary == me
                    toMany[ObjectIdentifier(relationship)] = .joinTable(
                        table: "Z_" + primary,
                        sourceColumn: isPrimary ? "Z_SRC" : "Z_DST",
                        destinationColumn: isPrimary ? "Z_DST" : "Z_SRC",
                        destinationEntityColumn: isPrimary ? "Z_DST_ENT" : "Z_SRC_ENT",
                        orderColumn: relationship.isOrdered ? (isPrimary ? "Z_DST_ORDER" : "Z_SRC_ORDER") : nil)
                }
            }
        }
        self.columns = columns
        self.toOneEntityColumns = toOneEntityColumns
        self.toManyStorage = toMany
    }

    private static func isReserved(_ name: String) -> Bool {
        name.uppercased().hasPrefix("Z_")
    }

    /// Quotes an identifier for SQL.
    static func quote(_ identifier: String) -> String {
        "\"" + identifier.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    /// The (unquoted) name of the table that holds the entity's rows: its root entity's name.
    func tableName(for entity: EntityDescription) -> String { entity.rootEntity.name }

    /// The (unquoted) column of a stored attribute or a to-one relationship (which holds the
    /// destination's primary key).
    func columnName(for property: PropertyDescription) -> String {
        columns[ObjectIdentifier(property)] ?? property.name
    }

    /// For a to-one relationship whose destination has sub-entities, the column holding the
    /// destination's entity code.
    func entityColumnName(forToOne relationship: RelationshipDescription) -> String? {
        toOneEntityColumns[ObjectIdentifier(relationship)]
    }

    /// How a to-many relationship is stored.
    func storage(forToMany relationship: RelationshipDescription) -> ToManyStorage {
        toManyStorage[ObjectIdentifier(relationship)]!
    }

    /// The SQL condition restricting the root table (aliased `alias`) to the entity (and its
    /// sub-entities when `includesSubentities`), or nil when every row qualifies.
    func entityRestriction(for entity: EntityDescription, includesSubentities: Bool, alias: String) -> String? {
        let codes = includesSubentities ? entity.selfAndDescendants.map(\.entityCode) : [entity.entityCode]
        if entity.superentity == nil && includesSubentities { return nil }
        if entity.superentity == nil && entity.subentities.isEmpty { return nil }
        if codes.count == 1 { return "\(alias).\(Self.entityColumn) = \(codes[0])" }
        return "\(alias).\(Self.entityColumn) IN (\(codes.map(String.init).joined(separator: ",")))"
    }

    static func columnType(_ type: AttributeType) -> String {
        switch type {
        case .integer16, .integer32, .integer64, .boolean: "INTEGER"
        case .double, .float, .date: "REAL"
        case .string, .uri, .decimal: "TEXT"
        case .binaryData, .uuid, .transformable: "BLOB"
        }
    }

    // MARK: - DDL

    /// The indexes users declared (indexed attributes, entity indexes). Created with `IF NOT EXISTS`
    /// each time a store opens, so adding an index does not make a store incompatible.
    func userIndexStatements() -> [String] {
        var statements: [String] = []
        for entity in model.entitiesByCode {
            let table = Self.quote(entity.rootEntity.name)
            for attribute in entity.declaredProperties.compactMap({ $0 as? AttributeDescription }) where attribute.isIndexed && !attribute.isTransient {
                let column = columnName(for: attribute)
                statements.append("CREATE INDEX IF NOT EXISTS \(Self.quote("\(entity.name)_\(column)_IDX")) ON \(table) (\(Self.quote(column)))")
            }
            for (n, index) in entity.indexes.enumerated() {
                let columns = index.compactMap { entity.propertiesByName[$0] }.map { Self.quote(columnName(for: $0)) }
                guard !columns.isEmpty else { continue }
                statements.append("CREATE INDEX IF NOT EXISTS \(Self.quote("\(entity.name)_INDEX_\(n)")) ON \(table) (\(columns.joined(separator: ", ")))")
            }
        }
        return statements
    }

    /// The statements that create the schema in an empty database.
    func createStatements() -> [String] {
        var statements: [String] = []
        var joinTables: Set<String> = []
        for root in model.entitiesByCode where root.superentity == nil {
            var definitions = [
                "\(Self.primaryKeyColumn) INTEGER PRIMARY KEY",
                "\(Self.entityColumn) INTEGER NOT NULL",
                "\(Self.versionColumn) INTEGER NOT NULL",
            ]
            var indexes: [String] = []
            for entity in root.selfAndDescendants {
                for property in entity.declaredProperties {
                    if let attribute = property as? AttributeDescription, !attribute.isTransient {
                        definitions.append("\(Self.quote(columnName(for: attribute))) \(Self.columnType(attribute.attributeType))")
                    } else if let relationship = property as? RelationshipDescription, !relationship.isToMany {
                        let column = columnName(for: relationship)
                        definitions.append("\(Self.quote(column)) INTEGER")
                        if let entityColumn = entityColumnName(forToOne: relationship) {
                            definitions.append("\(Self.quote(entityColumn)) INTEGER")
                        }
                        indexes.append(column)
                    }
                }
            }
            // Order columns of ordered to-many relationships stored through this table's foreign keys.
            for entity in model.entitiesByCode {
                for relationship in entity.declaredProperties.compactMap({ $0 as? RelationshipDescription }) where relationship.isToMany {
                    if case .foreignKey(let table, _, let orderColumn?) = storage(forToMany: relationship), table == root.name {
                        definitions.append("\(Self.quote(orderColumn)) INTEGER")
                    }
                }
            }
            statements.append("CREATE TABLE \(Self.quote(root.name)) (\(definitions.joined(separator: ", ")))")
            for column in indexes {
                statements.append(
                    "CREATE INDEX \(Self.quote("\(root.name)_\(column)_INDEX")) ON \(Self.quote(root.name)) (\(Self.quote(column)))")
            }
            for entity in root.selfAndDescendants {
                for (n, constraint) in entity.uniquenessConstraints.enumerated() {
                    // Enforced by the save path (to report constraint conflicts as such); the index speeds the check.
                    let cols = constraint.compactMap { entity.attributesByName[$0] }.map { Self.quote(columnName(for: $0)) }
                    statements.append(
                        "CREATE INDEX \(Self.quote("\(entity.name)_UNIQUE_\(n)")) ON \(Self.quote(root.name)) (\(cols.joined(separator: ", ")))")
                }
            }
        }
        for entity in model.entitiesByCode {
            for relationship in entity.declaredProperties.compactMap({ $0 as? RelationshipDescription }) where relationship.isToMany {
                guard case .joinTable(let table, _, _, _, _) = storage(forToMany: relationship), joinTables.insert(table).inserted else { continue }
                statements.append("""
                    CREATE TABLE \(Self.quote(table)) (Z_SRC INTEGER NOT NULL, Z_SRC_ENT INTEGER NOT NULL, \
                    Z_DST INTEGER NOT NULL, Z_DST_ENT INTEGER NOT NULL, Z_SRC_ORDER INTEGER, Z_DST_ORDER INTEGER, \
                    PRIMARY KEY (Z_SRC, Z_DST)) WITHOUT ROWID
                    """)
                statements.append("CREATE INDEX \(Self.quote(table + "_DST_INDEX")) ON \(Self.quote(table)) (Z_DST)")
            }
        }
        return statements
    }
}
