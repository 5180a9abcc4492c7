import ArgumentParser
import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NotesServerCore
#if canImport(Glibc)
import Glibc
#endif

enum ServerKind: String, CaseIterable, ExpressibleByArgument, Sendable {
    case objectgraph, floor, fluent
    var title: String { ["objectgraph": "ObjectGraph (NotesServer)", "floor": "PostgresNIO floor", "fluent": "Fluent"][rawValue]! }
}

@main
struct LoadTest: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "A load test of NotesServer on PostgreSQL, beside the same routes on PostgresNIO alone and on Fluent.",
        subcommands: [Run.self, Serve.self], defaultSubcommand: Run.self)
}

/// One server, started by `run` as a child process.
struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Serves the notes routes (started by `run`).")
    @Option var kind: ServerKind
    @Option var postgres: String
    @Option(name: .customLong("port-file")) var portFile: String
    @Option var connections = 6
    @Option var port = 0

    func run() async throws {
        exitWhenParentIsGone()
        var logger = Logger(label: "\(kind.rawValue)-server")
        logger.logLevel = .info
        let url = URL(string: postgres)!
        let portFile = URL(fileURLWithPath: portFile)
        switch kind {
        case .objectgraph:
            let configuration = NotesServerConfiguration(postgres: url, host: "127.0.0.1", port: port)
            let container = try NotesServer.container(configuration, logger: logger)
            let application = NotesServer.application(configuration, container: container, logger: logger) { port in writePort(port, to: portFile) }
            try await NotesServer.serviceGroup(container: container, application: application, logger: logger).run()
        case .floor:
            try await FloorServer.run(postgres: url, port: port, connections: connections, portFile: portFile, logger: logger)
        case .fluent:
            try await FluentServer.run(postgres: url, port: port, connections: connections, portFile: portFile, logger: logger)
        }
    }
}

struct Run: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Runs the load test (the default command).")
    @Option(help: "Seconds of load for each server kind.") var duration: Double = 60
    @Option(help: "Concurrent clients (each a request at a time).") var clients = 64
    @Option(parsing: .upToNextOption, help: "The server kinds, in order.") var kinds: [ServerKind] = [.objectgraph, .floor, .fluent]
    @Option(help: "Restart PostgreSQL (pg_ctl restart -m fast) in the middle of the phases of these kinds: all, none, or a kind.")
    var restart = "all"
    @Option(help: "Connections of each server instance's pool (ObjectGraph's: 5 readers + 1 writer).") var connections = 6
    @Option(help: "The client's time-out per request, in seconds: a request without an answer by then is a hang.") var timeout: Int64 = 10
    @Option(help: "Where the cluster and the logs go (removed at the end).") var folder = "/tmp/objectgraph-loadtest-\(getpid())"
    @Option(help: "Seeded folders and notes per folder.") var folders = 20
    @Option var notesPerFolder = 10
    @Option(help: "A folder to copy the servers' and PostgreSQL's logs into after each phase (the run's folder is removed).")
    var logs: String?

    func run() async throws {
        var logger = Logger(label: "loadtest")
        logger.logLevel = .warning
        say("LoadTest: \(clients) clients × 2 instances per kind, \(duration) s each, kinds \(kinds.map(\.rawValue).joined(separator: ", ")), restart: \(restart)")
        #if DEBUG
        say("Build: debug (figures are not representative of a release build)")
        #else
        say("Build: release")
        #endif
        let cluster = try Cluster(folder: folder)
        var servers: [ServerProcess] = []
        let cleanUp = { (servers: [ServerProcess]) in
            for server in servers { server.stop() }
        }
        var reports: [PhaseReport] = []
        var failures: [String] = []
        do {
            for kind in kinds {
                try cluster.createDatabase(kind.rawValue)
                let url = cluster.url(kind.rawValue)
                servers = []
                for index in 0..<2 {
                    servers.append(try ServerProcess(name: "\(kind.rawValue)-\(index)", kind: kind, postgres: url, folder: cluster.folder, connections: connections))
                }
                let restarts = restart == "all" || restart == kind.rawValue
                let report = try await Phase(kind: kind, servers: servers, cluster: cluster, duration: duration, clients: clients,
                                             timeout: timeout, restart: restarts, folders: folders, notesPerFolder: notesPerFolder, logger: logger).run()
                cleanUp(servers)
                servers = []
                if let logs { shell("mkdir -p '\(logs)' && cp '\(cluster.folder)'/*.log '\(logs)/'") }
                report.print()
                failures += report.failures
                reports.append(report)
            }
        } catch {
            cleanUp(servers)
            cluster.stop()
            say("FAIL: \(error)")
            throw ExitCode(2)
        }
        cluster.stop()
        Summary(reports: reports).print()
        if failures.isEmpty {
            say("RESULT: PASS (restart and audit checks)")
        } else {
            say("RESULT: FAIL")
            for failure in failures { say("  - \(failure)") }
            throw ExitCode(1)
        }
    }
}

/// Writes a line to the standard output at once (print's output waits in a buffer when it goes to a file or a pipe).
func say(_ text: String) {
    FileHandle.standardOutput.write(Data((text + "\n").utf8))
}
