import AsyncHTTPClient
import Foundation
import Histogram
import Logging
import NIOCore

/// The latency figures of a set of requests.
struct Figures: Sendable {
    var requests = 0
    var seconds = 0.0
    var p50 = 0.0, p99 = 0.0, max = 0.0  // milliseconds
    var rps: Double { seconds > 0 ? Double(requests) / seconds : 0 }

    init(_ samples: [Sample], seconds: Double) {
        var histogram = Histogram<UInt64>(lowestDiscernibleValue: 1, highestTrackableValue: 120_000_000, numberOfSignificantValueDigits: .three)
        for sample in samples { _ = histogram.record(Swift.max(1, Swift.min(sample.duration / 1000, 120_000_000))) }
        requests = samples.count
        self.seconds = seconds
        if !samples.isEmpty {
            p50 = Double(histogram.valueAtPercentile(50)) / 1000
            p99 = Double(histogram.valueAtPercentile(99)) / 1000
            max = Double(histogram.max) / 1000
        }
    }

    var line: String { String(format: "%6d requests  %8.1f req/s  p50 %7.2f ms  p99 %8.2f ms  max %8.2f ms", requests, rps, p50, p99, max) }
}

/// What a restart did and what the instances answered around it.
struct RestartReport: Sendable {
    var restartSeconds = 0.0  // from pg_ctl restart to accepting connections
    var outageRequests = 0
    var outage503WithRetryAfter = 0
    var outageSlowest = 0.0  // ms
    var outageOther: [Outcome: Int] = [:]
    var recovery: [Double?] = []  // seconds from accepting connections to each instance's first 2xx
}

struct PhaseReport: Sendable {
    var kind: ServerKind
    var duration: Double
    var whole: Figures
    var steady: Figures
    var steadyNote: String
    var byOperation: [(String, Figures)]
    var errors: [Outcome: Int]
    var conflicts409 = 0
    var collisionPairs = 0
    var collision409s = 0
    var restart: RestartReport?
    var audit: AuditResult
    var failures: [String] = []
    var checks: [String] = []

    func print() {
        say("\n== \(kind.title): 2 instances, \(duration) s")
        say("  all requests:    \(whole.line)")
        say("  steady (\(steadyNote)): \(steady.line)")
        for (name, figures) in byOperation { say("    \(name.padding(toLength: 7, withPad: " ", startingAt: 0))        \(figures.line)") }
        say("  409 Conflict: \(conflicts409) (collision pairs: \(collisionPairs), of whose PATCHes \(collision409s) got 409)")
        say("  not 2xx or 409, by kind: " + (errors.isEmpty ? "none" : errors.sorted { $0.key < $1.key }.map { "\($0.key.label) \($0.value)" }.joined(separator: ", ")))
        if let restart {
            say(String(format: "  restart: pg_ctl restart -m fast; PostgreSQL accepted connections again after %.2f s", restart.restartSeconds))
            say("    requests sent during the outage: \(restart.outageRequests), 503 with Retry-After: \(restart.outage503WithRetryAfter), slowest answer \(String(format: "%.0f", restart.outageSlowest)) ms"
                + (restart.outageOther.isEmpty ? "" : ", other: " + restart.outageOther.sorted { $0.key < $1.key }.map { "\($0.key.label) \($0.value)" }.joined(separator: ", ")))
            say("    first 2xx after PostgreSQL accepted connections: "
                + restart.recovery.enumerated().map { "instance \($0.offset) \($0.element.map { String(format: "%.3f s", $0) } ?? "never")" }.joined(separator: ", "))
        }
        say("  audit: \(audit.acknowledgedCreates) acknowledged creates, \(audit.acknowledgedUpdates) acknowledged updates, \(audit.rowsInDatabase) notes in the database")
        say("    lost creates \(audit.lostCreates), lost updates \(audit.lostUpdates), half-done \(audit.halfDone), refused but applied \(audit.refusedButApplied), "
            + "unexplained rows \(audit.unexplainedRows); unacknowledged creates found committed: \(audit.inDoubtCreatesFound) (of which answered 503: \(audit.inDoubtCreatesAnswered503))")
        for example in audit.examples { say("      \(example)") }
        for check in checks { say("  \(check)") }
    }
}

