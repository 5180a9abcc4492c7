import Foundation
import GRDB
import GRDBSQLite

// Rows of an SQLite store's table, read straight from a statement's columns.

extension TableLayout {
    /// Reads the row a statement is on (selected with `selectList`) into an ID and a snapshot,
    /// straight from the statement's columns.
    ///
    /// - Throws: when an externally stored value's file cannot be read (see ``SQLiteExternalData``).
    func read(_ statement: SQLiteStatement, store: PersistentStore, externalData: SQLiteExternalData) throws -> StoreRow? {
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
