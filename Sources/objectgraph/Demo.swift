import ArgumentParser
import Dispatch
import Foundation
import ObjectGraphCore
import Synchronization

/// The seed scenario: a background import on private contexts, saved in batches, while the main
/// queue keeps fetching and faulting; then the main queue's fetch latency during the import
/// against idle, and the counts checked.
struct Demo: ToolCommand {
    static let configuration = CommandConfiguration(
        abstract: "Import objects in the background into an SQLite store in a temporary folder while the main queue fetches; print latencies and check the counts.")

    @Option(help: "How many notes to import.") var notes = 200_000
    @Option(help: "How many notes each background save writes.") var batch = 5_000
    @Option(help: "How many private contexts import at once.") var importers = 2
    @Flag(help: "Keep the store's folder instead of removing it.") var keep = false

    static let folderNames = ["Inbox", "Work", "Ideas", "Archive"]

    func validate() throws {
        guard notes >= 0 else { throw ValidationError("--notes cannot be negative") }
    }

    func execute() throws {
        let (directory, url) = try temporaryStoreURL("demo")
        defer { if !keep { try? FileManager.default.removeItem(at: directory) } }
        print("ObjectGraph demo — SQLite store at \(url.path)")
        print("WAL, synchronous=FULL; \(notes) notes imported by \(importers) private contexts in saves of \(batch), while the main queue fetches\n")
        let coordinator = PersistentStoreCoordinator(managedObjectModel: DemoModel.make())
        try coordinator.addPersistentStore(type: .sqlite, at: url)

        // The folders, saved first so importers can link to them by ID.
        let setup = ManagedObjectContext(concurrencyType: .privateQueue)
        setup.name = "setup"
        setup.persistentStoreCoordinator = coordinator
        let folderIDs = try setup.performAndWait {
            let folders = Self.folderNames.map { name -> Folder in
                let folder = Folder(context: setup)
                folder.name = name
                return folder
            }
            try setup.save()
            return folders.map(\.objectID)
        }

        // The main context, used on the main queue (this program's main thread).
        let main = ManagedObjectContext(concurrencyType: .mainQueue)
        main.name = "main"
        main.persistentStoreCoordinator = coordinator

        // Background import.
        let imported = Atomic<Int>(0)
        let failure = Mutex<String?>(nil)
        let group = DispatchGroup()
        let total = notes, batchSize = max(1, batch), workers = max(1, importers)
        let start = DispatchTime.now()
        for worker in 0..<workers {
            let context = ManagedObjectContext(concurrencyType: .privateQueue)
            context.name = "importer \(worker)"
            context.persistentStoreCoordinator = coordinator
            let share = stride(from: worker * batchSize, to: total, by: batchSize * workers).map { $0..<min($0 + batchSize, total) }
            group.enter()
            context.perform {
                defer { group.leave() }
                do {
                    var folders = folderIDs.map { context.object(with: $0) as! Folder }
                    for range in share {
                        for i in range {
                            let note = Note(context: context)
                            note.title = i % 7 == 0 ? "Hello #\(i)" : "Note #\(i)"
                            note.rank = Int64(i % 1000)
                            note.created = Date(timeIntervalSinceReferenceDate: Double(i))
                            note.folder = folders[i % folders.count]
                        }
                        try context.save()
                        context.reset()
                        imported.add(range.count, ordering: .relaxed)
                        folders = folderIDs.map { context.object(with: $0) as! Folder }
                    }
                } catch {
                    failure.withLock { $0 = "\(context.name ?? "importer"): \(CommandFailure.message(for: error))" }
                }
            }
        }

        // The main queue keeps fetching and faulting while the import runs.
        let progress = TerminalProgress()
        var during: [Double] = []
        while group.wait(timeout: .now()) == .timedOut {
            during.append(try Self.fetchAndFault(main, iteration: during.count))
            progress.show(imported.load(ordering: .relaxed), of: total, "importing")
        }
        let importSeconds = Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9
        progress.show(imported.load(ordering: .relaxed), of: total, "importing")
        progress.finish()
        if let failure = failure.withLock({ $0 }) { throw CommandFailure("The import into \(url.path) failed: \(failure)") }

        // The same work with nothing else running.
        var idle: [Double] = []
        for i in 0..<max(200, during.count) { idle.append(try Self.fetchAndFault(main, iteration: i)) }

        print("")
        print(String(format: "import: %d notes in %.2f s (%.0f notes/s)", total, importSeconds, Double(total) / importSeconds))
        print("main-queue fetch (20 notes with rank == r, indexed) and fault (title, folder name), in milliseconds:")
        print("                 runs      p50      p99      max")
        print(Self.row("during import", during))
        print(Self.row("idle", idle))
        if let p99Busy = Self.percentile(during, 0.99), let p99Idle = Self.percentile(idle, 0.99), p99Idle > 0 {
            print(String(format: "p99 during import ÷ p99 idle: %.2f×", p99Busy / p99Idle))
        }

        // Check the counts.
        try main.performAndWait {
            main.reset()
            let count = try main.count(for: DemoModel.request(Note.self))
            var inFolders = 0
            let byName = DemoModel.request(Folder.self)
            byName.sortDescriptors = [FetchSortDescriptor(key: "name", ascending: true)]
            for folder in try main.fetch(byName) {
                inFolders += folder.notes.count
                print("  folder \(folder.name): \(folder.notes.count) notes")
            }
            let hellos = try main.count(for: DemoModel.request(Note.self, where: "title BEGINSWITH %@", "Hello"))
            let expectedHellos = (0..<total).count { $0 % 7 == 0 }
            print("counts: \(count) notes (expected \(total)), \(inFolders) in folders, \(hellos) titled Hello (expected \(expectedHellos))")
            guard count == total, inFolders == total, hellos == expectedHellos else {
                throw CommandFailure("The counts in \(url.path) do not match: \(count) notes (expected \(total)), \(inFolders) in folders, \(hellos) titled Hello (expected \(expectedHellos))")
            }
        }
        try Self.threeLevelStack(coordinator)
        print("statistics: \(coordinator.statistics)")
        print(keep ? "store kept at \(directory.path)" : "removed \(directory.path)")
    }

