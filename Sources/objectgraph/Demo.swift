import ArgumentParser
import Foundation
import ObjectGraph

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