struct Phase {
    let kind: ServerKind
    let servers: [ServerProcess]
    let cluster: Cluster
    let duration: Double
    let clients: Int
    let timeout: Int64
    let restart: Bool
    let folders: Int
    let notesPerFolder: Int
    let logger: Logger

    func run() async throws -> PhaseReport {
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool = .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: clients + 8)
        configuration.timeout = .init(connect: .seconds(timeout), read: .seconds(timeout))
        let http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        do {
            let report = try await run(http: http)
            try await http.shutdown()
            return report
        } catch {
            try? await http.shutdown()
            throw error
        }
    }

    private func run(http: HTTPClient) async throws -> PhaseReport {
        let requester = Requester(http: http, timeout: .seconds(timeout))
        let urls = servers.map(\.baseURL)
        // The seed, through the first instance.
        var seedLog = ClientLog()
        var folderIDs: [UUID] = []
        var noteIDs: [UUID] = []
        for f in 0..<folders {
            let answer = await requester.send(.POST, urls[0] + "/folders", json: json(NewFolderJSON(name: "folder \(f)")))
            guard answer.outcome == .status(201), let body = answer.body, let folder = try? jsonDecoder.decode(FolderJSON.self, from: body) else {
                throw LoadTestError("\(kind.rawValue): seeding a folder answered \(answer.outcome.label)")
            }
            folderIDs.append(folder.id)
            for n in 0..<notesPerFolder {
                let title = "seed-\(f)-\(n)", text = "seed body \(f)-\(n)"
                let answer = await requester.send(.POST, urls[0] + "/notes", json: json(NewNoteJSON(title: title, body: text, folder: folder.id)))
                guard answer.outcome == .status(201), let body = answer.body, let note = try? jsonDecoder.decode(NoteJSON.self, from: body) else {
                    throw LoadTestError("\(kind.rawValue): seeding a note answered \(answer.outcome.label)")
                }
                noteIDs.append(note.id)
                seedLog.creates.append(CreateRecord(id: note.id, title: title, body: text, folder: folder.id, outcome: answer.outcome))
            }
        }
        let pool = NotePool(noteIDs)
        let probeNote = noteIDs[0]
        let start = now()
        let end = start + UInt64(duration * 1e9)

        // The clients, a prober per instance, and the restart half-way.
        let restartTimes = Locked<(restart: UInt64, ready: UInt64, seconds: Double)?>(nil)
        var log = seedLog
        var probes: [Sample] = []
        await withTaskGroup(of: (ClientLog?, [Sample]).self) { group in
            for number in 0..<clients {
                let client = Client(number: number, kind: kind, instances: urls, folders: folderIDs, notes: pool, requester: requester, end: end)
                group.addTask { (await client.run(), []) }
            }
            for (index, url) in urls.enumerated() {
                group.addTask { (nil, await probe(instance: index, url: url, note: probeNote, requester: requester, end: end)) }
            }
            if restart {
                let cluster = self.cluster
                group.addTask {
                    try? await Task.sleep(for: .nanoseconds(Int64(end - start) / 2))
                    let began = now()
                    let (ok, ready) = await withCheckedContinuation { (done: CheckedContinuation<(Bool, UInt64), Never>) in
                        Thread.detachNewThread {
                            // Watch the server go down and come back, at 20 ms intervals, while pg_ctl restarts it.
                            let restarted = Locked<UInt64?>(nil)
                            Thread.detachNewThread {
                                let ok = cluster.restart()
                                restarted.withLock { $0 = ok ? now() : 0 }
                            }
                            var sawDown = false
                            var ready: UInt64 = 0
                            while true {
                                let finished = restarted.withLock { $0 }
                                let accepting = cluster.acceptsConnections()
                                if !accepting { sawDown = true }
                                if sawDown && accepting { ready = now(); break }
                                if let finished, !sawDown || finished == 0 { ready = finished; break }  // too fast to see, or failed
                                usleep(20_000)
                            }
                            while restarted.withLock({ $0 }) == nil { usleep(20_000) }
                            done.resume(returning: (restarted.withLock { $0 } != 0, ready))
                        }
                    }
                    if ok { restartTimes.withLock { $0 = (began, ready, Double(ready - began) / 1e9) } }
                    else { restartTimes.withLock { $0 = (began, 0, -1) } }
                    return (nil, [])
                }
            }
            for await (clientLog, samples) in group {
                if let clientLog { log.merge(clientLog) }
                probes += samples
            }
        }
        let finished = now()
        let seconds = Double(finished - start) / 1e9

        // Figures.
        let load = log.samples
        let whole = Figures(load, seconds: seconds)
        var steady = whole
        var steadyNote = "no restart: all"
        var report = PhaseReport(
            kind: kind, duration: duration, whole: whole, steady: whole, steadyNote: "", byOperation: [], errors: [:],
            audit: AuditResult())
        let times = restartTimes.withLock { $0 }
        var windowStart: UInt64 = .max, windowEnd: UInt64 = 0
        if let times, times.ready > 0 {
            windowStart = times.restart
            windowEnd = times.ready + 5_000_000_000
            let kept = load.filter { $0.end < windowStart || $0.start > windowEnd }
            steady = Figures(kept, seconds: seconds - Double(min(windowEnd, finished) - windowStart) / 1e9)
            steadyNote = "without the restart and 5 s after"
        }
        report.steady = steady
        report.steadyNote = steadyNote
        let steadySamples = load.filter { $0.end < windowStart || $0.start > windowEnd }
        report.byOperation = [Operation.list, .get, .create, .update].map { op in
            (op.name, Figures(steadySamples.filter { $0.operation == op }, seconds: steady.seconds))
        }
        for sample in load where !sample.outcome.isSuccess {
            if sample.outcome == .status(409) { report.conflicts409 += 1 } else { report.errors[sample.outcome, default: 0] += 1 }
        }
        report.collisionPairs = log.collisionPairs
        report.collision409s = log.collision409s
        let hung = (load + probes).filter { $0.outcome == .timeout }
        let hangs = hung.count
        if !hung.isEmpty {
            // When each started, against the restart (or the phase's start), to tell what they waited for.
            let origin = restartTimes.withLock { $0 }?.restart ?? start
            let described = hung.sorted { $0.start < $1.start }.prefix(12).map { sample in
                String(format: "%@ on instance %d at %+.2f s", sample.operation.name, sample.instance, (Double(sample.start) - Double(origin)) / 1e9)
            }
            report.checks.append("hangs (start, from the restart\(restart ? "" : " or the phase's start")): " + described.joined(separator: ", ") + (hung.count > 12 ? ", …" : ""))
        }
        let gate = kind == .objectgraph
        func check(_ passed: Bool, _ text: String) {
            report.checks.append("\(passed ? "PASS" : (gate ? "FAIL" : "MISS (not gating)")): \(text)")
            if !passed && gate { report.failures.append("\(kind.rawValue): \(text)") }
        }
        if restart {
            guard let times, times.ready > 0 else {
                check(false, "pg_ctl restart failed; see \(cluster.folder)/restart.log")
                report.audit = Audit.check(log: log, stored: try await Audit.storedNotes(kind: kind, url: cluster.url(kind.rawValue), logger: logger))
                return report
            }
            var restartReport = RestartReport()
            restartReport.restartSeconds = times.seconds
            let outage = (load + probes).filter { $0.start >= times.restart && $0.start <= times.ready }
            restartReport.outageRequests = outage.count
            var badOutage = 0
            for sample in outage {
                restartReport.outageSlowest = max(restartReport.outageSlowest, Double(sample.duration) / 1e6)
                if sample.outcome == .status(503) && sample.retryAfter {
                    restartReport.outage503WithRetryAfter += 1
                    if sample.duration > 5_000_000_000 { badOutage += 1 }
                } else if sample.outcome.isSuccess || sample.outcome == .status(409) {
                    if sample.duration > 5_000_000_000 { badOutage += 1 }
                } else {
                    restartReport.outageOther[sample.outcome, default: 0] += 1
                    badOutage += 1
                }
            }
            for index in servers.indices {
                let first = (load + probes).filter { $0.instance == index && $0.outcome.isSuccess && $0.end > times.ready && $0.start >= times.restart }
                    .map(\.end).min()
                restartReport.recovery.append(first.map { Double($0 - times.ready) / 1e9 })
            }
            report.restart = restartReport
            // How many got a 503 is reported above, not checked: an outage of a fraction of a second may
            // see every request it holds answered 2xx once the server is back, which is as good.
            check(badOutage == 0, "every request during the outage answered 503 with Retry-After (or 2xx/409) within 5 s (\(badOutage) did not)")
            for (index, recovery) in restartReport.recovery.enumerated() {
                check((recovery ?? .infinity) <= 5, "instance \(index) served again within 5 s of PostgreSQL accepting connections (\(recovery.map { String(format: "%.3f s", $0) } ?? "never"))")
            }
        }
        check(hangs == 0, "no request hung (no answer within \(timeout) s): \(hangs)")
        report.audit = Audit.check(log: log, stored: try await Audit.storedNotes(kind: kind, url: cluster.url(kind.rawValue), logger: logger))
        let audit = report.audit
        if !audit.passed {
            report.failures.append("\(kind.rawValue): audit: lost creates \(audit.lostCreates), lost updates \(audit.lostUpdates), half-done \(audit.halfDone), refused but applied \(audit.refusedButApplied), unexplained rows \(audit.unexplainedRows)")
        }
        report.checks.append("\(audit.passed ? "PASS" : "FAIL"): audit, lost writes \(audit.lostCreates + audit.lostUpdates), half-done or inconsistent \(audit.halfDone + audit.refusedButApplied + audit.unexplainedRows)")
        return report
    }
}

