import ArgumentParser
import Foundation
import Logging
import ObjectGraphCore
import ServiceLifecycle
import Synchronization

/// A server in miniature: a `ServiceGroup` running the container and a service that saves from
/// background contexts without pause. On SIGTERM the saving service stops submitting saves, the
/// container drains the ones in flight, and the program prints `drained` and exits 0.
///
/// The tool's root command is synchronous, so `run()` blocks the main thread on the group's task.
struct CrashServer: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "server", abstract: "Save continuously under a ServiceGroup until SIGTERM, then drain.")

    @Option(help: "The SQLite store's path.") var store: String
    @Option(help: "How many background contexts save at once.") var contexts = 3
    @Option(help: "Milliseconds of simulated work before each save.") var workMs = 20
    @Option(help: "The container's shutdown time limit (milliseconds).") var timeoutMs = 10_000

    func run() throws {
        let finished = DispatchSemaphore(value: 0)
        let failure = Mutex<(any Error)?>(nil)
        let (store, contexts, workMs, timeoutMs) = (self.store, self.contexts, self.workMs, self.timeoutMs)
        Task {
            do { try await Self.serve(store: store, contexts: contexts, workMs: workMs, timeoutMs: timeoutMs) }
            catch { failure.withLock { $0 = error } }
            finished.signal()
        }
        finished.wait()
        if let error = failure.withLock({ $0 }) { throw error }
        CrashSchedule.acknowledge("drained")
    }

    static func serve(store: String, contexts: Int, workMs: Int, timeoutMs: Int) async throws {
        let container: PersistentContainer
        do { container = try CrashSchedule.container(at: store) } catch { CrashSchedule.fail("cannot load the store: \(error)") }
        container.shutdownTimeout = .milliseconds(timeoutMs)
        var logger = Logger(label: "objectgraph._crash.server") { StreamLogHandler.standardError(label: $0) }
        logger.logLevel = .notice
        let saver = ContinuousSaver(container: container, contexts: contexts, workMs: workMs)
        let group = ServiceGroup(configuration: .init(
            services: [container, saver],   // shut down in reverse order: the saver first, then the container drains
            gracefulShutdownSignals: [.sigterm],
            logger: logger))
        try await group.run()
    }
}

/// Saves from background contexts, each save scheduling the next, until graceful shutdown.
struct ContinuousSaver: Service {
    let container: PersistentContainer
    let contexts: Int
    let workMs: Int

    func run() async throws {
        let stopped = Stop()
        for c in 0..<contexts {
            let context = container.newBackgroundContext()
            let first = try await context.perform { try CrashSchedule.savesMade(by: c, in: context) }
            Self.save(from: first, of: c, in: context, workMs: workMs, until: stopped)
        }
        CrashSchedule.acknowledge("ready")
        try? await gracefulShutdown()
        stopped.flag.store(true, ordering: .relaxed)
    }

    final class Stop: Sendable {
        let flag = Atomic<Bool>(false)
    }

    static func save(from i: Int, of c: Int, in context: ManagedObjectContext, workMs: Int, until stop: Stop) {
        context.perform {
            if workMs > 0 { Thread.sleep(forTimeInterval: Double(workMs) / 1000) }
            do { try CrashSchedule.save(i, of: c, in: context) } catch { CrashSchedule.fail("save \(i) of context \(c): \(error)") }
            if !stop.flag.load(ordering: .relaxed) { save(from: i + 1, of: c, in: context, workMs: workMs, until: stop) }
        }
    }
}
