import Foundation
import ObjectGraphPostgres
import Testing
@testable import ObjectGraphCore

/// A throwaway PostgreSQL cluster on 127.0.0.1, for the tests: `initdb` and `pg_ctl` of
/// PostgreSQL 15 (as the `postgres` user when the tests run as root), a temporary data folder, a
/// free port, trust authentication on loopback; stopped when the test process exits. The programs
/// are looked for in `OBJECTGRAPH_TEST_POSTGRES_BIN` when it is set, else in Debian's folder, else
/// on `PATH`. With `OBJECTGRAPH_TEST_POSTGRES_URL` set (`postgres://user@host:port/database`), the
/// tests use that server instead (and create their databases on it).
final class PostgresTestServer: Sendable {
    /// `postgres://user@127.0.0.1:port`, without a database.
    let serverURL: String
    let port: Int
    /// The data folder of a cluster the tests started; nil for a server they were given.
    let dataDirectory: URL?

    static let urlVariable = "OBJECTGRAPH_TEST_POSTGRES_URL"
    static let binariesVariable = "OBJECTGRAPH_TEST_POSTGRES_BIN"
    /// Where Debian's `postgresql` package puts PostgreSQL 15's programs.
    static let debianBinaries = URL(fileURLWithPath: "/usr/lib/postgresql/15/bin")

    /// The folder of `initdb`, `pg_ctl` and `psql`: `OBJECTGRAPH_TEST_POSTGRES_BIN`, else Debian's
    /// folder, else the folder on `PATH` that has `initdb`; nil when none has it.
    static let binariesFolder: URL? = {
        let environment = ProcessInfo.processInfo.environment
        let candidates: [URL]
        if let given = environment[binariesVariable] {
            candidates = [URL(fileURLWithPath: given)]
        } else {
            candidates = [debianBinaries] + (environment["PATH"] ?? "").split(separator: ":").map { URL(fileURLWithPath: String($0)) }
        }
        let initdb = candidates.lazy.map { $0.appendingPathComponent("initdb") }.first { FileManager.default.isExecutableFile(atPath: $0.path) }
        // The folder of the program itself, where pg_ctl and psql are too (PATH may hold a link to it).
        return initdb?.resolvingSymlinksInPath().deletingLastPathComponent()
    }()

    /// Whether the tests have a server: one given in `OBJECTGRAPH_TEST_POSTGRES_URL`, or PostgreSQL's
    /// programs to start one.
    static var isAvailable: Bool {
        ProcessInfo.processInfo.environment[urlVariable] != nil || binariesFolder != nil
    }

    /// One of PostgreSQL's programs; throws, saying where it was looked for, when there is none.
    static func program(_ name: String) throws -> String {
        guard let folder = binariesFolder else {
            throw ObjectGraphError(.io, "PostgreSQL's \(name) was not found (\(TestRequirements.postgresReason.rawValue))")
        }
        return folder.appendingPathComponent(name).path
    }

    /// The server the suites share, started on first use. Registers the PostgreSQL store's driver
    /// first, as a program that uses PostgreSQL does, so that every test given a database can add it.
    static let shared: Result<PostgresTestServer, any Error> = Result {
        PersistentStoreCoordinator.registerPostgresStore()
        if let given = ProcessInfo.processInfo.environment[urlVariable], let url = URLComponents(string: given) {
            var server = url
            server.path = ""
            return PostgresTestServer(serverURL: server.string ?? given, port: url.port ?? 5432, dataDirectory: nil)
        }
        return try PostgresTestServer.start()
    }

    private init(serverURL: String, port: Int, dataDirectory: URL?) {
        self.serverURL = serverURL
        self.port = port
        self.dataDirectory = dataDirectory
    }

