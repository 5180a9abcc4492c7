import ArgumentParser
import Foundation
import ObjectGraph
import ObjectGraphBenchCore

/// `objectgraph-bench query-twins`: each query shape a store must answer in SQL, timed against a
/// twin that returns as many rows and that any SQL store answers at its best (an integer
/// comparison or sort), on one store of 60,000 items. The ratio is what the shape costs beyond
/// its result; the target is 5× on every store.
///
/// ```sh
/// swift run -c release objectgraph-bench query-twins
/// swift run -c release objectgraph-bench query-twins --on postgres --postgres postgres://postgres@127.0.0.1:5432/bench
/// ```
struct BenchQueryTwins: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "query-twins", abstract: "Time each query shape against a twin answered in SQL that returns as many rows.")

    // The parent command's --store, --url and --runs would take these options' values: other names.
    @Option(help: "Where the store lives: sqlite (a file in a temporary folder) or postgres (a schema of the database --postgres names).")
    var on = BenchStoreKind.sqlite
    @Option(help: "With --on postgres: the database, postgres://user[:password]@host[:port]/database.") var postgres: String?
    @Option(help: "Items in the store.") var rows = 60_000
    @Option(help: "Timed runs of each query, after one warm-up; the best is reported.") var bestOf = 7

    static let groups = 100
    static let ranks = 600

    static let model = ManagedObjectModel(entities: [
        EntityDescription(name: "Group", properties: [
            .attribute("name", .string),
            .relationship("items", destination: "Item", toMany: true, inverse: "group"),
        ]),
        EntityDescription(name: "Item", properties: [
            .attribute("i", .integer64),
            .attribute("bucket", .integer64),
            .attribute("rank", .integer64),
            .attribute("uid", .uuid),
            .attribute("amount", .decimal),
            .attribute("updated", .date),
            .attribute("score", .double),
            .attribute("name", .string),
            .relationship("group", destination: "Group", inverse: "items"),
        ]),
    ])

    /// One line of the table: a shape, its twin, and how many objects each returns.
    struct Query {
        let shape: String
        let twin: String
        let count: Bool
        let request: @Sendable () -> FetchRequest<ManagedObject>
        let twinRequest: @Sendable () -> FetchRequest<ManagedObject>
    }

    static func request(
        _ entity: String, _ format: String?, _ arguments: [any Sendable] = [], sort: String? = nil, limit: Int = 0
    ) -> @Sendable () -> FetchRequest<ManagedObject> {
        return {
            let request = FetchRequest<ManagedObject>(entityName: entity)
            if let format { request.predicate = FetchPredicate(format: format, argumentArray: arguments) }
            if let sort { request.sortDescriptors = [FetchSortDescriptor(key: sort)] }
            request.fetchLimit = limit
            return request
        }
    }

    func queries(uid: UUID) -> [Query] {
        let middle = Int64(rows / 2)
        return [
            Query(shape: "`uid == %@` (UUID), one row", twin: "`i == %@`", count: false,
                  request: Self.request("Item", "uid == %@", [uid]), twinRequest: Self.request("Item", "i == %@", [middle])),
            Query(shape: "count of `uid == %@`", twin: "count of `i == %@`", count: true,
                  request: Self.request("Item", "uid == %@", [uid]), twinRequest: Self.request("Item", "i == %@", [middle])),
            Query(shape: "`amount == %@` (decimal), one row", twin: "`i == %@`", count: false,
                  request: Self.request("Item", "amount == %@", [Decimal(Int(middle)) / 4]), twinRequest: Self.request("Item", "i == %@", [middle])),
            Query(shape: "sorted by a date, limit 20", twin: "sorted by `i`, limit 20", count: false,
                  request: Self.request("Item", nil, sort: "updated", limit: 20), twinRequest: Self.request("Item", nil, sort: "i", limit: 20)),
            Query(shape: "sorted by a double, limit 20", twin: "sorted by `i`, limit 20", count: false,
                  request: Self.request("Item", nil, sort: "score", limit: 20), twinRequest: Self.request("Item", nil, sort: "i", limit: 20)),
            Query(shape: "`group.name == %@` (\(rows / Self.groups) rows)", twin: "`bucket == %@`", count: false,
                  request: Self.request("Item", "group.name == %@", ["group 7"]), twinRequest: Self.request("Item", "bucket == %@", [Int64(7)])),
            Query(shape: "`name BEGINSWITH[c] %@` (100 rows)", twin: "`i BETWEEN {100, 199}`", count: false,
                  request: Self.request("Item", "name BEGINSWITH[c] %@", ["item-001"]),
                  twinRequest: Self.request("Item", "i BETWEEN {100, 199}")),
            Query(shape: "groups with `ANY items.rank == %@`", twin: "the items with that rank", count: false,
                  request: Self.request("Group", "ANY items.rank == %@", [Int64(42)]), twinRequest: Self.request("Item", "rank == %@", [Int64(42)])),
        ]
    }

    func validate() throws {
        if bestOf < 1 { throw ValidationError("--best-of must be at least 1") }
        if rows < 1_000 { throw ValidationError("--rows must be at least 1,000") }
        if on == .postgres && postgres == nil { throw ValidationError("--on postgres needs --postgres postgres://user@host:port/database") }
        if on == .sqlite && postgres != nil { throw ValidationError("--postgres is for --on postgres") }
    }

    func run() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("objectgraph-twins-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        var database: BenchPostgres?
        let coordinator = PersistentStoreCoordinator(managedObjectModel: Self.model)
        switch on {
        case .sqlite:
            try coordinator.addPersistentStore(type: .sqlite, at: directory.appendingPathComponent("twins.sqlite"))
        case .postgres:
            let server = try BenchPostgres(url: postgres!, prefix: BenchPostgres.newPrefix())
            database = server
            try coordinator.addPersistentStore(type: .postgres, at: server.storeURL(schema: server.prefix + "_twins"))
        }
        defer { if let database { try? database.dropRunSchemas() } }

        let uid = try fill(coordinator)
        print("| query (\(rows.grouped) items, \(on.rawValue)) | best of \(bestOf) | its twin | twin | ratio |")
        print("|---|---:|---|---:|---:|")
        for query in queries(uid: uid) {
            let (shape, shapeCount) = try best(query.request, count: query.count, coordinator)
            let (twin, twinCount) = try best(query.twinRequest, count: query.count, coordinator)
            guard query.shape.hasPrefix("groups") || shapeCount == twinCount else {
                throw BenchError("\(query.shape): \(shapeCount) objects, its twin \(twinCount)")
            }
            print("| \(query.shape) | \(Self.milliseconds(shape)) | \(query.twin) | \(Self.milliseconds(twin)) | \(String(format: "%.1f×", shape / twin)) |")
        }
    }

    /// Inserts the groups and items, in saves of 10,000; returns the UUID of the middle item.
    private func fill(_ coordinator: PersistentStoreCoordinator) throws -> UUID {
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.persistentStoreCoordinator = coordinator
        return try context.performAndWait {
            func insert(_ entity: String, _ values: [String: Any]) -> ManagedObject {
                let object = context.insertNewObject(forEntityName: entity)
                for (key, value) in values { object.setValue(value, forKey: key) }
                return object
            }
            let groups = (0..<Self.groups).map { insert("Group", ["name": "group \($0)"]) }
            var middle = UUID()
            for i in 0..<rows {
                let uid = UUID()
                if i == rows / 2 { middle = uid }
                _ = insert("Item", [
                    "i": Int64(i), "bucket": Int64(i % Self.groups), "rank": Int64(i % Self.ranks), "uid": uid,
                    "amount": Decimal(i) / 4, "updated": Date(timeIntervalSinceReferenceDate: Double((i &* 7919) % rows)),
                    "score": Double((i &* 104_729) % rows) / 8, "name": String(format: i % 2 == 0 ? "ITEM-%05d" : "item-%05d", i),
                    "group": groups[i % Self.groups],
                ])
                if i % 10_000 == 9_999 { try context.save() }
            }
            try context.save()
            context.reset()
            return middle
        }
    }

    /// The best time of `bestOf` runs (after a warm-up) of a fetch or a count, each in a new context,
    /// and how many objects it returned.
    private func best(
        _ request: @Sendable () -> FetchRequest<ManagedObject>, count: Bool, _ coordinator: PersistentStoreCoordinator
    ) throws -> (Double, Int) {
        var best = Double.infinity, found = 0
        for run in 0...bestOf {
            let context = ManagedObjectContext(concurrencyType: .privateQueue)
            context.persistentStoreCoordinator = coordinator
            let (seconds, n) = try context.performAndWait {
                let start = DispatchTime.now().uptimeNanoseconds
                let n = count ? try context.count(for: request()) : try context.fetch(request()).count
                return (Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9, n)
            }
            found = n
            if run > 0 { best = min(best, seconds) }
        }
        return (best, found)
    }

    static func milliseconds(_ seconds: Double) -> String { String(format: "%.1f ms", seconds * 1000) }
}
