import Foundation
import ObjectGraph
import ObjectGraphBenchCore

/// The batch rows through ObjectGraph's public API: `context.execute(_:)` with a
/// `BatchInsertRequest`, a `BatchUpdateRequest` or a `BatchDeleteRequest`, inside `performAndWait`
/// of a private-queue context, as an importer or a purge would run them.
extension ObjectGraphSide {
    /// The values of item row `row` as a batch insert takes them: every attribute equal to `row`.
    static func itemRow(_ row: Int) -> [String: any Sendable] {
        var values: [String: any Sendable] = [:]
        for key in BenchData.itemKeys { values[key] = Int64(row) }
        return values
    }

    /// A new store in a folder of its own under the side's folder, and a function that removes it.
    func newStore(_ name: String, access: BenchAccess = .keyValue) throws -> (PersistentStoreCoordinator, URL, remove: () -> Void) {
        let (url, remove) = try newStoreLocation(name)
        let coordinator = try openCoordinator(at: url, access: access)
        return (coordinator, url, { [self] in
            close(coordinator)
            remove()
        })
    }

    /// Seeds rows 0..<rows of `Item` with batch inserts of 20,000 rows (row `r` gets primary key `r + 1`).
    func seedWithBatchInserts(_ coordinator: PersistentStoreCoordinator, rows: Int) throws {
        let context = newContext(coordinator, name: "seed")
        try context.performAndWait {
            for start in stride(from: 0, to: rows, by: 20_000) {
                let objects = (start..<min(rows, start + 20_000)).map(Self.itemRow)
                try context.execute(BatchInsertRequest(entityName: "Item", objects: objects))
            }
        }
    }

    /// How many items match a predicate, read back through a new context.
    private func count(_ coordinator: PersistentStoreCoordinator, _ predicate: FetchPredicate?) throws -> Int {
        let context = newContext(coordinator, name: "check")
        return try context.performAndWait {
            let request = FetchRequest<ManagedObject>(entityName: "Item")
            request.predicate = predicate
            return try context.count(for: request)
        }
    }

    /// The predicate of `batch_update` and `batch_delete`: `i1` in `BenchData.batchRange(of: rows)`.
    private static func batchPredicate(rows: Int) -> FetchPredicate {
        let range = BenchData.batchRange(of: rows)
        return FetchPredicate(format: "i1 >= %@ AND i1 < %@", Int64(range.lowerBound), Int64(range.upperBound))
    }

    func batchInsert(count: Int, access: BenchAccess) throws -> BenchSample {
        let request: BatchInsertRequest
        switch access {
        case .keyValue:
            request = BatchInsertRequest(entityName: "Item", objects: (0..<count).map(Self.itemRow))
        case .typed:
            var next = 0
            request = BatchInsertRequest(Item.self) { item in
                guard next < count else { return true }
                item.fill(row: next)
                next += 1
                return false
            }
        }
        let (coordinator, url, remove) = try newStore("batch-insert", access: access)
        defer { remove() }
        let context = newContext(coordinator, name: "batch insert")
        let seconds = try context.performAndWait {
            try BenchClock.seconds { try context.execute(request) }
        }
        // Read the store back with a new coordinator: what the sample reports is what was stored.
        let reader = try openCoordinator(at: url, access: access)
        defer { close(reader) }
        let (rows, checksum) = try readAllItems(reader, access: access)
        return BenchSample(seconds: seconds, rows: rows, checksum: checksum)
    }

    func batchUpdate(rows: Int, run: Int) throws -> BenchSample {
        let coordinator = try store("batch", rows: rows)
        let context = newContext(coordinator, name: "batch update")
        let value = BenchData.batchUpdateValue(run: run)
        let (seconds, result) = try context.performAndWait {
            try BenchClock.measure {
                let update = BatchUpdateRequest(entityName: "Item")
                update.predicate = Self.batchPredicate(rows: rows)
                update.propertiesToUpdate = ["i0": value]
                update.resultType = .updatedObjectsCount
                return try context.execute(update)
            }
        }
        guard let updated = (result as? BatchUpdateResult)?.result as? Int else { throw BenchError("batch_update: no count in the result") }
        let holding = try count(coordinator, FetchPredicate(format: "i0 == %@", value))
        return BenchSample(seconds: seconds, rows: updated, checksum: Int64(holding))
    }

    func batchStoreChecksum(rows: Int) throws -> Int64 {
        let context = newContext(try store("batch", rows: rows), name: "check")
        return try context.performAndWait {
            let request = FetchRequest<ManagedObject>(entityName: "Item")
            request.returnsObjectsAsFaults = false
            return try context.fetch(request).reduce(0) { $0 &+ ($1.value(forKey: "i0") as! Int64) }
        }
    }

    func batchDelete(rows: Int) throws -> BenchSample {
        let (coordinator, _, remove) = try newStore("batch-delete")
        defer { remove() }
        try seedWithBatchInserts(coordinator, rows: rows)
        let context = newContext(coordinator, name: "batch delete")
        let (seconds, result) = try context.performAndWait {
            try BenchClock.measure {
                let request = FetchRequest<ManagedObject>(entityName: "Item")
                request.predicate = Self.batchPredicate(rows: rows)
                let delete = BatchDeleteRequest(fetchRequest: request)
                delete.resultType = .count
                return try context.execute(delete)
            }
        }
        guard let deleted = (result as? BatchDeleteResult)?.result as? Int else { throw BenchError("batch_delete: no count in the result") }
        return BenchSample(seconds: seconds, rows: deleted, checksum: Int64(try count(coordinator, nil)))
    }
}
