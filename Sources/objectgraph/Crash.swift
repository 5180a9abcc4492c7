import ArgumentParser
import Foundation
import ObjectGraphCore
import ObjectGraphCrashModels

/// Programs that save from background contexts and then exit, are killed, or are stopped with
/// SIGTERM: ObjectGraph's crash tests run them as child processes and check the store afterwards.
///
/// Every save they make follows ``CrashSchedule``, which the tests know too, so the state of the
/// store after any number of saves is known exactly. After each `save()` returns they write
/// `ack <context> <save>` to standard output, unbuffered.
struct Crash: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "_crash",
        abstract: "Save from background contexts and exit, crash or drain (for ObjectGraph's crash tests).",
        shouldDisplay: false,
        subcommands: [CrashSaver.self, CrashServer.self, CrashDefaultLocation.self, CrashMigrator.self])
}

/// What save `i` of context `c` does: insert folder (c, i) with `notes(c, i)` notes, delete
/// folder (c, i - 4) when `i % 5 == 4`, and bring the context's tally up to date — all in one
/// save (``CrashModel``'s rules, which the tests check stores against).
enum CrashSchedule {
    static func notes(context c: Int, save i: Int) -> Int { CrashModel.notes(context: c, save: i) }
    static func deletes(save i: Int) -> Int? { CrashModel.deletes(save: i) }

    /// Makes save `i` of context `c` and saves it; call on the context's queue.
    static func save(_ i: Int, of c: Int, in context: ManagedObjectContext) throws {
        let count = notes(context: c, save: i)
        let folder = context.insertNewObject(forEntityName: "Folder")
        folder.setValue("\(c).\(i)", forKey: "name")
        folder.setValue(Int64(c), forKey: "context")
        folder.setValue(Int64(i), forKey: "index")
        folder.setValue(Int64(count), forKey: "count")
        for j in 0..<count {
            let note = context.insertNewObject(forEntityName: "Note")
            note.setValue("\(c).\(i).\(j)", forKey: "title")
            note.setValue(Int64(j), forKey: "rank")
            note.setValue(folder, forKey: "folder")
        }
        var removedNotes = 0
        if let victim = deletes(save: i) {
            let request = FetchRequest<ManagedObject>(entityName: "Folder")
            request.predicate = FetchPredicate(format: "context == %d AND index == %d", c, victim)
            for old in try context.fetch(request) {
                removedNotes += Int(old.value(forKey: "count") as? Int64 ?? 0)
                context.delete(old)
            }
        }
        let tally = try self.tally(of: c, in: context) ?? {
            let tally = context.insertNewObject(forEntityName: "Tally")
            tally.setValue(Int64(c), forKey: "context")
            return tally
        }()
        func add(_ key: String, _ delta: Int) {
            tally.setValue((tally.value(forKey: key) as? Int64 ?? 0) + Int64(delta), forKey: key)
        }
        add("saves", 1)
        add("folders", deletes(save: i) == nil ? 1 : 0)
        add("notes", count - removedNotes)
        try context.save()
        acknowledge("ack \(c) \(i)")
        context.reset()
    }

    static func tally(of c: Int, in context: ManagedObjectContext) throws -> ManagedObject? {
        let request = FetchRequest<ManagedObject>(entityName: "Tally")
        request.predicate = FetchPredicate(format: "context == %d", c)
        return try context.fetch(request).first
    }

    /// How many saves context `c` made so far (the next save's number).
    static func savesMade(by c: Int, in context: ManagedObjectContext) throws -> Int {
        Int(try tally(of: c, in: context)?.value(forKey: "saves") as? Int64 ?? 0)
    }

    /// Writes a line to standard output at once, in one `write` (lines from several threads never mix).
    static func acknowledge(_ line: String) {
        let bytes = Array("\(line)\n".utf8)
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = write(1, buffer.baseAddress! + offset, buffer.count - offset)
                if written <= 0 { return }
                offset += written
            }
        }
    }

    /// A container on an SQLite store at `path` (durability FULL, the default), with persistent
    /// history and remote-change notifications when asked.
    static func container(at path: String, history: Bool = false) throws -> PersistentContainer {
        let container = PersistentContainer(name: "Crash", managedObjectModel: CrashModel.make())
        let description = PersistentStoreDescription(url: URL(fileURLWithPath: path))
        if history {
            description.setOption(true, forKey: PersistentStoreOption.persistentHistoryTracking)
            description.setOption(true, forKey: PersistentStoreOption.remoteChangeNotificationPost)
        }
        container.persistentStoreDescriptions = [description]
        try container.loadPersistentStores()
        return container
    }

    static func fail(_ message: String) -> Never {
        FileHandle.standardError.write(Data("objectgraph _crash: \(message)\n".utf8))
        exit(3)
    }
}

