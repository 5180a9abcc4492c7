import Foundation

/// Precomputed SQL and column positions for one root entity's table of a PostgreSQL store: what a
/// fetch selects, how a selected row becomes a snapshot of its concrete entity, and how each
/// entity's rows are inserted. (``SQLiteTableLayout`` is the SQLite store's.)
struct PostgresTableLayout: Sendable {
    /// How one selected column fills a snapshot.
    enum Reader: Sendable {
        case attribute(index: Int, type: AttributeType)
        case toOne(index: Int, destination: EntityDescription, entityColumn: Int?)
    }

    /// What one concrete entity reads and writes.
    struct EntityLayout: Sendable {
        let entity: EntityDescription
        /// (column position in the select list, reader), for the entity's stored properties.
        let readers: [(Int, Reader)]
        /// The entity's stored properties in insert order (attributes and to-ones).
        let insertProperties: [PropertyDescription]
        /// `INSERT INTO … VALUES ($1, …)`: the key, the entity number, the version, then each
        /// insert property's value (and a to-one's entity number, where the layout keeps one).
        let insertSQL: String
    }

    let root: EntityDescription
    /// The table, qualified by the store's schema and quoted.
    let table: String
    /// `t0."Z_PK", t0."Z_ENT", t0."Z_OPT", t0."ZTITLE", …` (decimals as their text).
    let selectList: String
    /// By `Z_ENT`.
    let entities: [Int: EntityLayout]
    let schema: SQLiteSchema

    init(root: EntityDescription, schema: SQLiteSchema, qualify: (String) -> String) {
        self.root = root
        self.schema = schema
        self.table = qualify(schema.tableName(for: root))
        var columns = [SQLiteSchema.primaryKeyColumn, SQLiteSchema.entityColumn, SQLiteSchema.versionColumn]
        var selected = columns.map { "t0.\(SQLiteSchema.quote($0))" }
        var positions: [String: Int] = [:]
        func position(_ column: String, decimal: Bool = false) -> Int {
            if let p = positions[column] { return p }
            columns.append(column)
            selected.append("t0.\(SQLiteSchema.quote(column))" + (decimal ? "::text" : ""))
            positions[column] = columns.count - 1
            return columns.count - 1
        }
        var entities: [Int: EntityLayout] = [:]
        for entity in root.selfAndDescendants {
            var readers: [(Int, Reader)] = []
            var insertProperties: [PropertyDescription] = []
            var insertColumns = [SQLiteSchema.primaryKeyColumn, SQLiteSchema.entityColumn, SQLiteSchema.versionColumn]
            var placeholders = ["$1", "$2", "$3"]
            for property in entity.properties {
                if let attribute = property as? AttributeDescription, !attribute.isTransient {
                    let column = schema.columnName(for: attribute)
                    readers.append((position(column, decimal: attribute.attributeType == .decimal), .attribute(index: attribute.index, type: attribute.attributeType)))
                    insertProperties.append(attribute)
                    insertColumns.append(column)
                    placeholders.append("$\(placeholders.count + 1)" + Self.cast(attribute))
                } else if let relationship = property as? RelationshipDescription, !relationship.isToMany,
                          let destination = relationship.destinationEntity {
                    let column = schema.columnName(for: relationship)
                    let entityColumn = schema.entityColumnName(forToOne: relationship)
                    readers.append((position(column), .toOne(index: relationship.index, destination: destination, entityColumn: entityColumn.map { position($0) })))
                    insertProperties.append(relationship)
                    insertColumns.append(column)
                    placeholders.append("$\(placeholders.count + 1)")
                    if let entityColumn {
                        insertColumns.append(entityColumn)
                        placeholders.append("$\(placeholders.count + 1)")
                    }
                }
            }
            let insertSQL = "INSERT INTO \(table) (\(insertColumns.map(SQLiteSchema.quote).joined(separator: ", "))) VALUES (\(placeholders.joined(separator: ", ")))"
            entities[schema.entityNumber(for: entity)] = EntityLayout(entity: entity, readers: readers, insertProperties: insertProperties, insertSQL: insertSQL)
        }
        self.entities = entities
        self.selectList = selected.joined(separator: ", ")
    }

    /// The cast a parameter for `attribute`'s column needs: a decimal is sent as its text.
    static func cast(_ attribute: AttributeDescription) -> String {
        attribute.attributeType == .decimal ? "::numeric" : ""
    }

    /// A row selected with ``selectList`` as an ID and a snapshot; nil for a row of an entity the
    /// model does not have.
    func read(_ row: [PostgresValue], store: PersistentStore) -> StoreRow? {
        guard row.count >= 3, let pk = row[0].integer, let code = row[1].integer, let layout = entities[Int(code)] else { return nil }
        let version = row[2].integer ?? 0
        var values = [Value](repeating: .null, count: layout.entity.properties.count)
        for (column, reader) in layout.readers where column < row.count {
            switch reader {
            case .attribute(let index, let type):
                values[index] = Value(postgres: row[column], type: type)
            case .toOne(let index, let destination, let entityColumn):
                guard let key = row[column].integer else { continue }
                let number = entityColumn.flatMap { row[$0].integer }.map { Int($0) }
                let entity = schema.destinationEntity(forNumber: number, of: destination)
                values[index] = .objectID(ManagedObjectID(entity: entity, store: store, primaryKey: key))
            }
        }
        return StoreRow(id: ManagedObjectID(entity: layout.entity, store: store, primaryKey: pk), snapshot: Snapshot(entity: layout.entity, version: version, values: values))
    }
}
