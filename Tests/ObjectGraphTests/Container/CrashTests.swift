import Foundation
import Testing
import ObjectGraph
import ObjectGraphCrashModels
@testable import ObjectGraphCore

/// Child processes save from background contexts and exit, are killed, or are stopped with
/// SIGTERM; the store is then checked: every acknowledged save is there, no save is partly there,
/// and SQLite finds the file sound.
@Suite("Crash and exit", .serialized)
struct CrashTests {
    let directory = TemporaryDirectory()

    func saver(_ store: URL, _ options: [String]) throws -> ToolProcess {
        try ToolProcess(["_crash", "saver", "--store", store.path] + options)
    }

    @Test("A program that returns from main right after submitting saves waits for them with the exit guard",
          arguments: ["return", "exit"])
    func exitGuardWaitsForSubmittedSaves(exit: String) throws {
        let store = directory.file("guard-\(exit).sqlite")
        let child = try saver(store, ["--contexts", "3", "--saves", "8", "--work-ms", "5", "--guard-ms", "10000", "--exit", exit])
        let (status, _) = child.wait()
        #expect(status == 0, "\(child.errors)")
        #expect(child.errors.isEmpty, "\(child.errors)")
        let acknowledged = CrashScenario.acknowledged(in: child.output)
        #expect(acknowledged.count == [0: 8, 1: 8, 2: 8], "every submitted save ran and returned before the exit")
        let state = try CrashScenario.check(store)
        #expect(state.saves == [0: 8, 1: 8, 2: 8])
    }

    @Test("Without the exit guard, exiting at once abandons the saves not yet made, and keeps the acknowledged ones")
    func withoutTheGuardQueuedSavesAreLost() throws {
        let store = directory.file("no-guard.sqlite")
        // Each save takes half a second of work: far longer than exiting takes, even under a sanitizer.
        let child = try saver(store, ["--contexts", "3", "--saves", "4", "--work-ms", "500"])
        let (status, _) = child.wait()
        #expect(status == 0, "\(child.errors)")
        let acknowledged = CrashScenario.acknowledged(in: child.output)
        let state = try CrashScenario.check(store)
        let made = state.saves.values.reduce(0, +)
        #expect(made < 12, "the program exited before its saves ran: the guard is what makes them wait")
        for (c, last) in acknowledged.last { #expect(state.saves[c, default: 0] > last, "acknowledged save \(last) of context \(c) is missing") }
    }

    @Test("The exit guard runs the main queue while it waits, so the view context's saves finish")
    func exitGuardServicesTheMainQueue() throws {
        let store = directory.file("view.sqlite")
        let child = try saver(store, ["--contexts", "2", "--saves", "4", "--guard-ms", "10000", "--view"])
        let (status, _) = child.wait()
        #expect(status == 0, "\(child.errors)")
        #expect(child.errors.isEmpty, "\(child.errors)")
        let state = try CrashScenario.check(store)
        #expect(state.saves == [0: 4, 1: 4, 2: 4], "context 2 is the view context")
    }

    @Test("The exit guard gives up at its time limit and says what it abandons")
    func exitGuardIsBounded() throws {
        let store = directory.file("bounded.sqlite")
        let start = Date()
        let child = try saver(store, ["--contexts", "2", "--saves", "3", "--guard-ms", "300", "--slow-ms", "20000"])
        let (status, _) = child.wait()
        let elapsed = Date().timeIntervalSince(start)
        #expect(status == 0)
        #expect(elapsed < 10, "the guard waited \(elapsed) s for a block of 20 s; its limit is 0.3 s")
        #expect(child.errors.contains("gave up with 1 block(s)"), "\(child.errors)")
        #expect(try CrashScenario.check(store).saves == [0: 3, 1: 3])
    }

    @Test("exit() from a block on one of the container's contexts is reported, not waited on for ever")
    func exitFromInsideABlockIsReported() throws {
        let store = directory.file("in-block.sqlite")
        let child = try saver(store, ["--contexts", "2", "--saves", "3", "--guard-ms", "10000", "--exit", "exit-in-block"])
        let (status, _) = child.wait()
        #expect(status == 0)
        #expect(child.errors.contains("exit() was called from a block running on context 'Crash.background.1'"), "\(child.errors)")
        let acknowledged = CrashScenario.acknowledged(in: child.output)
        let state = try CrashScenario.check(store)
        for (c, last) in acknowledged.last { #expect(state.saves[c, default: 0] > last) }
    }

    @Test("A program killed with SIGKILL at random moments, 100 times, loses no acknowledged save and never shows half of one")
    func killedAtRandomMoments() throws {
        let seed = UInt64(ProcessInfo.processInfo.environment["OBJECTGRAPH_CRASH_SEED"] ?? "") ?? UInt64.random(in: 0...UInt64(UInt32.max))
        var random = SeededRandom(seed: seed)
        let start = Date()
        var acknowledgedTotal = 0, unacknowledgedCommits = 0, killsBeforeFirstAck = 0
        // Ten stores, each killed ten times: every run resumes from what the store holds.
        for round in 0..<10 {
            let store = directory.file("killed-\(round).sqlite")
            var known: [Int: Int] = [:]   // saves per context, as of the last check
            for kill in 0..<10 {
                let child = try saver(store, ["--contexts", "3"])
                if kill % 5 == 0 {
                    // Any moment from the start: opening the store, recovering its WAL, the first saves.
                    Thread.sleep(forTimeInterval: Double.random(in: 0...0.1, using: &random))
                } else {
                    // A moment while saves are under way, whatever the machine's load.
                    let saving = child.waitForOutput(timeout: 60) { $0.contains("ack ") }
                    try #require(saving, "seed \(seed): the child made no save: \(child.errors)")
                    Thread.sleep(forTimeInterval: Double.random(in: 0...0.05, using: &random))
                }
                let wasRunning = child.isRunning
                child.signal(SIGKILL)
                let (status, reason) = child.wait()
                try #require(wasRunning && reason == .uncaughtSignal && status == SIGKILL,
                             "seed \(seed), round \(round), kill \(kill): the child ended by itself (\(status)): \(child.errors)")
                let acknowledged = CrashScenario.acknowledged(in: child.output)
                let state = try CrashScenario.check(store, deep: kill == 9)
                if acknowledged.count.isEmpty { killsBeforeFirstAck += 1 }
                for c in 0..<3 {
                    let before = known[c, default: 0], now = state.saves[c, default: 0]
                    let acked = acknowledged.count[c, default: 0]
                    if acked > 0 {
                        #expect(acknowledged.last[c]! - acked + 1 == before, "seed \(seed): context \(c) resumed at the wrong save")
                    }
                    // Every acknowledged save is in; at most one more (committed, killed before its ack).
                    #expect(now >= before + acked && now <= before + acked + 1,
                            "seed \(seed), round \(round), kill \(kill): context \(c) had \(before) saves, acknowledged \(acked) more, the store has \(now)")
                    acknowledgedTotal += acked
                    unacknowledgedCommits += now - before - acked
                }
                known = state.saves
            }
        }
        let elapsed = Date().timeIntervalSince(start)
        print("killed 100 times in \(String(format: "%.1f", elapsed)) s (seed \(seed)): \(acknowledgedTotal) acknowledged saves, \(unacknowledgedCommits) committed but killed before the acknowledgement, \(killsBeforeFirstAck) kills before any save")
    }

