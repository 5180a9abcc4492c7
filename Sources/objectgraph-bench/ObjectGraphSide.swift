import Foundation
import ObjectGraph
import ObjectGraphBenchCore

/// The workloads through ObjectGraph's public API only, written as an app would write them:
/// private-queue contexts used inside `performAndWait`, `value(forKey:)`/`setValue(_:forKey:)`,
/// `FetchRequest`, `save()`. The typed variants (a `@Managed` class's properties) are in
/// `ObjectGraphSide+Typed.swift`.
final class ObjectGraphSide: BenchSide {
    let variant = BenchVariant.objectGraph
    let directory: URL
    private let synchronous: BenchSynchronous
    /// Whether the stores record persistent history (`--history`).
    private let history: Bool
    /// Open stores, by file name; each has its own coordinator, as separate apps would.
    var coordinators: [String: PersistentStoreCoordinator] = [:]

    /// `Item` (ten Integer 64 attributes) and `Entry` (`name`, indexed, and `score`).
    let model = ManagedObjectModel(entities: [
        EntityDescription(name: "Item", properties: BenchData.itemKeys.map { .attribute($0, .integer64) }),
        EntityDescription(name: "Entry", properties: [
            .attribute("name", .string, isOptional: false, defaultValue: "", isIndexed: true),
            .attribute("score", .integer64, defaultValue: Int64(0)),
        ]),
    ])

    /// The same `Item` as a `@Managed` class, for the typed variants. Its attributes are
    /// non-optional with a default (as Swift properties with initial values), so its stores are
    /// not `model`'s: each model has files of its own.
    let typedModel = ManagedObjectModel(types: [Item.self])

    /// The database whose schemas hold the stores (`--store postgres`), or nil for SQLite files.
    let postgres: BenchPostgres?

