import ArgumentParser
import Foundation
import ObjectGraphCore

#if os(Linux)
/// glibc's `malloc_trim` (in `<malloc.h>`, which the Glibc module does not import).
@_silgen_name("malloc_trim")
private func mallocTrim(_ pad: Int) -> Int32
#endif

/// Programs whose resident memory ObjectGraph's memory tests read: each runs one long workload in
/// a process of its own and prints `rss <label> <bytes>` lines, read after freed heap is returned
/// to the system, so that a test compares what the process really holds at two points.
struct MemoryProbe: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "_memory",
        abstract: "Run a long workload and print the process's resident memory (for ObjectGraph's memory tests).",
        shouldDisplay: false,
        subcommands: [LongContext.self, Coordinators.self])

    /// The resident set size, after returning freed heap to the system (nil without `/proc`).
    static func residentBytes() -> Int? {
        #if os(Linux)
        _ = mallocTrim(0)
        #endif
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
              let kilobytes = Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "")
        else { return nil }
        return kilobytes * 1024
    }

    static func report(_ label: String) {
        print("rss \(label) \(residentBytes() ?? -1)")
        fflush(nil)
    }

    /// One context that lives for the whole run, never reset: it inserts and saves `objects`
    /// notes, `chunk` at a time, and keeps no reference to them after each save.
    struct LongContext: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "long-context")

        @Option var objects = 1_000_000
        @Option var chunk = 10_000

        func run() throws {
            let (directory, url) = try temporaryStoreURL("memory")
            defer { try? FileManager.default.removeItem(at: directory) }
            let coordinator = PersistentStoreCoordinator(managedObjectModel: DemoModel.make())
            try coordinator.addPersistentStore(type: .sqlite, at: url)
            let context = ManagedObjectContext(concurrencyType: .privateQueue)
            context.persistentStoreCoordinator = coordinator
            var rank: Int64 = 0
            for index in 0..<(objects / chunk) {
                try context.performAndWait {
                    for _ in 0..<chunk {
                        let note = Note(context: context)
                        note.title = "note \(rank)"
                        note.rank = rank
                        rank += 1
                    }
                    try context.save()
                }
                if index == 0 { MemoryProbe.report("first") }
            }
            MemoryProbe.report("last")
            let count = try context.performAndWait { try context.count(for: DemoModel.request(Note.self)) }
            print("saved \(count)")
        }
    }

    /// Coordinators built on one model, each with a store, a context, a save and a fetch, then
    /// dropped: `count` of them.
    struct Coordinators: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "coordinators")

        @Option var count = 1000
        /// Make a new model for every coordinator (and drop it with the coordinator) rather than
        /// sharing one.
        @Flag var modelEach = false

        func run() throws {
            let (directory, url) = try temporaryStoreURL("memory")
            defer { try? FileManager.default.removeItem(at: directory) }
            let shared = DemoModel.make()
            for index in 0..<count {
                do {
                    let coordinator = PersistentStoreCoordinator(managedObjectModel: modelEach ? DemoModel.make() : shared)
                    let store = try coordinator.addPersistentStore(type: .sqlite, at: url)
                    let context = ManagedObjectContext(concurrencyType: .privateQueue)
                    context.persistentStoreCoordinator = coordinator
                    try context.performAndWait {
                        let folder = Folder(context: context)
                        folder.name = "folder \(index)"
                        let note = Note(context: context)
                        note.title = "note \(index)"
                        note.folder = folder
                        try context.save()
                        context.reset()
                        _ = try context.fetch(DemoModel.request(Note.self, where: "folder.name == %@", "folder \(index)"))
                    }
                    try coordinator.removePersistentStore(store)
                }
                if index == 9 { MemoryProbe.report("first") }
            }
            MemoryProbe.report("last")
        }
    }
}
