import ArgumentParser
import Foundation
import ObjectGraph
import ObjectGraphBenchCore
#if canImport(Glibc)
import Glibc
#endif

/// `objectgraph-bench remote-changes`: how long a commit by another process takes to be heard
/// (`.persistentStoreRemoteChange`), and what an idle watcher costs.
///
/// A child process (this program, `remote-changes --writer`) saves one object at a time into a
/// store with persistent history, and prints when each `save()` started and returned; this process
/// watches the store and notes when it hears each transaction. Both read `CLOCK_REALTIME`.
///
/// ```sh
/// swift run -c release objectgraph-bench remote-changes --commits 500 --interval-ms 10
/// ```
struct BenchRemoteChanges: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "remote-changes", abstract: "Measure remote-change latency across processes and an idle watcher's CPU.")

    @Option(help: "Saves the writer process makes.") var commits = 300
    @Option(help: "Milliseconds between two saves.") var intervalMs = 10
    @Option(help: "Seconds the watcher is left idle to measure its CPU time.") var idleSeconds = 10.0
    @Flag(help: "Be the writer (internal).") var writer = false
    @Option(help: "The store (with --writer).") var store: String?

    static let model = ManagedObjectModel(entities: [
        EntityDescription(name: "Entry", properties: [.attribute("name", .string), .attribute("score", .integer64)]),
    ])

    static func now() -> Int64 {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec)
    }

    static func cpuSeconds() -> Double {
        var usage = rusage()
        #if os(Linux)
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
        #else
        getrusage(RUSAGE_SELF, &usage)
        #endif
        return Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6 + Double(usage.ru_stime.tv_sec)
            + Double(usage.ru_stime.tv_usec) / 1e6
    }

    func run() throws {
        if writer { return try write() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("objectgraph-remote-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("remote.sqlite")
        let coordinator = PersistentStoreCoordinator(managedObjectModel: Self.model)
        try coordinator.addPersistentStore(type: .sqlite, at: url, options: [
            PersistentStoreOption.persistentHistoryTracking: true, PersistentStoreOption.remoteChangeNotificationPost: true,
        ])
        let storeID = coordinator.persistentStores[0].identifier

        // The idle watcher first: nothing commits, the watcher only waits.
        let cpuBefore = Self.cpuSeconds()
        Thread.sleep(forTimeInterval: idleSeconds)
        let idleCPU = Self.cpuSeconds() - cpuBefore

        let heard = HeardTimes()
        let observer = NotificationCenter.default.addObserver(forName: .persistentStoreRemoteChange, object: coordinator, queue: nil) { note in
            let at = Self.now()
            guard let token = note.userInfo?["historyToken"] as? PersistentHistoryToken,
                  let number = token.transactionNumbers[storeID] else { return }
            heard.note(number, at: at)
        }
        defer { NotificationCenter.default.removeObserver(observer) }

        let process = Process()
        process.executableURL = URL(fileURLWithPath: (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0])
        process.arguments = ["remote-changes", "--writer", "--store", url.path, "--commits", "\(commits)", "--interval-ms", "\(intervalMs)"]
        let output = Pipe()
        process.standardOutput = output
        let cpuStart = Self.cpuSeconds()
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw ValidationError("the writer exited with status \(process.terminationStatus)") }
        Thread.sleep(forTimeInterval: 0.5)
        let busyCPU = Self.cpuSeconds() - cpuStart

        var fromStart: [Double] = [], fromReturn: [Double] = []
        let times = heard.times
        var missed = 0
        for line in String(decoding: data, as: UTF8.self).split(separator: "\n") {
            let fields = line.split(separator: " ")
            guard fields.count == 4, fields[0] == "commit", let n = Int64(fields[1]), let start = Int64(fields[2]), let end = Int64(fields[3]) else { continue }
            guard let at = times[n] else {
                missed += 1
                continue
            }
            fromStart.append(Double(at - start) / 1e6)
            fromReturn.append(Double(max(0, at - end)) / 1e6)
        }
        func percentile(_ values: [Double], _ p: Double) -> String {
            guard !values.isEmpty else { return "-" }
            let sorted = values.sorted()
            return String(format: "%.2f", sorted[min(sorted.count - 1, Int(Double(sorted.count - 1) * p))])
        }
        print("remote-change latency across processes, \(fromStart.count) commits heard, \(missed) not heard one by one (ms):")
        print("| measured from | p50 | p90 | p99 | max |")
        print("|---|---:|---:|---:|---:|")
        print("| the writer's save() call | \(percentile(fromStart, 0.5)) | \(percentile(fromStart, 0.9)) | \(percentile(fromStart, 0.99)) | \(percentile(fromStart, 1)) |")
        print("| its return | \(percentile(fromReturn, 0.5)) | \(percentile(fromReturn, 0.9)) | \(percentile(fromReturn, 0.99)) | \(percentile(fromReturn, 1)) |")
        print(String(format: "idle watcher: %.3f s of CPU in %.0f s (%.3f %%)", idleCPU, idleSeconds, idleCPU / idleSeconds * 100))
        print(String(format: "watching %d commits: %.3f s of CPU in this process", commits, busyCPU))
    }

    private func write() throws {
        guard let store else { throw ValidationError("--writer needs --store") }
        let coordinator = PersistentStoreCoordinator(managedObjectModel: Self.model)
        try coordinator.addPersistentStore(type: .sqlite, at: URL(fileURLWithPath: store), options: [PersistentStoreOption.persistentHistoryTracking: true])
        let context = ManagedObjectContext(concurrencyType: .confinement)
        context.persistentStoreCoordinator = coordinator
        let storeID = coordinator.persistentStores[0].identifier
        for i in 0..<commits {
            let entry = context.insertNewObject(forEntityName: "Entry")
            entry.setValue("entry \(i)", forKey: "name")
            entry.setValue(Int64(i), forKey: "score")
            let start = Self.now()
            try context.save()
            let end = Self.now()
            let number = coordinator.currentPersistentHistoryToken(fromStores: nil)?.transactionNumbers[storeID] ?? -1
            print("commit \(number) \(start) \(end)")
            context.reset()
            if intervalMs > 0 { usleep(useconds_t(intervalMs * 1000)) }
        }
    }
}

/// When each transaction was heard (first time only), from the thread that posts the notifications.
private final class HeardTimes: @unchecked Sendable {  // `heard` is only touched under `lock`
    private let lock = NSLock()
    private var heard: [Int64: Int64] = [:]

    func note(_ number: Int64, at time: Int64) {
        lock.withLock { if heard[number] == nil { heard[number] = time } }
    }

    var times: [Int64: Int64] { lock.withLock { heard } }
}
