import Foundation

/// Precomputed SQL and column positions for one root entity's table of a relational store: what a
/// fetch selects, how a selected row becomes a snapshot of its concrete entity, and how each
/// entity's rows are inserted, in the store's dialect. Each store reads rows its own way
/// (`TableLayout+SQLite`, `TableLayout+Postgres`). A class: the save and the reads pass it around
/// per object, and it never changes once made.
final class TableLayout: Sendable {
    /// How one selected column fills a snapshot.
    enum Reader: Sendable {
        case attribute(index: Int, type: AttributeType)
        /// A binary attribute kept as Core Data's external storage keeps it (a marker, then the
        /// value or a file's name), where the dialect keeps external storage.
        case externalData(attribute: AttributeDescription)
        case toOne(index: Int, destination: EntityDescription, entityColumn: Int?)
    }

    /// What one concrete entity reads and writes.
    final class EntityLayout: Sendable {
        let entity: EntityDescription
        /// (column position in the select list, reader), for the entity's stored properties.
        let readers: [(Int, Reader)]
        /// The entity's stored properties in insert order (attributes and to-ones).
        let insertProperties: [PropertyDescription]
        /// The columns an insert writes, unquoted: the key, the entity number, the version, then each
        /// insert property's column (and a to-one's entity-number column, where the layout keeps one).
        let insertColumns: [String]
        /// `INSERT INTO … VALUES (…)` of ``insertColumns``.
        let insertSQL: String

        init(entity: EntityDescription, readers: [(Int, Reader)], insertProperties: [PropertyDescription], insertColumns: [String], insertSQL: String) {
            self.entity = entity
            self.readers = readers
            self.insertProperties = insertProperties
            self.insertColumns = insertColumns
            self.insertSQL = insertSQL
        }
    }

    /// How many keys one statement of the relational stores names at most (within SQLite's and
    /// PostgreSQL's limits on parameters, and small enough to keep a statement cached per size).
    static let keysPerStatement = 500

    let root: EntityDescription
    /// The table's name, unquoted (`ZNOTE`).
    let tableName: String
    /// The table as statements name it: quoted, and qualified where the store has a schema.
    let table: String
    let schema: CoreDataLayout
    /// The select list, `t0.Z_PK, t0.Z_ENT, t0.Z_OPT, t0."ZTITLE", …`.
    let selectList: String
    /// The items of ``selectList``, each starting `t0.`.
    private let selectedItems: [String]
    /// By `Z_ENT`.
    let entities: [Int: EntityLayout]

    /// - Parameter qualify: the table's name as statements write it, from its unquoted name.
    init(root: EntityDescription, schema: CoreDataLayout, dialect: SQLDialect, qualify: (String) -> String = CoreDataLayout.quote) {
        self.root = root
        self.schema = schema
        self.tableName = schema.tableName(for: root)
        self.table = qualify(tableName)
        let keyColumns = [CoreDataLayout.primaryKeyColumn, CoreDataLayout.entityColumn, CoreDataLayout.versionColumn]
        var columns = keyColumns
        var selected = columns.map { "t0.\(dialect.keyColumnName($0))" }
        var positions: [String: Int] = [:]
        func position(_ column: String, type: AttributeType? = nil) -> Int {
            if let p = positions[column] { return p }
            columns.append(column)
            selected.append(dialect.selectedColumn(column, type: type))
            positions[column] = columns.count - 1
            return columns.count - 1
        }
        var entities: [Int: EntityLayout] = [:]
        for entity in root.selfAndDescendants {
            var readers: [(Int, Reader)] = []
            var insertProperties: [PropertyDescription] = []
            var insertColumns = keyColumns
            var placeholders = (1...3).map(dialect.placeholder)
            for property in entity.properties {
                if let attribute = property as? AttributeDescription, !attribute.isTransient {
                    let column = schema.columnName(for: attribute)
                    let index = position(column, type: attribute.attributeType)
                    readers.append((index, dialect.keepsExternalStorage && attribute.usesExternalStorage
                        ? .externalData(attribute: attribute) : .attribute(index: attribute.index, type: attribute.attributeType)))
                    insertProperties.append(attribute)
                    insertColumns.append(column)
                    placeholders.append(dialect.placeholder(placeholders.count + 1) + dialect.parameterCast(attribute))
                } else if let relationship = property as? RelationshipDescription, !relationship.isToMany,
                          let destination = relationship.destinationEntity {
                    let column = schema.columnName(for: relationship)
                    let entityColumn = schema.entityColumnName(forToOne: relationship)
                    readers.append((position(column), .toOne(
                        index: relationship.index, destination: destination, entityColumn: entityColumn.map { position($0) })))
                    insertProperties.append(relationship)
                    insertColumns.append(column)
                    placeholders.append(dialect.placeholder(placeholders.count + 1))
                    if let entityColumn {
                        insertColumns.append(entityColumn)
                        placeholders.append(dialect.placeholder(placeholders.count + 1))
                    }
                }
            }
            let insertSQL = "INSERT INTO \(table) (\(insertColumns.map(CoreDataLayout.quote).joined(separator: ","))) VALUES (\(placeholders.joined(separator: ",")))"
            entities[schema.entityNumber(for: entity)] = EntityLayout(
                entity: entity, readers: readers, insertProperties: insertProperties, insertColumns: insertColumns, insertSQL: insertSQL)
        }
        self.entities = entities
        self.selectList = selected.joined(separator: ", ")
        self.selectedItems = selected
    }