    init(directory: URL, synchronous: BenchSynchronous, history: Bool = false, postgres: BenchPostgres? = nil) throws {
        self.directory = directory
        self.synchronous = synchronous
        self.history = history
        self.postgres = postgres
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    // MARK: - Stores

    func openCoordinator(at url: URL, access: BenchAccess = .keyValue) throws -> PersistentStoreCoordinator {
        let coordinator = PersistentStoreCoordinator(managedObjectModel: access == .typed ? typedModel : model)
        if postgres != nil {
            try coordinator.addPersistentStore(type: .postgres, at: url)
        } else {
            try coordinator.addPersistentStore(
                type: .sqlite, at: url,
                options: [PersistentStoreOption.durability: synchronous.durability, PersistentStoreOption.persistentHistoryTracking: history])
        }
        return coordinator
    }

    /// The location of the kept store `name`: a file of the side's folder, or a schema of the
    /// benchmark's PostgreSQL database.
    func storeURL(_ name: String) -> URL {
        if let postgres { return postgres.storeURL(schema: postgres.schema(variant, name)) }
        return directory.appendingPathComponent("\(name).sqlite")
    }

    /// The location of a new store (a folder or a schema of its own) and a function that removes
    /// it; the caller closes its coordinators first.
    func newStoreLocation(_ name: String) throws -> (url: URL, remove: () -> Void) {
        let unique = "\(name)-\(UUID().uuidString.prefix(8))"
        if let postgres {
            let schema = postgres.schema(variant, unique)
            return (postgres.storeURL(schema: schema), { try? postgres.dropSchema(schema) })
        }
        let folder = directory.appendingPathComponent(unique)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return (folder.appendingPathComponent("\(name).sqlite"), { try? FileManager.default.removeItem(at: folder) })
    }

    /// Closes a coordinator's stores now (PostgreSQL: its connections), before its store is removed.
    func close(_ coordinator: PersistentStoreCoordinator) {
        for store in coordinator.persistentStores { try? coordinator.removePersistentStore(store) }
    }

    func newContext(_ coordinator: PersistentStoreCoordinator, name: String? = nil) -> ManagedObjectContext {
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.name = name
        context.persistentStoreCoordinator = coordinator
        return context
    }

    /// The coordinator of a seeded store: `kind` (`items`, `update`, `update_typed`, `merge`,
    /// `batch` or `entries`) of `rows` rows, with the model of `access`.
    func store(_ kind: String, rows: Int, access: BenchAccess = .keyValue) throws -> PersistentStoreCoordinator {
        let name = "\(kind)-\(rows)\(access == .typed ? "-typed" : "")"
        if let coordinator = coordinators[name] { return coordinator }
        let coordinator = try openCoordinator(at: storeURL(name), access: access)
        let entity = kind == "entries" ? "Entry" : "Item"
        let context = newContext(coordinator, name: "seed")
        let existing = try context.performAndWait { try context.count(for: FetchRequest<ManagedObject>(entityName: entity)) }
        if existing == 0 {
            try seed(context, entity: entity, rows: rows)
        } else if existing != rows {
            throw BenchError("\(name) holds \(existing) rows, not \(rows); remove the benchmark's folder")
        }
        coordinators[name] = coordinator
        return coordinator
    }

    /// Inserts rows 0..<rows in saves of 50,000, giving each object its permanent ID before the
    /// save so that row `r` gets primary key `r + 1`, as in the other ways.
    private func seed(_ context: ManagedObjectContext, entity: String, rows: Int) throws {
        try context.performAndWait {
            for start in stride(from: 0, to: rows, by: 50_000) {
                var objects: [ManagedObject] = []
                for row in start..<min(rows, start + 50_000) {
                    let object = context.insertNewObject(forEntityName: entity)
                    if entity == "Item" {
                        for key in BenchData.itemKeys { object.setValue(Int64(row), forKey: key) }
                    } else {
                        let entry = BenchData.entry(row)
                        object.setValue(entry.name, forKey: "name")
                        object.setValue(entry.score, forKey: "score")
                    }
                    objects.append(object)
                }
                try context.obtainPermanentIDs(for: objects)
                try context.save()
                context.reset()
            }
        }
    }

    func prepare(_ metric: Metric, sizes: BenchSizes) throws {
        if let kept = BenchStores.kept(by: metric, sizes: sizes) { _ = try store(kept.kind, rows: kept.rows, access: metric.access) }
    }

    // MARK: - Workloads

    func insert(count: Int, access: BenchAccess) throws -> BenchSample {
        if access == .typed { return try insertTyped(count: count) }
        return try timedInsert(access: .keyValue, name: "insert") { context in
            for row in 0..<count {
                let item = context.insertNewObject(forEntityName: "Item")
                for key in BenchData.itemKeys { item.setValue(Int64(row), forKey: key) }
            }
        }
    }

    /// Inserts items into a new, empty store of `access`'s model with `insertAll`, then saves.
    /// Timed: `insertAll` and the save.
    func timedInsert(access: BenchAccess, name: String, _ insertAll: (ManagedObjectContext) -> Void) throws -> BenchSample {
        let (url, remove) = try newStoreLocation(access == .typed ? "insert-typed" : "insert")
        defer { remove() }
        let seconds: Double
        do {
            let coordinator = try openCoordinator(at: url, access: access)
            defer { close(coordinator) }
            let context = newContext(coordinator, name: name)
            seconds = try context.performAndWait {
                try BenchClock.seconds {
                    insertAll(context)
                    try context.save()
                }
            }
        }
        // Read the store back with a new coordinator: what the sample reports is what was stored.
        let coordinator = try openCoordinator(at: url, access: access)
        defer { close(coordinator) }
        let (rows, checksum) = try readAllItems(coordinator, access: access)
        return BenchSample(seconds: seconds, rows: rows, checksum: checksum)
    }

    /// A request for every item as `T`, fully materialised (`returnsObjectsAsFaults = false`).
    static func allItems<T: ManagedObject>(as type: T.Type) -> FetchRequest<T> {
        let request = FetchRequest<T>(entityName: "Item")
        request.returnsObjectsAsFaults = false
        return request
    }

    /// Every item of a store, fully materialised, and the checksum of their ten attributes, read
    /// as `access` says.
    func readAllItems(_ coordinator: PersistentStoreCoordinator, access: BenchAccess = .keyValue) throws -> (Int, Int64) {
        if access == .typed { return try readAllTypedItems(coordinator) }
        return try readAllItems(coordinator, as: ManagedObject.self, name: "fetch") { items in
            var checksum: Int64 = 0
            for item in items {
                checksum &+= BenchData.itemChecksum { item.value(forKey: BenchData.itemKeys[$0]) as! Int64 }
            }
            return checksum
        }
    }

    /// Every item of a store as `T`, fully materialised, and the checksum `checksum` reads from them.
    func readAllItems<T: ManagedObject>(
        _ coordinator: PersistentStoreCoordinator, as type: T.Type, name: String, checksum: ([T]) -> Int64
    ) throws -> (Int, Int64) {
        let context = newContext(coordinator, name: name)
        return try context.performAndWait {
            let items = try context.fetch(Self.allItems(as: T.self))
            return (items.count, checksum(items))
        }
    }

    func fetch(rows: Int, access: BenchAccess) throws -> BenchSample {
        let coordinator = try store("items", rows: rows, access: access)
        let (seconds, (count, checksum)) = try BenchClock.measure { try readAllItems(coordinator, access: access) }
        return BenchSample(seconds: seconds, rows: count, checksum: checksum)
    }

    func fault(rows: Int, picks: [Int]) throws -> BenchSample {
        let coordinator = try store("items", rows: rows)
        let context = newContext(coordinator, name: "fault")
        let before = coordinator.statistics
        let (seconds, (fetched, checksum)) = try context.performAndWait {
            try BenchClock.measure {
                let items = try context.fetch(FetchRequest<ManagedObject>(entityName: "Item"))  // faults
                var checksum: Int64 = 0
                for row in picks { checksum &+= items[row].value(forKey: "i0") as! Int64 }
                return (items.count, checksum)
            }
        }
        guard fetched == rows else { throw BenchError("fault: fetched \(fetched) items, expected \(rows)") }
        var figures = statistics(since: before, coordinator)
        figures[.idsOnlySeconds] = try faultWithoutValues(coordinator, picks: picks, expecting: checksum)
        return BenchSample(seconds: seconds, rows: picks.count, checksum: checksum, figures: figures)
    }

    /// `fault` with `includesPropertyValues = false`: the fetch reads IDs only and each fault reads
    /// its row from the store. Reported beside `fault` (as `objectgraph_ids_only_s`), to show
    /// which of the two paths costs what.
    private func faultWithoutValues(_ coordinator: PersistentStoreCoordinator, picks: [Int], expecting expected: Int64) throws -> Double {
        let context = newContext(coordinator, name: "fault, IDs only")
        let (seconds, checksum) = try context.performAndWait {
            try BenchClock.measure {
                let request = FetchRequest<ManagedObject>(entityName: "Item")
                request.includesPropertyValues = false
                let items = try context.fetch(request)
                var checksum: Int64 = 0
                for row in picks { checksum &+= items[row].value(forKey: "i0") as! Int64 }
                return checksum
            }
        }
        guard checksum == expected else { throw BenchError("fault with IDs only: checksum \(checksum), expected \(expected)") }
        return seconds
    }

    func cacheHit(rows: Int, picks: [Int]) throws -> BenchSample {
        let coordinator = try store("items", rows: rows)
        // A first context fetches the IDs with their rows: they wait in the coordinator's row cache.
        let first = newContext(coordinator, name: "first")
        let ids = try first.performAndWait {
            let request = FetchRequest<ManagedObjectID>(entityName: "Item")
            request.includesPropertyValues = true
            return try first.fetch(request)
        }
        guard ids.count == rows else { throw BenchError("cachehit: fetched \(ids.count) IDs, expected \(rows)") }
        let second = newContext(coordinator, name: "second")
        let before = coordinator.statistics
        let (seconds, checksum) = second.performAndWait {
            BenchClock.measure {
                var objects: [ManagedObject] = []
                objects.reserveCapacity(picks.count)
                var checksum: Int64 = 0
                for row in picks {
                    let item = second.object(with: ids[row])
                    checksum &+= BenchData.itemChecksum { item.value(forKey: BenchData.itemKeys[$0]) as! Int64 }
                    objects.append(item)
                }
                return checksum
            }
        }
        let figures = statistics(since: before, coordinator)
        withExtendedLifetime(first) {}
        if let statements = figures[.sqlStatements], statements > 0 {
            throw BenchError("cachehit: the second context ran \(Int(statements)) SQL statements; the row cache should have served every object")
        }
        return BenchSample(seconds: seconds, rows: picks.count, checksum: checksum, figures: figures)
    }

    func batched(rows: Int, batchSize: Int) throws -> BenchSample {
        let coordinator = try store("items", rows: rows)
        let context = newContext(coordinator, name: "batched")
        let (seconds, (count, checksum)) = try context.performAndWait {
            try BenchClock.measure {
                let request = FetchRequest<ManagedObject>(entityName: "Item")
                request.fetchBatchSize = batchSize
                var checksum: Int64 = 0
                var count = 0
                // The batch-faulting results: primary keys, and one batch of objects at a time.
                for item in try context.fetchBatched(request) {
                    checksum &+= BenchData.itemChecksum { item.value(forKey: BenchData.itemKeys[$0]) as! Int64 }
                    count += 1
                }
                return (count, checksum)
            }
        }
        return BenchSample(seconds: seconds, rows: count, checksum: checksum)
    }

    func predicate(rows: Int, prefixes: [String], limit: Int) throws -> BenchSample {
        let coordinator = try store("entries", rows: rows)
        let context = newContext(coordinator, name: "predicate")
        let (seconds, (count, checksum)) = try context.performAndWait {
            try BenchClock.measure {
                try BenchData.sum(over: prefixes) { prefix in try Self.queryEntries(context, prefix: prefix, limit: limit) }
            }
        }
        return BenchSample(seconds: seconds, rows: count, checksum: checksum)
    }

    /// `name BEGINSWITH prefix` sorted by score, descending: the number of results and the sum of
    /// their scores (their names are read too).
    private static func queryEntries(_ context: ManagedObjectContext, prefix: String, limit: Int) throws -> (Int, Int64) {
        let request = FetchRequest<ManagedObject>(entityName: "Entry")
        request.predicate = FetchPredicate(format: "name BEGINSWITH %@", prefix)
        request.sortDescriptors = [FetchSortDescriptor(key: "score", ascending: false)]
        request.fetchLimit = limit
        request.returnsObjectsAsFaults = false
        var checksum: Int64 = 0
        let entries = try context.fetch(request)
        for entry in entries {
            BenchSink.consume(entry.value(forKey: "name") as! String)
            checksum &+= entry.value(forKey: "score") as! Int64
        }
        return (entries.count, checksum)
    }

    func updateInOneSave(rows: Int, access: BenchAccess) throws -> BenchSample {
        if access == .typed { return try updateTyped(rows: rows) }
        return try timedUpdate(store("update", rows: rows), as: ManagedObject.self, name: "update") { items in
            var checksum: Int64 = 0
            for item in items {
                let value = (item.value(forKey: "i0") as! Int64) + 1
                item.setValue(value, forKey: "i0")
                checksum &+= value
            }
            return checksum
        }
    }

    /// Fetches every item of `coordinator`'s store as `T`, fully materialised (untimed), changes
    /// them with `change`, which returns the checksum of the new values, and saves once. Timed: the
    /// changes and the save.
    func timedUpdate<T: ManagedObject>(
        _ coordinator: PersistentStoreCoordinator, as type: T.Type, name: String, _ change: ([T]) -> Int64
    ) throws -> BenchSample {
        let context = newContext(coordinator, name: name)
        return try context.performAndWait {
            let items = try context.fetch(Self.allItems(as: T.self))
            let (seconds, checksum) = try BenchClock.measure {
                let checksum = change(items)
                try context.save()
                return checksum
            }
            return BenchSample(seconds: seconds, rows: items.count, checksum: checksum)
        }
    }

    func updateInSeparateSaves(rows: Int, saves: Int) throws -> BenchSample {
        let coordinator = try store("update", rows: rows)
        let context = newContext(coordinator, name: "update")
        return try context.performAndWait {
            let request = FetchRequest<ManagedObject>(entityName: "Item")
            request.returnsObjectsAsFaults = false
            request.sortDescriptors = [FetchSortDescriptor(key: "i1", ascending: true)]
            let items = try context.fetch(request)
            let (seconds, checksum) = try BenchClock.measure {
                var checksum: Int64 = 0
                for item in items.prefix(saves) {
                    let value = (item.value(forKey: "i0") as! Int64) + 1
                    item.setValue(value, forKey: "i0")
                    try context.save()
                    checksum &+= value
                }
                return checksum
            }
            return BenchSample(seconds: seconds, rows: min(saves, items.count), checksum: checksum)
        }
    }

    func updateStoreChecksum(rows: Int, access: BenchAccess) throws -> Int64 {
        let coordinator = try store(BenchStores.update(access), rows: rows, access: access)
        let context = newContext(coordinator, name: "check")
        return try context.performAndWait {
            try context.fetch(Self.allItems(as: ManagedObject.self)).reduce(0) { $0 &+ ($1.value(forKey: "i0") as! Int64) }
        }
    }

    func readWriteParticipants(rows: Int, readers: Int, batchSize: Int) throws -> BenchReadWriteParticipants {
        let coordinator = try store("entries", rows: rows)
        let readerContexts = (0..<readers).map { newContext(coordinator, name: "reader \($0)") }
        let writer = newContext(coordinator, name: "writer")
        return BenchReadWriteParticipants(
            readers: readerContexts.map { context in
                { @Sendable prefix in try context.performAndWait { try Self.queryEntries(context, prefix: prefix, limit: 7).0 } }
            },
            writeBatch: { @Sendable batch in
                try writer.performAndWait {
                    var checksum: Int64 = 0
                    for row in BenchReadWrite.rows(ofBatch: batch, size: batchSize, after: rows) {
                        let entry = BenchData.entry(row)
                        let object = writer.insertNewObject(forEntityName: "Entry")
                        object.setValue(entry.name, forKey: "name")
                        object.setValue(entry.score, forKey: "score")
                        checksum &+= entry.score
                    }
                    try writer.save()
                    writer.reset()
                    return checksum
                }
            })
    }

    // MARK: - Merge

    /// The main context has every item of the merge store registered and materialised; a
    /// background context changes them all and saves. Timed: `mergeChanges(fromContextDidSave:)` on
    /// the main context, then reading `i0` of every item (what the raw re-fetch also gives). The
    /// merge call alone is reported as `objectgraph_merge_call_s`: the main queue's stall.
    ///
    /// Return nil here (the table then says "not yet") for a feature that does not exist yet.
    func merge(rows: Int) throws -> BenchSample? {
        let coordinator = try store("merge", rows: rows)
        let main = newContext(coordinator, name: "main")
        let background = newContext(coordinator, name: "background")
        let items = try main.performAndWait { try main.fetch(Self.allItems(as: ManagedObject.self)) }
        guard items.count == rows else { throw BenchError("merge: fetched \(items.count) items, expected \(rows)") }
        let notification = try saveInBackground(background) { item in
            item.setValue((item.value(forKey: "i0") as! Int64) + 1, forKey: "i0")
        }
        let (seconds, (mergeSeconds, checksum)) = main.performAndWait {
            BenchClock.measure {
                let mergeSeconds = BenchClock.seconds { main.mergeChanges(fromContextDidSave: notification) }
                return (mergeSeconds, items.reduce(Int64(0)) { $0 &+ ($1.value(forKey: "i0") as! Int64) })
            }
        }
        return BenchSample(seconds: seconds, rows: items.count, checksum: checksum, figures: [.mergeCallSeconds: mergeSeconds])
    }

    /// Changes every item in `context` and saves; the save's `didSaveObjectsNotification`.
    private func saveInBackground(_ context: ManagedObjectContext, change: (ManagedObject) -> Void) throws -> Notification {
        try didSaveNotification(of: context, workload: "merge") {
            for item in try context.fetch(Self.allItems(as: ManagedObject.self)) { change(item) }
            try context.save()
        }
    }

    /// Runs `body` (which saves) on `context`'s queue; the save's `didSaveObjectsNotification`.
    func didSaveNotification(of context: ManagedObjectContext, workload: String, _ body: () throws -> Void) throws -> Notification {
        final class Saved: @unchecked Sendable {  // written on the saving queue, read after performAndWait returns
            var notification: Notification?
        }
        let saved = Saved()
        let observer = NotificationCenter.default.addObserver(
            forName: ManagedObjectContext.didSaveObjectsNotification, object: context, queue: nil
        ) { saved.notification = $0 }
        defer { NotificationCenter.default.removeObserver(observer) }
        try context.performAndWait(body)
        guard let notification = saved.notification else { throw BenchError("\(workload): the background save posted no notification") }
        return notification
    }

    // MARK: - Statistics

    /// The coordinator's counters since `before`, as figures of a sample.
    private func statistics(since before: StoreStatistics, _ coordinator: PersistentStoreCoordinator) -> [BenchFigure: Double] {
        let after = coordinator.statistics
        return [
            .sqlStatements: Double(after.sqlStatements - before.sqlStatements),
            .rowCacheHits: Double(after.rowCacheHits - before.rowCacheHits),
            .rowCacheMisses: Double(after.rowCacheMisses - before.rowCacheMisses),
            .faultsFromStore: Double(after.faultsFromStore - before.faultsFromStore),
        ]
    }
}

extension BenchSynchronous {
    /// The ObjectGraph store option with the same meaning.
    var durability: StoreDurability { self == .full ? .full : .normal }
}