/// The targets: ObjectGraph against the floor and Fluent, on the steady figures.
struct Summary {
    let reports: [PhaseReport]

    func print() {
        say("\n== Summary (steady figures: without the restart and the 5 s after it)")
        for report in reports { say("  \(report.kind.rawValue.padding(toLength: 12, withPad: " ", startingAt: 0)) \(report.steady.line)") }
        guard let og = reports.first(where: { $0.kind == .objectgraph })?.steady else { return }
        func target(_ passed: Bool, _ text: String) { say("  \(passed ? "PASS" : "MISS"): \(text)") }
        if let floor = reports.first(where: { $0.kind == .floor })?.steady {
            target(og.rps >= 0.7 * floor.rps, String(format: "ObjectGraph rps ≥ 0.7 × floor: %.1f vs %.1f (%.2f×)", og.rps, 0.7 * floor.rps, og.rps / floor.rps))
            target(og.p99 <= 1.5 * floor.p99, String(format: "ObjectGraph p99 ≤ 1.5 × floor: %.2f ms vs %.2f ms (%.2f×)", og.p99, 1.5 * floor.p99, og.p99 / floor.p99))
        }
        if let fluent = reports.first(where: { $0.kind == .fluent })?.steady {
            target(og.rps >= fluent.rps, String(format: "ObjectGraph rps ≥ Fluent: %.1f vs %.1f", og.rps, fluent.rps))
            target(og.p99 <= fluent.p99, String(format: "ObjectGraph p99 ≤ Fluent: %.2f ms vs %.2f ms", og.p99, fluent.p99))
        }
    }
}