    /// Starts a new cluster of its own (for a test that stops or restarts its server).
    static func start() throws -> PostgresTestServer {
        PersistentStoreCoordinator.registerPostgresStore()
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("objectgraph-pg-\(getpid())-\(UUID().uuidString.prefix(8))")
        let data = folder.appendingPathComponent("data")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        if geteuid() == 0 { try run("/bin/chown", ["-R", "postgres:postgres", folder.path]) }
        try asServerUser(try program("initdb"), ["-D", data.path, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C.UTF-8", "--no-sync"])
        let port = try freePort()
        let server = PostgresTestServer(serverURL: "postgres://postgres@127.0.0.1:\(port)", port: port, dataDirectory: data)
        try server.startServer()
        try watch(data: data, folder: folder)
        return server
    }

    /// Starts a watchdog, a shell in the background that outlives this process: when the test
    /// process has gone (however it ended: `exit`, a crash, a signal), it stops the cluster and
    /// removes its folder. (An `atexit` hook did not: test runners end in ways that skip it, and
    /// clusters were left running.)
    private static func watch(data: URL, folder: URL) throws {
        let stop = (geteuid() == 0 ? "/usr/sbin/runuser -u postgres -- " : "") + (try program("pg_ctl"))
        let script = """
            ( trap '' HUP INT TERM; while kill -0 \(getpid()) 2>/dev/null; do sleep 1; done; \
            \(stop) -D '\(data.path)' -m immediate -w stop; rm -rf '\(folder.path)' ) </dev/null >/dev/null 2>&1 &
            """
        try run("/bin/sh", ["-c", script])
    }

    /// Starts (or starts again) the server of a cluster the tests made. The shared server is used
    /// by every PostgreSQL suite at once, each coordinator with a pool and a listener of its own:
    /// under ThreadSanitizer, where the suites overlap longer, 200 connections ran out.
    func startServer() throws {
        guard let data = dataDirectory else { return }
        let options = "-p \(port) -c listen_addresses=127.0.0.1 -k \(data.deletingLastPathComponent().path) -c fsync=off -c max_connections=500"
        try Self.asServerUser(
            try Self.program("pg_ctl"),
            ["-D", data.path, "-o", options, "-l", data.deletingLastPathComponent().appendingPathComponent("log").path, "-w", "start"])
    }

    /// Stops the server (`fast`: its connections are closed, as when a server shuts down).
    func stopServer() throws {
        guard let data = dataDirectory else { return }
        try Self.asServerUser(try Self.program("pg_ctl"), ["-D", data.path, "-m", "fast", "-w", "stop"])
    }

    /// A new, empty database on the server; its `postgres://` URL.
    func makeDatabase(schema: String? = nil) throws -> URL {
        let name = "og_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased().prefix(16)
        try psql("CREATE DATABASE \(name)")
        return URL(string: "\(serverURL)/\(name)" + (schema.map { "?schema=\($0)" } ?? ""))!
    }

    /// Runs SQL with `psql` on the `postgres` database (or `database`).
    @discardableResult
    func psql(_ sql: String, database: String = "postgres") throws -> String {
        let psql = Self.binariesFolder.map { $0.appendingPathComponent("psql").path }.flatMap { FileManager.default.isExecutableFile(atPath: $0) ? $0 : nil }
        return try Self.run(psql ?? "/usr/bin/psql", ["\(serverURL)/\(database)", "-X", "-q", "-t", "-A", "-v", "ON_ERROR_STOP=1", "-c", sql])
    }

    /// A free TCP port on 127.0.0.1 (the kernel's choice for port 0).
    private static func freePort() throws -> Int {
        let socket = Foundation.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        try withUnsafeMutablePointer(to: &address) { pointer in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                guard bind(socket, $0, length) == 0, getsockname(socket, $0, &length) == 0 else {
                    throw ObjectGraphError(.io, "No free port on 127.0.0.1 (errno \(errno))")
                }
            }
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// Runs a PostgreSQL program as the `postgres` user when the tests run as root (PostgreSQL
    /// refuses to run as root), else as the current user.
    @discardableResult
    static func asServerUser(_ program: String, _ arguments: [String]) throws -> String {
        if geteuid() == 0 { return try run("/usr/sbin/runuser", ["-u", "postgres", "--", program] + arguments) }
        return try run(program, arguments)
    }

    /// Runs a program to its end; its output, or an error with its output. (``ChildProcess``, not
    /// Foundation's `Process`, whose `waitUntilExit()` can hang on a test's thread.)
    @discardableResult
    static func run(_ program: String, _ arguments: [String]) throws -> String {
        let child = try ChildProcess(
            URL(fileURLWithPath: program), arguments, environment: ProcessInfo.processInfo.environment.merging(["PGTZ": "UTC"]) { $1 },
            mergingErrors: true)
        let (status, signaled) = child.wait()
        let text = String(decoding: child.standardOutput, as: UTF8.self)
        guard status == 0 && !signaled else {
            throw ObjectGraphError(.io, "\(program) \(arguments.joined(separator: " ")) failed (\(status)): \(text)")
        }
        return text.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
