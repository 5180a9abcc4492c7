import ArgumentParser
import Foundation
import ObjectGraph

struct Bench: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Measure insert and fetch throughput (the full three-way benchmark is tracked separately).")

    @Flag(help: "Run smaller sizes.") var quick = false

    func run() throws {
        let n = quick ? 10_000 : 100_000
        let model = ManagedObjectModel(entities: [
            EntityDescription(name: "Item", properties: (0..<10).map { .attribute("i\($0)", .integer64) }),
        ])
        let (directory, url) = try temporaryStoreURL("bench")
        defer { try? FileManager.default.removeItem(at: directory) }
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        try coordinator.addPersistentStore(type: .sqlite, at: url)
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.persistentStoreCoordinator = coordinator
        print("ObjectGraph bench — \(n) Item objects, ten Integer 64 attributes, SQLite WAL, synchronous=FULL")
        print("(the three-way comparison with raw SQLite and GRDB is not yet built: only ObjectGraph's own figures are shown)")
        try context.performAndWait {
            let insert = try seconds {
                for row in 0..<n {
                    let item = context.insertNewObject(forEntityName: "Item")
                    for k in 0..<10 { item.setValue(Int64(row), forKey: "i\(k)") }
                }
                try context.save()
            }
            context.reset()
            var total: Int64 = 0
            let fetch = try seconds {
                let request = FetchRequest<ManagedObject>(entityName: "Item")
                request.returnsObjectsAsFaults = false
                for item in try context.fetch(request) {
                    for k in 0..<10 { total &+= item.value(forKey: "i\(k)") as! Int64 }
                }
            }
            print(String(format: "insert  %7d objects and save: %.3f s", n, insert))
            print(String(format: "fetch   %7d objects, read all ten attributes: %.3f s (checksum %lld)", n, fetch, total))
        }
    }
}