    /// The stack the guides recommend: a private root that alone writes the store, a main-queue
    /// child for the interface, a worker below it. The worker's save pushes into the main context;
    /// saving the chain writes the store.
    static func threeLevelStack(_ coordinator: PersistentStoreCoordinator) throws {
        let root = ManagedObjectContext(concurrencyType: .privateQueue)
        root.name = "root"
        root.persistentStoreCoordinator = coordinator
        let main = ManagedObjectContext(concurrencyType: .mainQueue)
        main.name = "main (child of root)"
        main.parent = root
        let worker = ManagedObjectContext(concurrencyType: .privateQueue)
        worker.name = "worker (child of main)"
        worker.parent = main
        let count = 1_000
        try worker.performAndWait {
            let folder = Folder(context: worker)
            folder.name = "Stack"
            for i in 0..<count {
                let note = Note(context: worker)
                note.title = "Stacked #\(i)"
                note.folder = folder
            }
            try worker.save()  // into main, not the store
        }
        let inMain = try main.performAndWait { try main.count(for: DemoModel.request(Note.self, where: "title BEGINSWITH %@", "Stacked")) }
        let check = ManagedObjectContext(concurrencyType: .privateQueue)
        check.persistentStoreCoordinator = coordinator
        func stored() throws -> Int {
            try check.performAndWait { try check.count(for: DemoModel.request(Note.self, where: "title BEGINSWITH %@", "Stacked")) }
        }
        let beforeChain = try stored()
        try main.saveChainNow()  // main → root → store
        let afterChain = try stored()
        print("three-level stack: the worker pushed \(inMain) notes into main (\(beforeChain) in the store); after saving the chain, \(afterChain) in the store")
        guard inMain == count, beforeChain == 0, afterChain == count else { throw CommandFailure("The three-level stack lost changes: \(inMain) notes in main of \(count), \(beforeChain) in the store before saving the chain (0 expected) and \(afterChain) after") }
    }

    /// One main-queue fetch of 20 notes by an indexed attribute, faulting in their titles and folders.
    static func fetchAndFault(_ main: ManagedObjectContext, iteration: Int) throws -> Double {
        let begin = DispatchTime.now().uptimeNanoseconds
        try main.performAndWait {
            let rank = Int64(iteration % 1000)
            let request = DemoModel.request(Note.self, where: "rank == %d", rank)
            request.fetchLimit = 20
            for note in try main.fetch(request) {
                _ = note.title
                _ = note.folder?.name
            }
            main.reset()
        }
        return Double(DispatchTime.now().uptimeNanoseconds - begin) / 1e6
    }

    static func percentile(_ values: [Double], _ p: Double) -> Double? {
        guard !values.isEmpty else { return nil }
        let sorted = values.sorted()
        return sorted[min(sorted.count - 1, Int((Double(sorted.count - 1) * p).rounded()))]
    }

    static func row(_ label: String, _ values: [Double]) -> String {
        let p50 = percentile(values, 0.5) ?? 0, p99 = percentile(values, 0.99) ?? 0, max = values.max() ?? 0
        return label.padding(toLength: 15, withPad: " ", startingAt: 0)
            + String(format: "%7d %8.2f %8.2f %8.2f", values.count, p50, p99, max)
    }
}
