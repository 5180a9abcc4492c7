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
        let (url, remove) = try newStoreLocation("insert-typed")
        defer { remove() }
        let seconds: Double
        do {
            let coordinator = try openCoordinator(at: url, access: .typed)
            defer { close(coordinator) }
            let context = newContext(coordinator, name: "insert, typed")
            seconds = try context.performAndWait {
                try BenchClock.seconds {
                    for row in 0..<count {
                        Item(context: context).fill(row: row)
                    }
                    try context.save()
                }
            }
        }
        // Read the store back with a new coordinator: what the sample reports is what was stored.
        let coordinator = try openCoordinator(at: url, access: .typed)
        defer { close(coordinator) }
        let (rows, checksum) = try readAllTypedItems(coordinator)
        return BenchSample(seconds: seconds, rows: rows, checksum: checksum)
    }

    /// Every item of a typed store, fully materialised (`FetchRequest<Item>`,
    /// `returnsObjectsAsFaults = false`, as `fetch`), and the checksum of their ten properties.
    private func readAllTypedItems(_ coordinator: PersistentStoreCoordinator) throws -> (Int, Int64) {
        let context = newContext(coordinator, name: "fetch, typed")
        return try context.performAndWait {
            let request = FetchRequest<Item>(entityName: "Item")
            request.returnsObjectsAsFaults = false
            let items = try context.fetch(request)
            var checksum: Int64 = 0
            for item in items { checksum &+= item.checksum }
            return (items.count, checksum)
        }
    }

    /// `fetch_typed`: the `rows` items as `Item` objects, and their ten properties read.
    func fetchTyped(rows: Int) throws -> BenchSample {
        let coordinator = try store("items", rows: rows, access: .typed)
        let (seconds, (count, checksum)) = try BenchClock.measure { try readAllTypedItems(coordinator) }
        return BenchSample(seconds: seconds, rows: count, checksum: checksum)
    }

    /// `update_typed`: `item.i0 += 1` on every item of the typed update store, then one save.
    /// Timed: the changes and the save (the objects are fetched untimed).
    func updateTyped(rows: Int) throws -> BenchSample {
        let coordinator = try store(BenchStores.update(.typed), rows: rows, access: .typed)
        let context = newContext(coordinator, name: "update, typed")
        return try context.performAndWait {
            let request = FetchRequest<Item>(entityName: "Item")
            request.returnsObjectsAsFaults = false
            let items = try context.fetch(request)
            let (seconds, checksum) = try BenchClock.measure {
                var checksum: Int64 = 0
                for item in items {
                    item.i0 += 1
                    checksum &+= item.i0
                }
                try context.save()
                return checksum
            }
            return BenchSample(seconds: seconds, rows: items.count, checksum: checksum)
        }
    }
}
