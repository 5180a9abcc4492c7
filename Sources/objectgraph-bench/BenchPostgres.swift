import Foundation
import Logging
import NIOCore
import NIOPosix
import ObjectGraphBenchCore
import PostgresNIO

/// The benchmark's PostgreSQL database (`--store postgres --url …`): the schema of each side's
/// stores, connections for the raw side, and the cleanup at the end of the run.
///
/// Every schema of a run starts with the run's prefix (`ogb_` and eight hex digits), so that two
/// runs on one database never share a table and the end of a run drops exactly its own.
final class BenchPostgres: Sendable {
    let url: URL
    let prefix: String
    private let host: String
    private let port: Int
    private let user: String
    private let password: String?
    private let database: String
    private let logger = Logger(label: "objectgraph-bench")

    init(url: String, prefix: String) throws {
        guard let components = URLComponents(string: url), components.scheme == "postgres" || components.scheme == "postgresql",
              let host = components.host, !host.isEmpty
        else { throw BenchError("--url must be postgres://user[:password]@host[:port]/database, not \(url)") }
        let database = String(components.path.drop { $0 == "/" })
        guard !database.isEmpty else { throw BenchError("--url names no database: \(url)") }
        if components.queryItems?.contains(where: { $0.name == "schema" }) == true {
            throw BenchError("--url must not name a schema: the benchmark makes schemas of its own, each starting with \(prefix)")
        }
        self.url = components.url!
        self.prefix = prefix
        self.host = host
        self.port = components.port ?? 5432
        self.user = components.user ?? "postgres"
        self.password = components.password
        self.database = database
    }

    /// A prefix for a new run: `ogb_` and eight hex digits.
    static func newPrefix() -> String {
        "ogb_" + String(UInt32.random(in: .min ... .max), radix: 16).leftPadded(to: 8)
    }

    /// The schema of one side's store: the run's prefix, the side, and the store's name with every
    /// character PostgreSQL would make us quote replaced by `_`.
    func schema(_ variant: BenchVariant, _ name: String) -> String {
        let cleaned = name.lowercased().map { $0.isASCII && ($0.isLetter || $0.isNumber) ? $0 : "_" }
        return "\(prefix)_\(variant.rawValue)_\(String(cleaned))"
    }

    /// The URL of an ObjectGraph store whose tables live in `schema`.
    func storeURL(schema: String) -> URL {
        var components = URLComponents(url: url, resolvingAgainstBaseURL: false)!
        components.queryItems = (components.queryItems ?? []) + [URLQueryItem(name: "schema", value: schema)]
        return components.url!
    }

    // MARK: - Connections

    /// A new connection whose `search_path` is `schema` (created when missing), or the database's
    /// default when nil.
    func connect(schema: String? = nil) throws -> PostgresConnection {
        var configuration = PostgresConnection.Configuration(
            host: host, port: port, username: user, password: password, database: database, tls: .disable)
        if let schema { configuration.options.additionalStartupParameters = [("search_path", schema)] }
        let connection = try PostgresConnection.connect(
            on: MultiThreadedEventLoopGroup.singleton.next(), configuration: configuration, id: 1, logger: logger
        ).wait()
        if let schema {
            do {
                try run(connection, "CREATE SCHEMA IF NOT EXISTS \(Self.quote(schema))")
            } catch {
                try? connection.close().wait()
                throw error
            }
        }
        return connection
    }

    /// Runs one statement with no parameters (DDL, `BEGIN`, `COMMIT`) and waits for it.
    func run(_ connection: PostgresConnection, _ sql: String) throws {
        _ = try connection.query(PostgresQuery(unsafeSQL: sql), logger: logger).wait()
    }

    /// The first column of the first row of `sql` as an integer (a count, a sum), 0 for none or NULL.
    func int64(_ connection: PostgresConnection, _ sql: String) throws -> Int64 {
        let result = try connection.query(PostgresQuery(unsafeSQL: sql), logger: logger).wait()
        guard let row = result.rows.first else { return 0 }
        return try row.decode(Int64?.self) ?? 0
    }

    /// Runs async work (PostgresNIO's prepared statements are async only) from the benchmark's
    /// synchronous sides, blocking this thread until it finishes. Time it inside `body`: the
    /// hand-over to the task and back is not PostgresNIO's cost.
    func blocking<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
        let outcome = BlockingOutcome<T>()
        let done = DispatchSemaphore(value: 0)
        Task {
            do { outcome.result = .success(try await body()) } catch { outcome.result = .failure(error) }
            done.signal()
        }
        done.wait()
        return try outcome.result!.get()
    }

    var requestLogger: Logger { logger }

    /// The server's version, for the report's header.
    func serverVersion() throws -> String {
        let connection = try connect()
        defer { try? connection.close().wait() }
        let result = try connection.query("SHOW server_version", logger: logger).wait()
        return try result.rows.first?.decode(String.self) ?? "?"
    }

    /// Drops one schema and everything in it.
    func dropSchema(_ schema: String) throws {
        let connection = try connect()
        defer { try? connection.close().wait() }
        try run(connection, "DROP SCHEMA IF EXISTS \(Self.quote(schema)) CASCADE")
    }

    /// Drops every schema of this run (the end of the command, unless `--keep`).
    func dropRunSchemas() throws {
        let connection = try connect()
        defer { try? connection.close().wait() }
        let result = try connection.query(
            "SELECT nspname FROM pg_namespace WHERE starts_with(nspname, \(prefix + "_"))", logger: logger
        ).wait()
        for row in result.rows {
            try run(connection, "DROP SCHEMA IF EXISTS \(Self.quote(try row.decode(String.self))) CASCADE")
        }
    }

    static func quote(_ identifier: String) -> String { "\"" + identifier.replacingOccurrences(of: "\"", with: "\"\"") + "\"" }
}

/// What a task run by ``BenchPostgres/blocking(_:)`` gave: written by the task before it signals,
/// read by the waiting thread after.
private final class BlockingOutcome<T>: @unchecked Sendable {
    var result: Result<T, any Error>?
}

extension String {
    fileprivate func leftPadded(to length: Int) -> String {
        count >= length ? self : String(repeating: "0", count: length - count) + self
    }
}
