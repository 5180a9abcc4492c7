import Foundation
import GRDB
import GRDBSQLite

/// Precomputed SQL and column positions for one root entity's table: what a fetch selects, how a
/// selected row becomes a snapshot of its concrete entity, and how each entity's rows are inserted.
struct SQLiteTableLayout: Sendable {
    /// How one selected column fills a snapshot.
    enum Reader: Sendable {
        case attribute(index: Int, type: AttributeType)
        /// A binary attribute kept as Core Data's external storage keeps it (a marker, then the value or a file's name).
        case externalData(attribute: AttributeDescription)
        case toOne(index: Int, destination: EntityDescription, entityColumn: Int?)
    }

    /// What one concrete entity reads and writes.
    struct EntityLayout: Sendable {
        let entity: EntityDescription
        /// (column position in the select list, reader), for the entity's stored properties.
        let readers: [(Int, Reader)]
        /// The entity's stored properties in insert order (attributes and to-ones), with their columns.
        let insertProperties: [PropertyDescription]
        let insertSQL: String
    }

    let root: EntityDescription
    let table: String
    let schema: SQLiteSchema
    let externalData: SQLiteExternalData
    /// The select list, `t0.Z_PK, t0.Z_ENT, t0.Z_OPT, t0."ZA", ...`.
    let selectList: String
    /// By `Z_ENT`.
    let entities: [Int: EntityLayout]

    init(root: EntityDescription, schema: SQLiteSchema, externalData: SQLiteExternalData) {
        self.root = root
        self.externalData = externalData
        self.table = schema.tableName(for: root)
        self.schema = schema
        var columns = [SQLiteSchema.primaryKeyColumn, SQLiteSchema.entityColumn, SQLiteSchema.versionColumn]
        var positions: [String: Int] = [:]
        func position(_ column: String) -> Int {
            if let p = positions[column] { return p }
            columns.append(column)
            positions[column] = columns.count - 1
            return columns.count - 1
        }
        var entities: [Int: EntityLayout] = [:]
        for entity in root.selfAndDescendants {
            var readers: [(Int, Reader)] = []
            var insertProperties: [PropertyDescription] = []
            var insertColumns = [SQLiteSchema.primaryKeyColumn, SQLiteSchema.entityColumn, SQLiteSchema.versionColumn]
            for property in entity.properties {
                if let attribute = property as? AttributeDescription, !attribute.isTransient {
                    let column = schema.columnName(for: attribute)
                    readers.append((position(column), attribute.usesExternalStorage
                        ? .externalData(attribute: attribute) : .attribute(index: attribute.index, type: attribute.attributeType)))
                    insertProperties.append(attribute)
                    insertColumns.append(column)
                } else if let relationship = property as? RelationshipDescription, !relationship.isToMany,
                          let destination = relationship.destinationEntity {
                    let column = schema.columnName(for: relationship)
                    let entityColumn = schema.entityColumnName(forToOne: relationship)
                    readers.append((position(column), .toOne(
                        index: relationship.index, destination: destination, entityColumn: entityColumn.map(position))))
                    insertProperties.append(relationship)
                    insertColumns.append(column)
                    if let entityColumn { insertColumns.append(entityColumn) }
                }
            }
            let placeholders = Array(repeating: "?", count: insertColumns.count).joined(separator: ",")
            let insertSQL = "INSERT INTO \(SQLiteSchema.quote(table)) (\(insertColumns.map(SQLiteSchema.quote).joined(separator: ","))) VALUES (\(placeholders))"
            entities[schema.entityNumber(for: entity)] = EntityLayout(entity: entity, readers: readers, insertProperties: insertProperties, insertSQL: insertSQL)
        }
        self.entities = entities
        self.selectList = columns.map { "t0.\(SQLiteSchema.quote($0))" }.joined(separator: ", ")
    }

    /// Reads the row a statement is on (selected with `selectList`) into an ID and a snapshot,
    /// straight from the statement's columns.
    ///
    /// - Throws: when an externally stored value's file cannot be read (see ``SQLiteExternalData``).
    func read(_ statement: SQLiteStatement, store: PersistentStore, model: ManagedObjectModel) throws -> StoreRow? {
        let pk = sqlite3_column_int64(statement, 0)
        let code = Int(sqlite3_column_int64(statement, 1))
        guard let layout = entities[code] else { return nil }
        let version = sqlite3_column_int64(statement, 2)
        var values = [Value](repeating: .null, count: layout.entity.properties.count)
        for (column, reader) in layout.readers {
            let index = CInt(column)
            switch reader {
            case .attribute(let property, let type):
                values[property] = Value(statement, column: index, type: type)
            case .externalData(let attribute):
                switch sqlite3_column_type(statement, index) {
                case SQLITE_NULL:
                    continue
                case SQLITE_BLOB:
                    let count = Int(sqlite3_column_bytes(statement, index))
                    let pointer = sqlite3_column_blob(statement, index)
                    values[attribute.index] = try externalData.decode(UnsafeRawBufferPointer(start: pointer, count: count), attribute: attribute)
                default:
                    values[attribute.index] = Value(statement, column: index, type: .binaryData)
                }
            case .toOne(let property, let destination, let entityColumn):
                guard sqlite3_column_type(statement, index) == SQLITE_INTEGER else { continue }
                var number: Int?
                if let entityColumn, sqlite3_column_type(statement, CInt(entityColumn)) == SQLITE_INTEGER {
                    number = Int(truncatingIfNeeded: sqlite3_column_int64(statement, CInt(entityColumn)))
                }
                let destinationEntity = schema.destinationEntity(forNumber: number, of: destination)
                values[property] = .objectID(ManagedObjectID(entity: destinationEntity, store: store, primaryKey: sqlite3_column_int64(statement, index)))
            }
        }
        let id = ManagedObjectID(entity: layout.entity, store: store, primaryKey: pk)
        return StoreRow(id: id, snapshot: Snapshot(entity: layout.entity, version: version, values: values))
    }
}
