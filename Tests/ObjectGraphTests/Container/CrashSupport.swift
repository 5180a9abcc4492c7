import Foundation
import Testing
import ObjectGraph
import ObjectGraphCrashModels
@testable import ObjectGraphCore

/// The crash tests' side of `objectgraph _crash`: the store a run of ``CrashModel``'s saves leaves,
/// and a check of a store against it.
enum CrashScenario {
    /// The folders of context `c` after its first `k` saves: save i inserts folder i and, when
    /// `i % 5 == 4`, deletes folder i - 4.
    static func folders(context c: Int, saves k: Int) -> Set<Int> {
        Set((0..<k).filter { !($0 % 5 == 0 && $0 + 4 < k) })
    }

    /// What a check found: the saves each context made, by the store's own account.
    struct State: Equatable, CustomStringConvertible {
        var saves: [Int: Int]
        var description: String { saves.sorted { $0.key < $1.key }.map { "context \($0.key): \($0.value) saves" }.joined(separator: ", ") }
    }

    /// Opens the store, checks `PRAGMA integrity_check` and that it holds exactly the state of
    /// some number of whole saves per context (a save is never partly visible), and returns those
    /// numbers. Records an issue for every broken invariant.
    static func check(_ url: URL, deep: Bool = true, sourceLocation: SourceLocation = #_sourceLocation) throws -> State {
        let coordinator = PersistentStoreCoordinator(managedObjectModel: CrashModel.make())
        let store = try coordinator.addPersistentStore(type: .sqlite, at: url)
        defer { try? coordinator.removePersistentStore(store) }
        let integrity = try (store.backend as! SQLiteStore).integrityCheck()
        #expect(integrity == "ok", "PRAGMA integrity_check: \(integrity)", sourceLocation: sourceLocation)

        let context = ManagedObjectContext(concurrencyType: .confinement)
        context.persistentStoreCoordinator = coordinator
        var state = State(saves: [:])
        var tallies: [Int: (saves: Int, folders: Int, notes: Int)] = [:]
        for tally in try context.fetch(FetchRequest<ManagedObject>(entityName: "Tally")) {
            let c = Int(tally.value(forKey: "context") as! Int64)
            #expect(tallies[c] == nil, "two tallies for context \(c)", sourceLocation: sourceLocation)
            tallies[c] = (Int(tally.value(forKey: "saves") as! Int64), Int(tally.value(forKey: "folders") as! Int64),
                          Int(tally.value(forKey: "notes") as! Int64))
        }
        var folders: [Int: [Int: ManagedObject]] = [:]
        for folder in try context.fetch(FetchRequest<ManagedObject>(entityName: "Folder")) {
            let c = Int(folder.value(forKey: "context") as! Int64), i = Int(folder.value(forKey: "index") as! Int64)
            folders[c, default: [:]][i] = folder
        }
        #expect(Set(folders.keys).isSubset(of: Set(tallies.keys)), "folders of a context with no tally", sourceLocation: sourceLocation)
        var expectedNotes = 0
        for (c, tally) in tallies {
            let k = tally.saves
            state.saves[c] = k
            let present = folders[c] ?? [:]
            let expected = Self.folders(context: c, saves: k)
            #expect(Set(present.keys) == expected,
                    "context \(c) after \(k) saves: folders \(present.keys.sorted()) instead of \(expected.sorted())",
                    sourceLocation: sourceLocation)
            let notes = expected.reduce(0) { $0 + CrashModel.notes(context: c, save: $1) }
            #expect(tally.folders == expected.count && tally.notes == notes,
                    "context \(c): tally says \(tally.folders) folders and \(tally.notes) notes, the schedule \(expected.count) and \(notes)",
                    sourceLocation: sourceLocation)
            expectedNotes += notes
            for (i, folder) in present {
                #expect(folder.value(forKey: "count") as? Int64 == Int64(CrashModel.notes(context: c, save: i)), sourceLocation: sourceLocation)
                if deep {
                    let notes = folder.value(forKey: "notes") as! Set<ManagedObject>
                    #expect(notes.count == CrashModel.notes(context: c, save: i),
                            "folder \(c).\(i) has \(notes.count) notes, its count says \(CrashModel.notes(context: c, save: i))",
                            sourceLocation: sourceLocation)
                }
            }
        }
        let allNotes = try context.count(for: FetchRequest<ManagedObject>(entityName: "Note"))
        #expect(allNotes == expectedNotes, "\(allNotes) notes in the store, the saves made \(expectedNotes)", sourceLocation: sourceLocation)
        let orphans = FetchRequest<ManagedObject>(entityName: "Note")
        orphans.predicate = FetchPredicate(format: "folder == nil")
        #expect(try context.count(for: orphans) == 0, "notes without their folder", sourceLocation: sourceLocation)
        return state
    }

    /// The acknowledged saves in a child's output: the highest save number per context, and the
    /// number of acknowledgements per context.
    static func acknowledged(in output: String) -> (last: [Int: Int], count: [Int: Int]) {
        var last: [Int: Int] = [:], count: [Int: Int] = [:]
        for line in output.split(separator: "\n") where line.hasPrefix("ack ") {
            let parts = line.split(separator: " ")
            guard parts.count == 3, let c = Int(parts[1]), let i = Int(parts[2]) else { continue }
            last[c] = max(last[c] ?? -1, i)
            count[c, default: 0] += 1
        }
        return (last, count)
    }
}

/// A child process running the `objectgraph` tool, whose output is collected as it comes.
final class ToolProcess: Sendable {
    private let child: ChildProcess

    /// The tool, found as `runTool` finds it: next to the test bundle.
    static var toolURL: URL {
        let directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        let tool = directory.appendingPathComponent("objectgraph")
        if FileManager.default.fileExists(atPath: tool.path) { return tool }
        return directory.deletingLastPathComponent().appendingPathComponent("objectgraph")
    }

    init(_ arguments: [String], environment: [String: String] = [:]) throws {
        var env = ProcessInfo.processInfo.environment
        env["SWIFT_BACKTRACE"] = "enable=no"
        for (key, value) in environment { env[key] = value }
        child = try ChildProcess(Self.toolURL, arguments, environment: env, mergingErrors: false)
    }

    var output: String { String(decoding: child.standardOutput, as: UTF8.self) }
    var errors: String { String(decoding: child.standardError, as: UTF8.self) }

    /// Whether the child has not ended yet.
    var isRunning: Bool { child.isRunning }

    /// Sends a signal to the child.
    func signal(_ signal: Int32) { child.signal(signal) }

    /// Waits for the child to end and its output to be read; returns its exit status (or the signal
    /// that ended it) and why it ended.
    @discardableResult
    func wait() -> (status: Int32, reason: Process.TerminationReason) {
        let (status, signaled) = child.wait()
        return (status, signaled ? .uncaughtSignal : .exit)
    }

    /// Waits until the output has a line for which `condition` holds, or the time limit passes.
    func waitForOutput(timeout: TimeInterval, _ condition: (String) -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if condition(output) { return true }
            if !child.isRunning { return condition(output) }
            Thread.sleep(forTimeInterval: 0.005)
        }
        return condition(output)
    }
}