    @Test("On SIGTERM a ServiceGroup stops the saving service, then the container drains every save in flight")
    func sigtermDrainsSaves() throws {
        let store = directory.file("server.sqlite")
        let child = try ToolProcess(["_crash", "server", "--store", store.path, "--contexts", "3", "--work-ms", "20"])
        let saving = child.waitForOutput(timeout: 30) { CrashScenario.acknowledged(in: $0).count.values.reduce(0, +) >= 6 }
        #expect(saving, "\(child.errors)")
        child.signal(SIGTERM)
        let (status, reason) = child.wait()
        #expect(reason == .exit && status == 0, "\(child.errors)")
        #expect(child.output.hasSuffix("drained\n"), "\(child.output.suffix(200))")
        let acknowledged = CrashScenario.acknowledged(in: child.output)
        let state = try CrashScenario.check(store)
        // Drained: every save submitted ran to the end and was acknowledged; none was cut short.
        #expect(state.saves == acknowledged.count)
    }

    @Test("The default store lives in $XDG_DATA_HOME/<program>/<name>.sqlite, and loading creates the folder")
    func defaultLocationFollowsXDG() throws {
        let data = directory.file("xdg/data")
        let child = try ToolProcess(["_crash", "default-location", "--name", "Defaults"], environment: ["XDG_DATA_HOME": data.path])
        let (status, _) = child.wait()
        #expect(status == 0, "\(child.errors)")
        let expected = data.appendingPathComponent("objectgraph/Defaults.sqlite")
        #expect(child.output.contains("store \(expected.path)\n"), "\(child.output)")
        #expect(FileManager.default.fileExists(atPath: expected.path))
        #expect(try CrashScenario.check(expected).saves == [0: 1])
    }
}

@Suite("Crash store check")
struct CrashCheckTests {
    let directory = TemporaryDirectory()

    @Test("The store check catches a save that is only partly there")
    func checkCatchesPartialSaves() throws {
        let url = directory.file("partial.sqlite")
        let coordinator = PersistentStoreCoordinator(managedObjectModel: CrashModel.make())
        let store = try coordinator.addPersistentStore(type: .sqlite, at: url)
        let context = ManagedObjectContext(concurrencyType: .confinement)
        context.persistentStoreCoordinator = coordinator
        // Save 0 of context 0, written as if its last note had not made it.
        let count = CrashModel.notes(context: 0, save: 0)
        let folder = context.insert("Folder", ["name": "0.0", "context": 0, "index": 0, "count": count])
        for j in 0..<(count - 1) { _ = context.insert("Note", ["title": "0.0.\(j)", "rank": j, "folder": folder]) }
        _ = context.insert("Tally", ["context": 0, "saves": 1, "folders": 1, "notes": count])
        try context.save()
        try coordinator.removePersistentStore(store)
        withKnownIssue("a note of save 0 is missing") {
            _ = try CrashScenario.check(url)
        }
    }
}
