import ArgumentParser
import Foundation
import ObjectGraph

@main
struct ObjectGraphCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "objectgraph",
        abstract: "Core Data's object graph, in Swift, on Linux.",
        subcommands: [Demo.self, Bench.self])
}

/// The model the demo and the benchmark use.
enum DemoModel {
    static func make() -> ManagedObjectModel {
        ManagedObjectModel(entities: [
            EntityDescription(name: "Folder", properties: [
                .attribute("name", .string, isOptional: false),
                .relationship("notes", destination: "Note", toMany: true, inverse: "folder", deleteRule: .cascade),
            ]),
            EntityDescription(name: "Note", properties: [
                .attribute("title", .string, isOptional: false, defaultValue: ""),
                .attribute("rank", .integer64, defaultValue: Int64(0)),
                .attribute("created", .date),
                .relationship("folder", destination: "Folder", toMany: false, inverse: "notes", deleteRule: .nullify),
            ]),
        ])
    }
}

func temporaryStoreURL(_ name: String) throws -> (URL, URL) {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("objectgraph-\(name)-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    return (directory, directory.appendingPathComponent("\(name).sqlite"))
}

func seconds(_ body: () throws -> Void) rethrows -> Double {
    let start = DispatchTime.now().uptimeNanoseconds
    try body()
    return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
}

struct Demo: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Build an SQLite store in a temporary folder, insert, save, fetch, and print what happened.")

    @Option(help: "How many notes to insert.") var notes = 20_000
    @Flag(help: "Keep the store's folder instead of removing it.") var keep = false

    func run() throws {
        let (directory, url) = try temporaryStoreURL("demo")
        defer { if !keep { try? FileManager.default.removeItem(at: directory) } }
        print("ObjectGraph demo — SQLite store at \(url.path) (WAL, synchronous=FULL)")
        let coordinator = PersistentStoreCoordinator(managedObjectModel: DemoModel.make())
        try coordinator.addPersistentStore(type: .sqlite, at: url)

        let writer = ManagedObjectContext(concurrencyType: .privateQueue)
        writer.name = "writer"
        writer.persistentStoreCoordinator = coordinator
        let count = notes
        let insertTime = try writer.performAndWait {
            try seconds {
                let folders = ["Inbox", "Work", "Ideas", "Archive"].map { name -> ManagedObject in
                    let folder = writer.insertNewObject(forEntityName: "Folder")
                    folder.setValue(name, forKey: "name")
                    return folder
                }
                for i in 0..<count {
                    let note = writer.insertNewObject(forEntityName: "Note")
                    note.setValue(i % 7 == 0 ? "Hello #\(i)" : "Note #\(i)", forKey: "title")
                    note.setValue(Int64(i % 100), forKey: "rank")
                    note.setValue(Date(timeIntervalSinceReferenceDate: Double(i)), forKey: "created")
                    note.setValue(folders[i % folders.count], forKey: "folder")
                }
                try writer.save()
            }
        }
        print("inserted and saved \(count) notes in 4 folders: \(String(format: "%.3f", insertTime)) s")

        let reader = ManagedObjectContext(concurrencyType: .privateQueue)
        reader.name = "reader"
        reader.persistentStoreCoordinator = coordinator
        try reader.performAndWait {
            let request = FetchRequest<ManagedObject>(entityName: "Note")
            request.predicate = FetchPredicate(format: "title BEGINSWITH[c] %@ AND rank > %d AND folder.name == %@", "hello", 90, "Work")
            request.sortDescriptors = [FetchSortDescriptor(key: "rank", ascending: false), FetchSortDescriptor(key: "title")]
            request.fetchLimit = 5
            var top: [ManagedObject] = []
            let fetchTime = try seconds { top = try reader.fetch(request) }
            print("fetch \(request.predicate!) sorted by rank, limit 5: \(top.count) notes in \(String(format: "%.4f", fetchTime)) s")
            for note in top {
                let folder = note.value(forKey: "folder") as? ManagedObject
                print("  \(note.value(forKey: "title") as? String ?? "?")  rank \(note.value(forKey: "rank") as? Int64 ?? -1)  in \(folder?.value(forKey: "name") as? String ?? "-")")
            }
            let all = FetchRequest<ManagedObject>(entityName: "Note")
            all.returnsObjectsAsFaults = false
            var fetched: [ManagedObject] = []
            let allTime = try seconds { fetched = try reader.fetch(all) }
            let sum = fetched.reduce(Int64(0)) { $0 + ($1.value(forKey: "rank") as? Int64 ?? 0) }
            print("fetched all \(fetched.count) notes, materialised: \(String(format: "%.3f", allTime)) s (rank sum \(sum))")
            let folders = FetchRequest<ManagedObject>(entityName: "Folder")
            folders.sortDescriptors = [FetchSortDescriptor(key: "name")]
            for folder in try reader.fetch(folders) {
                print("  folder \(folder.value(forKey: "name") as? String ?? "?"): \((folder.value(forKey: "notes") as? Set<ManagedObject>)?.count ?? 0) notes")
            }
            guard fetched.count == count else { throw ValidationError("expected \(count) notes, found \(fetched.count)") }
        }
        print("statistics: \(coordinator.statistics)")
        print(keep ? "store kept at \(directory.path)" : "removed \(directory.path)")
    }
}

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
