import Foundation
import ObjectGraph
import ObjectGraphBenchCore

/// The typed variants: the same work as `insert`, `fetch` and `update_one_save`, the same requests
/// and saves, but every value set and read through the properties of the `@Managed` class
/// `Item` instead of `setValue(_:forKey:)` / `value(forKey:)`. The difference between a typed
/// row and its key-value row is the cost of the access path; the raw SQLite and GRDB sides run the
/// same code for both.
extension ObjectGraphSide {
    /// `insert_typed`: `Item(context:)` and ten property sets per object, then one save.
    func insertTyped(count: Int) throws -> BenchSample {
        try timedInsert(access: .typed, name: "insert, typed") { context in
            for row in 0..<count {
                Item(context: context).fill(row: row)
            }
        }
    }

    /// Every item of a typed store, fully materialised (`FetchRequest<Item>`,
    /// `returnsObjectsAsFaults = false`, as `fetch`), and the checksum of their ten properties:
    /// what `fetch_typed` times.
    func readAllTypedItems(_ coordinator: PersistentStoreCoordinator) throws -> (Int, Int64) {
        try readAllItems(coordinator, as: Item.self, name: "fetch, typed") { items in
            var checksum: Int64 = 0
            for item in items { checksum &+= item.checksum }
            return checksum
        }
    }

    /// `update_typed`: `item.i0 += 1` on every item of the typed update store, then one save.
    /// Timed: the changes and the save (the objects are fetched untimed).
    func updateTyped(rows: Int) throws -> BenchSample {
        try timedUpdate(store(BenchStores.update(.typed), rows: rows, access: .typed), as: Item.self, name: "update, typed") { items in
            var checksum: Int64 = 0
            for item in items {
                item.i0 += 1
                checksum &+= item.i0
            }
            return checksum
        }
    }
}
