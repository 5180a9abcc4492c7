import Foundation

// Rows of a PostgreSQL store's table, read from the values of a query's row.

extension TableLayout {
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
            case .externalData:
                continue  // never made: PostgreSQL keeps binary values in the row (SQLDialect.keepsExternalStorage)
            }
        }
        return StoreRow(id: ManagedObjectID(entity: layout.entity, store: store, primaryKey: pk), snapshot: Snapshot(entity: layout.entity, version: version, values: values))
    }
}
