import ArgumentParser
import Foundation
import ObjectGraph

/// `objectgraph-bench migration-memory`: a lightweight migration of a PostgreSQL store of many
/// rows (a million by default), in the one transaction that opens the store, timed and with the
/// process's peak resident memory above a baseline taken just before. The target is 64 MiB: a
/// streaming migration reads, carries over and writes a chunk of rows at a time.
///
/// ```sh
/// swift run -c release objectgraph-bench migration-memory --postgres postgres://postgres@127.0.0.1:5432/bench
/// ```
struct BenchMigrationMemory: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migration-memory", abstract: "Migrate a PostgreSQL store of many rows and report the peak memory above a baseline.")

    // The parent command's --url would take this option's value: another name.
    @Option(help: "The database, postgres://user[:password]@host[:port]/database.") var postgres: String
    @Option(help: "Items in the store.") var rows = 1_000_000

    static let groups = 1_000

    /// The model the store is written with, and the next version: `note` added, `score` removed,
    /// `name` renamed `title` (its renaming identifier), each item's group carried over.
    static func model(version: Int) -> ManagedObjectModel {
        var item: [PropertyDescription] = [.attribute("i", .integer64)]
        if version == 1 {
            item += [.attribute("name", .string), .attribute("score", .double)]
        } else {
            let title = PropertyDescription.attribute("title", .string)
            title.renamingIdentifier = "name"
            item += [title, .attribute("note", .string)]
        }
        item.append(.relationship("group", destination: "Group", inverse: "items"))
        return ManagedObjectModel(entities: [
            EntityDescription(name: "Group", properties: [
                .attribute("name", .string), .relationship("items", destination: "Item", toMany: true, inverse: "group"),
            ]),
            EntityDescription(name: "Item", properties: item),
        ])
    }

    func validate() throws {
        if rows < 1 { throw ValidationError("--rows must be at least 1") }
    }

    func run() throws {
        let server = try BenchPostgres(url: postgres, prefix: BenchPostgres.newPrefix())
        defer { try? server.dropRunSchemas() }
        let url = server.storeURL(schema: server.prefix + "_migration")

        let fillStart = DispatchTime.now().uptimeNanoseconds
        try fill(url)
        print("filled \(rows.grouped) items in \(Self.seconds(since: fillStart))")

        let model = Self.model(version: 2)
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        let baseline = BenchMemory.startMeasurement()
        let start = DispatchTime.now().uptimeNanoseconds
        try coordinator.addPersistentStore(type: .postgres, at: url, options: [
            PersistentStoreOption.migratePersistentStoresAutomatically: true,
            PersistentStoreOption.inferMappingModelAutomatically: true,
        ])
        let time = Self.seconds(since: start)
        let peak = BenchMemory.peakAbove(baseline)

        // The rows came over: every item, with its title and its group.
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.persistentStoreCoordinator = coordinator
        try context.performAndWait {
            let count = try context.count(for: FetchRequest<ManagedObject>(entityName: "Item"))
            guard count == rows else { throw BenchError("the migrated store has \(count) items, not \(rows)") }
            let request = FetchRequest<ManagedObject>(entityName: "Item")
            request.predicate = FetchPredicate(format: "i == %@", Int64(rows - 1))
            guard let last = try context.fetch(request).first,
                  last.value(forKey: "title") as? String == "item \(rows - 1)",
                  (last.value(forKey: "group") as? ManagedObject)?.value(forKey: "name") as? String == "group \((rows - 1) % Self.groups)"
            else { throw BenchError("the migrated store's last item lost its title or its group") }
        }
        let mib = peak.map { String(format: "%.1f MiB", Double($0) / 1_048_576) } ?? "-"
        print("| migration (PostgreSQL, \(rows.grouped) items, \(Self.groups.grouped) groups) | time | peak memory above baseline | target |")
        print("|---|---:|---:|---:|")
        print("| add `note`, remove `score`, rename `name` to `title` | \(time) | \(mib) | 64 MiB |")
    }

    /// Writes the store with the first model: the groups, then the items in saves of 10,000.
    private func fill(_ url: URL) throws {
        let coordinator = PersistentStoreCoordinator(managedObjectModel: Self.model(version: 1))
        let store = try coordinator.addPersistentStore(type: .postgres, at: url)
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.persistentStoreCoordinator = coordinator
        try context.performAndWait {
            let inserted = (0..<Self.groups).map { g in
                let group = context.insertNewObject(forEntityName: "Group")
                group.setValue("group \(g)", forKey: "name")
                return group
            }
            try context.save()
            let groups = inserted.map(\.objectID)  // permanent once saved
            context.reset()
            for i in 0..<rows {
                let item = context.insertNewObject(forEntityName: "Item")
                item.setValue(Int64(i), forKey: "i")
                item.setValue("item \(i)", forKey: "name")
                item.setValue(Double(i) / 8, forKey: "score")
                item.setValue(context.object(with: groups[i % Self.groups]), forKey: "group")
                if i % 10_000 == 9_999 {
                    try context.save()
                    context.reset()
                }
            }
            try context.save()
            context.reset()
        }
        try coordinator.removePersistentStore(store)
    }

    static func seconds(since start: UInt64) -> String {
        String(format: "%.1f s", Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9)
    }
}