/// Saves from background contexts (and optionally the view context) following ``CrashSchedule``,
/// resuming from what the store holds; then exits at once, or saves until it is killed.
struct CrashSaver: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "saver", abstract: "Save from background contexts, then exit at once or run until killed.")

    enum Exit: String, ExpressibleByArgument {
        /// Return from `main` right after submitting the saves.
        case `return`
        /// Call `exit(0)` right after submitting the saves.
        case exit
        /// Call `exit(0)` from a block on the first background context, after its saves.
        case exitInBlock = "exit-in-block"
    }

    @Option(help: "The SQLite store's path.") var store: String
    @Option(help: "How many background contexts save at once.") var contexts = 3
    @Option(help: "Saves per context; 0 saves until the process is killed.") var saves = 0
    @Option(help: "Milliseconds of simulated work before each save.") var workMs = 0
    @Option(help: "Install the exit guard with this time limit (milliseconds).") var guardMs: Int?
    @Option(help: "How the program ends once the saves are submitted.") var exit: Exit = .return
    @Flag(help: "Also save from the view context (as context number <contexts>).") var view = false
    @Option(help: "Also run one block that sleeps this long (milliseconds) on a background context.") var slowMs: Int?
    @Flag(help: "Record persistent history (and post remote changes).") var history = false
    @Option(help: "The background contexts' transaction author.") var author: String?

    func run() throws {
        let container: PersistentContainer
        do { container = try CrashSchedule.container(at: store, history: history) } catch { CrashSchedule.fail("cannot load the store: \(error)") }
        if let guardMs { container.waitsForSavesAtExit(timeout: .milliseconds(guardMs)) }

        var workers = (0..<contexts).map { c in (c, container.newBackgroundContext()) }
        for (_, context) in workers { context.transactionAuthor = author }
        if view { workers.append((contexts, container.viewContext)) }
        let workMs = self.workMs
        for (c, context) in workers {
            if saves == 0 {
                let first = try context.performAndWait { try CrashSchedule.savesMade(by: c, in: context) }
                Self.saveForever(from: first, of: c, in: context)
            } else {
                let first = try context.performAndWait { try CrashSchedule.savesMade(by: c, in: context) }
                for i in first..<(first + saves) {
                    context.perform {
                        if workMs > 0 { Thread.sleep(forTimeInterval: Double(workMs) / 1000) }
                        do { try CrashSchedule.save(i, of: c, in: context) } catch { CrashSchedule.fail("save \(i) of context \(c): \(error)") }
                    }
                }
            }
        }
        if let slowMs {
            container.newBackgroundContext().perform { Thread.sleep(forTimeInterval: Double(slowMs) / 1000) }
        }
        if saves == 0 { dispatchMain() }
        switch exit {
        case .return:
            return
        case .exit:
            Foundation.exit(0)
        case .exitInBlock:
            workers[0].1.perform { Foundation.exit(0) }
            dispatchMain()
        }
    }

    /// Saves `i`, then schedules save `i + 1`, for ever.
    static func saveForever(from i: Int, of c: Int, in context: ManagedObjectContext) {
        context.perform {
            do { try CrashSchedule.save(i, of: c, in: context) } catch { CrashSchedule.fail("save \(i) of context \(c): \(error)") }
            saveForever(from: i + 1, of: c, in: context)
        }
    }
}

/// Prints where a container with the default description puts its store, loads it and saves once.
struct CrashDefaultLocation: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "default-location", abstract: "Load a container at its default location and save once.")

    @Option(help: "The container's name.") var name = "Defaults"

    func run() throws {
        let container = PersistentContainer(name: name, managedObjectModel: CrashModel.make())
        print("directory \(PersistentContainer.defaultDirectoryURL().path)")
        print("store \(container.persistentStoreDescriptions[0].url?.path ?? "none")")
        try container.loadPersistentStores()
        let context = container.newBackgroundContext()
        try context.performAndWait { try CrashSchedule.save(0, of: 0, in: context) }
        try container.shutdown()
    }
}