    /// How many columns ``selectList`` selects.
    var selectedColumnCount: Int { selectedItems.count }

    /// ``selectList`` for the table aliased `alias` instead of `t0`.
    func selectList(alias: String) -> String {
        selectedItems.map { alias + $0.dropFirst(2) }.joined(separator: ", ")
    }

    /// The query that reads `count` rows of this table by key, selected with ``selectList``.
    func rowsQuery(count: Int, dialect: SQLDialect) -> String {
        let pk = "t0.\(dialect.keyColumnName(CoreDataLayout.primaryKeyColumn))"
        return count == 1
            ? "SELECT \(selectList) FROM \(table) AS t0 WHERE \(pk) = \(dialect.placeholder(1))"
            : "SELECT \(selectList) FROM \(table) AS t0 WHERE \(pk) IN (\(dialect.placeholders(count)))"
    }

    /// The keys of `ids`, by root entity code (IDs without a key left out).
    static func keysByRoot(_ ids: [ManagedObjectID]) -> [Int: [Int64]] {
        var byRoot: [Int: [Int64]] = [:]
        for id in ids {
            guard let pk = id.primaryKey else { continue }
            byRoot[id.entity.rootEntity.entityCode, default: []].append(pk)
        }
        return byRoot
    }

    /// The keys of `ids` in chunks of at most `size`, each with its table's layout (IDs without a
    /// key, or of a table the store does not have, left out).
    /// `keys` in runs of at most `size` keys, each one statement's worth.
    static func statementChunks(_ keys: [Int64], size: Int = keysPerStatement) -> [ArraySlice<Int64>] {
        stride(from: 0, to: keys.count, by: size).map { keys[$0..<min($0 + size, keys.count)] }
    }

    static func chunks(of ids: [ManagedObjectID], in layouts: [Int: TableLayout], size: Int) -> [(layout: TableLayout, keys: ArraySlice<Int64>)] {
        var chunks: [(layout: TableLayout, keys: ArraySlice<Int64>)] = []
        for (rootCode, keys) in keysByRoot(ids) {
            guard let layout = layouts[rootCode] else { continue }
            for chunk in statementChunks(keys, size: size) { chunks.append((layout, chunk)) }
        }
        return chunks
    }

    /// The layout of each root entity's table of a store, by root entity code.
    static func layouts(of schema: CoreDataLayout, dialect: SQLDialect, qualify: (String) -> String = CoreDataLayout.quote) -> [Int: TableLayout] {
        var layouts: [Int: TableLayout] = [:]
        for root in schema.model.entitiesByCode where root.superentity == nil {
            layouts[root.entityCode] = TableLayout(root: root, schema: schema, dialect: dialect, qualify: qualify)
        }
        return layouts
    }
}
