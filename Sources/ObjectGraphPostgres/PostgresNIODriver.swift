import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOSSL
import ObjectGraphCore
import PostgresNIO
import _ConnectionPoolModule

/// Closes a connection, keeping it alive until it is closed (PostgresNIO requires a connection to
/// be closed before it goes away).
private func closeQuietly(_ connection: PostgresConnection) {
    connection.close().whenComplete { _ in withExtendedLifetime(connection) {} }
}

/// How long a caller waits for a connection to open, and for a statement's reply, before it takes
/// the connection for lost: closes it (the server rolls back its transaction) and throws a
/// connection error, rather than blocking its thread forever on a reply that never comes.
enum PostgresDeadline {
    static let connect: TimeAmount = .seconds(30)
    static let reply: TimeAmount = .seconds(120)
    /// After how many seconds of failing to open connections, with none open, PostgresClient's pool
    /// fails the callers waiting for one (and new ones, until a connection opens again).
    static let circuitBreaker = 15
}

extension EventLoopFuture where Value: Sendable {
    /// The future's value, waiting at most `timeout`; after that, `onTimeout` runs (it should fail
    /// the future, for example by closing its connection) and a connection error is thrown.
    ///
    /// - Parameter connection: the connection the future's statement runs on: once it is closed
    ///   and the future still has no outcome, a connection error is thrown (checked every second). A
    ///   server that shuts down ends its sessions with an error and closes them, and a statement sent
    ///   on one just then may otherwise wait for its reply until `timeout`.
    func wait(
        atMost timeout: TimeAmount, on connection: PostgresConnection? = nil, doing: @autoclosure () -> String, onTimeout: () -> Void
    ) throws -> Value {
        let done = DispatchSemaphore(value: 0)
        let outcome = NIOLockedValueBox<Result<Value, any Error>?>(nil)
        whenComplete { result in
            outcome.withLockedValue { $0 = result }
            done.signal()
        }
        let deadline = DispatchTime.now() + .nanoseconds(Int(timeout.nanoseconds))
        var closedSince: DispatchTime?
        while true {
            let slice = min(deadline, DispatchTime.now() + .seconds(1))
            if done.wait(timeout: slice) == .success { break }
            if DispatchTime.now() >= deadline {
                onTimeout()
                let seconds = timeout.nanoseconds / 1_000_000_000
                throw PostgresDriverError(kind: .connection, message: "no reply from the server within \(seconds) s while \(doing()); the connection was closed")
            }
            guard let connection, connection.isClosed else { continue }
            // Closed: the outcome is the future's if it comes within a slice more, else the connection's loss.
            if let since = closedSince, DispatchTime.now() >= since + .seconds(1) {
                throw PostgresDriverError(kind: .connection, message: "the server closed the connection while \(doing()), without a reply")
            }
            closedSince = closedSince ?? DispatchTime.now()
        }
        return try outcome.withLockedValue { $0! }.get()
    }
}

/// The driver ``PersistentStoreCoordinator/registerPostgresStore()`` registers: PostgresNIO connections.
final class PostgresNIODriverFactory: PostgresDriverFactory {
    static func connect(url: URL, maximumConnections: Int, client: (any Sendable)?, logger: Logger) throws -> any PostgresDriver {
        let url = try PostgresURL(url)
        var appClient: PostgresClient?
        if let client {
            guard let client = client as? PostgresClient else {
                throw ObjectGraphError(
                    .unsupported,
                    "Store option \(PersistentStoreOption.postgresClient) must be a PostgresClient, not \(type(of: client))",
                    key: PersistentStoreOption.postgresClient)
            }
            appClient = client
        }
        return try PostgresNIODriver(url: url, maximumConnections: maximumConnections, poolTimeout: url.poolTimeout, client: appClient, logger: logger)
    }
}

/// What a `postgres://` URL says: server, user, password, database, TLS.
struct PostgresURL {
    var host: String
    var port: Int
    var user: String
    var password: String?
    var database: String
    /// `sslmode`: `disable` (the default), `require` or `verify-full`.
    var tlsMode: String
    /// `pool_timeout`: how long a caller waits for a connection of the pool, in seconds.
    var poolTimeout: Double

    init(_ url: URL) throws {
        guard let components = URLComponents(url: url, resolvingAgainstBaseURL: false),
              ["postgres", "postgresql"].contains(components.scheme?.lowercased() ?? "")
        else {
            throw PostgresDriverError(kind: .other, message: "'\(url.absoluteString)' is not a postgres:// URL")
        }
        guard let host = components.host, !host.isEmpty else {
            throw PostgresDriverError(kind: .other, message: "The URL '\(Self.redacted(url))' names no host")
        }
        let database = String(components.path.drop { $0 == "/" })
        guard !database.isEmpty else {
            throw PostgresDriverError(kind: .other, message: "The URL '\(Self.redacted(url))' names no database (postgres://user@host:port/database)")
        }
        self.host = host
        port = components.port ?? 5432
        user = components.user?.removingPercentEncoding ?? "postgres"
        password = components.password?.removingPercentEncoding
        self.database = database.removingPercentEncoding ?? database
        tlsMode = components.queryItems?.first { $0.name == "sslmode" }?.value ?? "disable"
        let timeout = components.queryItems?.first { $0.name == "pool_timeout" }?.value
        guard let seconds = timeout.map(Double.init) ?? 10, seconds >= 0, seconds.isFinite else {
            throw PostgresDriverError(kind: .other, message: "The URL '\(Self.redacted(url))' has pool_timeout=\(timeout ?? ""), not a number of seconds")
        }
        poolTimeout = seconds
    }

    /// The TLS the URL's `sslmode` asks for; nil for none.
    private func tlsConfiguration() throws -> TLSConfiguration? {
        switch tlsMode {
        case "disable":
            return nil
        case "require":
            var configuration = TLSConfiguration.makeClientConfiguration()
            configuration.certificateVerification = .none
            return configuration
        case "verify-full":
            return .makeClientConfiguration()
        default:
            throw PostgresDriverError(kind: .other, message: "Unknown sslmode '\(tlsMode)' (ObjectGraph knows disable, require and verify-full)")
        }
    }

    /// A connection's configuration (the connections of a store's own outside its pool: listening, snapshots).
    func configuration() throws -> PostgresConnection.Configuration {
        let tls: PostgresConnection.Configuration.TLS = try tlsConfiguration().map { .require(try NIOSSLContext(configuration: $0)) } ?? .disable
        return PostgresConnection.Configuration(host: host, port: port, username: user, password: password, database: database, tls: tls)
    }

    /// The pool's configuration.
    func clientConfiguration() throws -> PostgresClient.Configuration {
        let tls: PostgresClient.Configuration.TLS = try tlsConfiguration().map { .require($0) } ?? .disable
        return PostgresClient.Configuration(host: host, port: port, username: user, password: password, database: database, tls: tls)
    }

    /// The URL without its password, for messages.
    static func redacted(_ url: URL) -> String {
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: false), components.password != nil else { return url.absoluteString }
        components.password = "…"
        return components.string ?? url.absoluteString
    }
}

/// The connections of a PostgreSQL store: PostgresNIO's pool (`PostgresClient`), used from
/// synchronous code. A caller leases a connection for a transaction or a read, then blocks on the
/// connection's futures (never on an event loop: the store is called from contexts' queues and
/// tasks).
///
/// The client is the store's own, run by a task the store starts and cancels when it closes, or
/// the app's (``PersistentStoreOption/postgresClient``), which the app runs (in its
/// `ServiceGroup`, for one) and which the store leaves running.
final class PostgresNIODriver: PostgresDriver, Sendable {
    private let configuration: PostgresConnection.Configuration
    private let logger: Logger
    private let group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    private let client: PostgresClient
    /// The task that runs the store's own client; nil for the app's.
    private let runner: Task<Void, Never>?
    /// Where the leases' tasks (and the store's own client) run: an event loop, never a thread
    /// of Swift's cooperative pool, which synchronous callers may be blocking.
    private let executor: EventLoopTaskExecutor
    private let maximumConnections: Int
    /// How long a caller waits for a connection, in seconds.
    private let poolTimeout: Double
    /// Fails the waits for a connection of the store's own pool when it cannot open one.
    private let health = PoolHealth()
    /// The reads that run as named prepared statements.
    fileprivate let preparedStatements = PostgresPreparedStatements()
    private let closed = NIOLockedValueBox(false)
    private let nextID = NIOLockedValueBox(1)

    /// - Parameter client: the app's client, which the app runs; nil for one of the store's own,
    ///   of at most `maximumConnections` connections.
    init(
        url: PostgresURL, maximumConnections: Int, poolTimeout: Double = 10, client: PostgresClient? = nil, logger: Logger
    ) throws {
        configuration = try url.configuration()
        self.logger = logger
        self.maximumConnections = max(1, maximumConnections)
        self.poolTimeout = poolTimeout
        executor = EventLoopTaskExecutor(MultiThreadedEventLoopGroup.singleton.next())
        // Connect once now, so that a wrong address, user or database fails here with the server's
        // reason (the pool would retry, and a caller would only see its time-out).
        let first = try Self.connect(configuration, id: 0, on: group, logger: logger)
        closeQuietly(first)
        if let client {
            self.client = client
            runner = nil
        } else {
            var clientConfiguration = try url.clientConfiguration()
            clientConfiguration.options.maximumConnections = self.maximumConnections
            clientConfiguration.options.connectTimeout = .seconds(Int64(PostgresDeadline.connect.nanoseconds / 1_000_000_000))
            var poolLogger = logger
            poolLogger.handler = PoolWatchingLogHandler(wrapped: logger.handler, health: health)
            let client = PostgresClient(configuration: clientConfiguration, eventLoopGroup: group, backgroundLogger: poolLogger)
            self.client = client
            runner = Task.detached(executorPreference: executor) { await client.run() }
        }
    }

    deinit { close() }

    private static func connect(
        _ configuration: PostgresConnection.Configuration, id: Int, on group: any EventLoopGroup, logger: Logger
    ) throws -> PostgresConnection {
        do {
            let connecting = PostgresConnection.connect(on: group.next(), configuration: configuration, id: id, logger: logger)
            return try connecting.wait(atMost: PostgresDeadline.connect, doing: "connecting") {
                // A connection that opens after all is closed at once.
                connecting.whenSuccess(closeQuietly)
            }
        } catch {
            throw Self.translate(error, connecting: true)
        }
    }

    /// Refuses new work once the store has closed its driver.
    private func throwIfClosed() throws(PostgresDriverError) {
        if closed.withLockedValue({ $0 }) { throw PostgresDriverError(kind: .other, message: "The PostgreSQL store was closed") }
    }

    /// A connection leased from the pool; a ``PostgresDriverError/Kind/poolExhausted`` error when
    /// none is free within the pool's time-out, a ``PostgresDriverError/Kind/connection`` error
    /// when the store's own pool fails to open one while the caller waits.
    private func checkOut() throws -> Lease {
        try throwIfClosed()
        let lease = Lease()
        let client = self.client
        health.waits(lease)
        defer { health.stoppedWaiting(lease) }
        // Detached: a task made here would inherit the caller's task-local values (a pinned query
        // generation among them) and keep them alive until it ends, after the caller has gone on.
        let task = Task.detached(executorPreference: executor) {
            do {
                try await client.withConnection { connection in
                    await withCheckedContinuation { lease.hold(connection, until: $0) }
                }
            } catch {
                lease.fail(error)
            }
        }
        switch lease.wait(seconds: poolTimeout) {
        case .leased:
            return lease
        case .failed(let error):
            task.cancel()
            throw Self.translate(error)
        case .timedOut:
            task.cancel()
            throw poolExhausted()
        }
    }

    /// Gives a connection back to the pool, closed first when it is not usable (the pool then
    /// opens another when one is needed).
    private func checkIn(_ lease: Lease, usable: Bool) {
        if !usable, let connection = lease.connection {
            closeQuietly(connection)
            // Given back only once closed: the pool hears of the close from the connection's close
            // future, and a connection given back while still closing could be handed out again
            // (a read run again after a lost connection then failed on the same one).
            _ = try? connection.closeFuture.wait()
        }
        lease.release()
    }

    @discardableResult
    func transaction<T>(isolation: PostgresIsolation, readOnly: Bool, _ body: (any PostgresSession) throws -> T) throws -> T {
        var lease = try checkOut()
        let prepared = readOnly ? preparedStatements : nil
        var session = try Session(lease, prepared: prepared, logger: logger)
        let begin = "BEGIN ISOLATION LEVEL \(isolation.rawValue)\(readOnly ? " READ ONLY" : "")"
        do {
            try session.execute(begin, [])
        } catch let error as PostgresDriverError where error.kind == .connection {
            // An idle connection the server closed (a restart) that did not look closed yet: nothing
            // ran on it, so the transaction starts again on a new one.
            checkIn(lease, usable: false)
            lease = try checkOut()
            do {
                session = try Session(lease, prepared: prepared, logger: logger)
                try session.execute(begin, [])
            } catch {
                checkIn(lease, usable: false)
                throw error
            }
        } catch {
            checkIn(lease, usable: false)
            throw error
        }
        var usable = true
        defer { checkIn(lease, usable: usable) }
        let result: T
        do {
            result = try body(session)
        } catch {
            // The server rolls back a transaction whose connection is lost; otherwise roll it back here.
            do { try session.execute("ROLLBACK", []) } catch { usable = false }
            throw error
        }
        do {
            try session.execute("COMMIT", [])
        } catch var error as PostgresDriverError {
            usable = false
            if error.kind == .connection { error.commitInDoubt = true }
            throw error
        }
        return result
    }

    func readOneStatement<T>(_ body: (any PostgresSession) throws -> T) throws -> T {
        try body(PooledStatementSession(driver: self, reads: true))
    }

    func writeOneStatement<T>(_ body: (any PostgresSession) throws -> T) throws -> T {
        try body(PooledStatementSession(driver: self, reads: false))
    }

    /// Runs one statement outside a transaction for a synchronous caller: one task on an event
    /// loop leases a connection from the pool, runs the statement (as the prepared statement
    /// `prepared` names, or unnamed), and gives the connection back, while the caller waits once
    /// for the outcome. A caller that held the connection itself would wait for the lease, then for
    /// the reply, and hand the connection back through the pool's task: three hand-offs between
    /// threads where this makes one.
    ///
    /// - Throws: ``StatementFailure``, which says whether the statement reached a connection.
    fileprivate func runPooled(
        _ sql: String, _ binds: PostgresBindings, prepared: PostgresNamedStatement.Text?
    ) throws(StatementFailure) -> StatementResult {
        do {
            try throwIfClosed()
        } catch {
            throw StatementFailure(error: error, sent: false)
        }
        let statement = PooledStatement()
        health.waits(statement)
        defer { health.stoppedWaiting(statement) }
        let client = self.client, logger = self.logger
        let task = Task.detached(executorPreference: executor) {
            do {
                let result = try await client.withConnection { connection -> StatementResult in
                    guard statement.started(on: connection) else { throw CancellationError() }
                    if let prepared {
                        let rows = try await PostgresNamedStatement.run(prepared, bindings: binds, on: connection, logger: logger)
                        return StatementResult(rows: rows, count: rows.count)
                    }
                    let reply: EventLoopFuture<PostgresQueryResult> = connection.query(PostgresQuery(unsafeSQL: sql, binds: binds), logger: logger)
                    let result = try await reply.get()
                    return StatementResult(rows: result.rows, count: result.metadata.rows ?? 0)
                }
                statement.finish(.success(result))
            } catch {
                statement.finish(.failure(error))
            }
        }
        switch statement.wait(poolTimeout: poolTimeout) {
        case .finished(.success(let result)):
            return result
        case .finished(.failure(let error)):
            throw StatementFailure(error: Self.translate(error), sent: statement.wasSent)
        case .failed(let error):
            task.cancel()
            throw StatementFailure(error: Self.translate(error), sent: false)
        case .poolExhausted:
            task.cancel()
            throw StatementFailure(error: poolExhausted(), sent: false)
        case .noReply(let seconds):
            throw StatementFailure(
                error: PostgresDriverError(kind: .connection, message: "no reply from the server within \(seconds) s while running \(sql.prefix(80)); the connection was closed"),
                sent: true)
        case .connectionClosed:
            throw StatementFailure(
                error: PostgresDriverError(kind: .connection, message: "the server closed the connection while running \(sql.prefix(80)), without a reply"),
                sent: true)
        }
    }

    func query(_ sql: String, _ parameters: [PostgresValue]) async throws -> [[PostgresValue]] {
        let query = PostgresQuery(unsafeSQL: sql, binds: try Session.binds(parameters))
        let logger = self.logger
        var retried = false
        while true {
            do {
                return try await withLeasedConnection { connection in
                    var result: [[PostgresValue]] = []
                    for try await row in try await connection.query(query, logger: logger) {
                        var cells: [PostgresValue] = []
                        try Session.decode(row, into: &cells)
                        result.append(cells)
                    }
                    return result
                }
            } catch let failure as LeaseFailure {
                throw failure.error
            } catch {
                let error = Self.translate(error)
                // An idle connection the server closed (a restart): a read runs again, once.
                if error.kind == .connection && !retried {
                    retried = true
                    continue
                }
                throw error
            }
        }
    }

    /// Runs `body` with a connection of the pool, suspending the caller (no thread waits) until
    /// one is free, at most the pool's time-out.
    private func withLeasedConnection<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> T) async throws -> T {
        try throwIfClosed()
        let wait = AsyncLeaseWait()
        health.waits(wait)
        defer { health.stoppedWaiting(wait) }
        let client = self.client
        let task = Task.detached(executorPreference: executor) { () async throws -> T in
            try await client.withConnection { connection in
                guard wait.leased() else { throw CancellationError() }
                return try await body(connection)
            }
        }
        wait.watch { task.cancel() }
        let exhausted = poolExhausted()
        let timer = Task.detached(executorPreference: executor) { [poolTimeout] in
            try await Task.sleep(nanoseconds: UInt64(poolTimeout * 1e9))
            wait.fail(exhausted)
        }
        defer { timer.cancel() }
        do {
            return try await withTaskCancellationHandler { try await task.value } onCancel: { task.cancel() }
        } catch {
            if let failure = wait.failure { throw LeaseFailure(error: Self.translate(failure)) }
            throw error
        }
    }

    /// No connection came: the pool's time-out, or the pool failing to open one.
    private struct LeaseFailure: Error {
        var error: PostgresDriverError
    }

    /// The error of a caller that waited the pool's time-out for a connection.
    private func poolExhausted() -> PostgresDriverError {
        PostgresDriverError(
            kind: .poolExhausted,
            message: runner == nil
                ? "no connection of the app's PostgresClient was free, or could be opened, within \(poolTimeout) s (pool_timeout)"
                : "all \(maximumConnections) connections of the pool stayed in use for \(poolTimeout) s (pool_timeout)")
    }

    func listen(
        channel: String, handler: @escaping @Sendable (String) -> Void, reconnected: @escaping @Sendable () -> Void
    ) throws -> any PostgresListener {
        let listener = NIOListener(driver: self, channel: channel, handler: handler, reconnected: reconnected)
        try listener.start()
        return listener
    }

    /// Stops the store's own client (its task's cancellation closes its connections); leaves the
    /// app's running. Leases under way end as they would; new ones are refused.
    func close() {
        let first = closed.withLockedValue { closed -> Bool in
            defer { closed = true }
            return !closed
        }
        if first { runner?.cancel() }
    }

    func exportSnapshot() throws -> any PostgresExportedSnapshot {
        let connection = try dedicatedConnection()
        let session = Session(connection: connection, prepared: nil, logger: logger)
        do {
            try session.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", [])
            guard case .text(let id)? = try session.query("SELECT pg_export_snapshot()", []).first?.first else {
                throw PostgresDriverError(kind: .other, message: "pg_export_snapshot() returned no snapshot")
            }
            return ExportedSnapshot(id: id, connection: connection)
        } catch {
            closeQuietly(connection)
            throw Self.translate(error)
        }
    }

    /// A connection of its own for a listener.
    fileprivate func dedicatedConnection() throws -> PostgresConnection {
        try throwIfClosed()
        let id = nextID.withLockedValue { id -> Int in
            defer { id += 1 }
            return id
        }
        return try Self.connect(configuration, id: id, on: group, logger: logger)
    }

    /// A PostgresNIO or SwiftNIO error as a driver error.
    ///
    /// - Parameter connecting: whether the error ended an attempt to open a connection.
    static func translate(_ error: any Error, connecting: Bool = false) -> PostgresDriverError {
        if let error = error as? PostgresDriverError { return error }
        if let error = error as? PSQLError {
            switch error.code {
            case .server:
                let info = error.serverInfo
                var message = info?[.message] ?? "\(error)"
                if let detail = info?[.detail] { message += " (\(detail))" }
                // FATAL and PANIC end an open session: the server closes the connection after it
                // (57P01 when a backend is terminated or the server shuts down). The error may arrive
                // as a statement's reply, or as the reply to the next statement when it came while
                // the connection was idle; either way the connection is lost, and what ran in its
                // transaction was rolled back. While connecting, a FATAL error is the server's
                // refusal (a missing database, a wrong password) and stays a server error.
                let severity = info?[.severity] ?? info?[.localizedSeverity]
                let kind: PostgresDriverError.Kind = !connecting && (severity == "FATAL" || severity == "PANIC") ? .connection : .server
                return PostgresDriverError(kind: kind, sqlState: info?[.sqlState], message: message, constraint: info?[.constraintName])
            case .connectionError, .serverClosedConnection, .clientClosedConnection, .uncleanShutdown, .sslUnsupported:
                return PostgresDriverError(kind: .connection, message: "\(error.code)\(error.underlying.map { ": \($0)" } ?? "")")
            default:
                return PostgresDriverError(kind: .other, message: String(reflecting: error))
            }
        }
        if let error = error as? ConnectionPoolError {
            switch error {
            case .connectionCreationCircuitBreakerTripped:
                return PostgresDriverError(kind: .connection, message: "the pool could not open a connection for \(PostgresDeadline.circuitBreaker) s")
            case .poolShutdown:
                return PostgresDriverError(kind: .other, message: "The PostgreSQL store's connection pool (PostgresClient) is shut down")
            default:
                return PostgresDriverError(kind: .other, message: "\(error)")
            }
        }
        if error is ChannelError || error is IOError || error is NIOConnectionError {
            return PostgresDriverError(kind: .connection, message: "\(error)")
        }
        return PostgresDriverError(kind: .other, message: "\(error)")
    }
}

/// The one statement of a read or a write outside a transaction (``PostgresNIODriver/readOneStatement(_:)``,
/// ``PostgresNIODriver/writeOneStatement(_:)``), run on a connection of the pool when the body
/// sends it (``PostgresNIODriver/runPooled(_:_:prepared:)``).
private final class PooledStatementSession: StatementRunning {
    private let driver: PostgresNIODriver
    /// A read: it may run as a prepared statement, and runs again once when its connection was lost
    /// (an idle connection the server closed, in a restart). A write's lost connection leaves its
    /// commit in doubt.
    private let reads: Bool
    private var ran = false

    init(driver: PostgresNIODriver, reads: Bool) {
        self.driver = driver
        self.reads = reads
    }

    func run(_ sql: String, _ parameters: [PostgresValue]) throws -> StatementResult {
        precondition(
            !ran,
            "PostgresNIODriver: a read or write outside a transaction ran a second statement (\(sql.prefix(80))); several statements run in a transaction")
        ran = true
        let binds = try Session.binds(parameters)
        guard reads else {
            do {
                return try driver.runPooled(sql, binds, prepared: nil)
            } catch {
                // Outside a transaction a statement commits as it ends: lost on the way, it may have.
                var lost = error.error
                if lost.kind == .connection && error.sent { lost.commitInDoubt = true }
                throw lost
            }
        }
        let types = Session.types(parameters)
        var prepared = driver.preparedStatements.name(for: sql, types: types).map {
            PostgresNamedStatement.Text(name: $0, sql: sql, types: types)
        }
        var retried = false
        while true {
            do {
                return try driver.runPooled(sql, binds, prepared: prepared)
            } catch {
                if error.error.kind == .server, prepared != nil {
                    // Refused as a prepared statement, for example when a table it reads changed
                    // its columns after the connection prepared it ("cached plan must not change
                    // result type"): it runs unnamed from now on, and now, as a read changes nothing.
                    driver.preparedStatements.refuse(sql, types: types)
                    prepared = nil
                    continue
                }
                if error.error.kind == .connection, error.sent, !retried {
                    retried = true
                    continue
                }
                throw error.error
            }
        }
    }
}

/// A statement's rows, and how many rows it returned or changed.
private struct StatementResult: Sendable {
    var rows: [PostgresRow]
    var count: Int
}

/// A session that runs each statement to a ``StatementResult``; the rows' cells are decoded
/// here, the same way for every session.
private protocol StatementRunning: PostgresSession {
    func run(_ sql: String, _ parameters: [PostgresValue]) throws -> StatementResult
}

extension StatementRunning {
    func query(_ sql: String, _ parameters: [PostgresValue]) throws -> [[PostgresValue]] {
        try run(sql, parameters).rows.map { row in
            var cells: [PostgresValue] = []
            try Session.decode(row, into: &cells)
            return cells
        }
    }

    @discardableResult
    func execute(_ sql: String, _ parameters: [PostgresValue]) throws -> Int {
        try run(sql, parameters).count
    }

    /// Each row's cells decoded into one array that is reused from row to row.
    func forEachRow(_ sql: String, _ parameters: [PostgresValue], _ body: ([PostgresValue]) throws -> Void) throws {
        var cells: [PostgresValue] = []
        for row in try run(sql, parameters).rows {
            cells.removeAll(keepingCapacity: true)
            try Session.decode(row, into: &cells)
            try body(cells)
        }
    }
}

/// Why ``PostgresNIODriver/runPooled(_:_:prepared:)`` failed, and whether the statement had
/// reached a connection (a write that did may have committed).
private struct StatementFailure: Error {
    var error: PostgresDriverError
    var sent: Bool
}

/// A statement ``PostgresNIODriver/runPooled(_:_:prepared:)`` runs in a task for a waiting
/// caller: waiting for a connection (failed by the pool's time-out or by ``PoolHealth``), then
/// running on one (failed by the reply's deadline or the connection's loss), then finished.
private final class PooledStatement: PoolWaiter {
    enum Outcome {
        case finished(Result<StatementResult, any Error>)
        /// ``PoolHealth`` failed the wait: the pool cannot open connections.
        case failed(any Error)
        case poolExhausted
        case noReply(seconds: Int64)
        case connectionClosed
    }

    private enum State {
        case waiting
        case running(PostgresConnection)
        case finished(Result<StatementResult, any Error>, sent: Bool)
        case failed(any Error)
        /// The caller stopped waiting for a connection.
        case abandoned
    }

    private let state = NIOLockedValueBox(State.waiting)
    private let done = DispatchSemaphore(value: 0)

    /// Called by the task with the pool's connection: whether the caller still waits for it.
    func started(on connection: PostgresConnection) -> Bool {
        state.withLockedValue { state in
            guard case .waiting = state else { return false }
            state = .running(connection)
            return true
        }
    }

    /// Called by the task with the statement's outcome (or the pool's error).
    func finish(_ result: Result<StatementResult, any Error>) {
        let waiting = state.withLockedValue { state -> Bool in
            switch state {
            case .waiting:
                state = .finished(result, sent: false)
            case .running:
                state = .finished(result, sent: true)
            case .finished, .failed, .abandoned:
                return false
            }
            return true
        }
        if waiting { done.signal() }
    }

    func fail(_ error: any Error) {
        let waiting = state.withLockedValue { state -> Bool in
            guard case .waiting = state else { return false }
            state = .failed(error)
            return true
        }
        if waiting { done.signal() }
    }

    /// Whether the statement reached a connection.
    var wasSent: Bool {
        state.withLockedValue { state in
            switch state {
            case .running: true
            case .finished(_, let sent): sent
            case .waiting, .failed, .abandoned: false
            }
        }
    }

    /// Waits for the outcome: at most `poolTimeout` seconds for a connection, then at most the
    /// reply's deadline (``PostgresDeadline/reply``) for the statement; a connection that closes
    /// without a reply ends the wait a second later. A connection that comes after the pool's
    /// time-out goes back to the pool at once.
    func wait(poolTimeout: Double) -> Outcome {
        let start = DispatchTime.now()
        let poolDeadline = start + .nanoseconds(Int(poolTimeout * 1e9))
        let replyDeadline = start + .nanoseconds(Int(PostgresDeadline.reply.nanoseconds))
        var closedSince: DispatchTime?
        while done.wait(timeout: .now() + .seconds(1)) == .timedOut {
            let now = DispatchTime.now()
            let running = state.withLockedValue { state -> PostgresConnection?? in
                switch state {
                case .waiting:
                    guard now >= poolDeadline else { return .some(nil) }
                    state = .abandoned
                    return nil
                case .running(let connection):
                    return .some(connection)
                case .finished, .failed, .abandoned:
                    // Signalled meanwhile: the next wait returns at once.
                    return .some(nil)
                }
            }
            guard let running else { return .poolExhausted }
            guard let connection = running else { continue }
            if now >= replyDeadline {
                closeQuietly(connection)
                return .noReply(seconds: PostgresDeadline.reply.nanoseconds / 1_000_000_000)
            }
            guard connection.isClosed else { continue }
            // Closed: the outcome is the statement's if it comes within a second more, else the connection's loss.
            if let since = closedSince, now >= since + .seconds(1) { return .connectionClosed }
            closedSince = closedSince ?? now
        }
        return state.withLockedValue { state -> Outcome in
            switch state {
            case .finished(let result, _): return .finished(result)
            case .failed(let error): return .failed(error)
            case .waiting, .running, .abandoned: preconditionFailure("PooledStatement.wait: signalled without an outcome")
            }
        }
    }
}

/// Statements on one checked-out connection.
private struct Session: StatementRunning {
    let connection: PostgresConnection
    /// The statements that run prepared (in a read-only transaction); nil: all run unnamed.
    let prepared: PostgresPreparedStatements?
    let logger: Logger

    init(connection: PostgresConnection, prepared: PostgresPreparedStatements?, logger: Logger) {
        self.connection = connection
        self.prepared = prepared
        self.logger = logger
    }

    /// On a leased connection.
    init(_ lease: Lease, prepared: PostgresPreparedStatements?, logger: Logger) throws {
        guard let connection = lease.connection else {
            throw PostgresDriverError(kind: .other, message: "PostgresNIODriver: a session on a connection given back to the pool")
        }
        self.init(connection: connection, prepared: prepared, logger: logger)
    }

    /// A row's cells, decoded, appended to `cells`.
    static func decode(_ row: PostgresRow, into cells: inout [PostgresValue]) throws {
        cells.reserveCapacity(cells.count + row.count)
        for cell in row { cells.append(try value(cell)) }
    }

    /// The types PostgreSQL reads `parameters` as: a prepared statement's parameter types, which
    /// with its text name it (NULL: unspecified, the server infers it).
    static func types(_ parameters: [PostgresValue]) -> [PostgresDataType] {
        parameters.map { parameter in
            switch parameter {
            case .null: .null
            case .bool: .bool
            case .int: .int8
            case .double: .float8
            case .text: .text
            case .bytes: .bytea
            case .array(let element, _): ArrayParameter(element: element, values: []).psqlType
            }
        }
    }

    /// A statement's parameters as PostgresNIO binds them.
    static func binds(_ parameters: [PostgresValue]) throws -> PostgresBindings {
        var binds = PostgresBindings(capacity: parameters.count)
        for parameter in parameters {
            switch parameter {
            case .null: binds.appendNull()
            case .bool(let v): binds.append(v)
            case .int(let v): binds.append(v)
            case .double(let v): binds.append(v)
            case .text(let v): binds.append(v)
            case .bytes(let v): binds.append(ByteBuffer(bytes: v))
            case .array(let element, let values): try binds.append(ArrayParameter(element: element, values: values))
            }
        }
        return binds
    }

    func run(_ sql: String, _ parameters: [PostgresValue]) throws -> StatementResult {
        let binds = try Self.binds(parameters)
        let types = prepared == nil ? [] : Self.types(parameters)
        if let prepared, let name = prepared.name(for: sql, types: types) {
            do {
                let rows = try runPrepared(PostgresNamedStatement.Text(name: name, sql: sql, types: types), binds)
                return StatementResult(rows: rows, count: rows.count)
            } catch let error as PostgresDriverError where error.kind == .server {
                // Refused as a prepared statement, for example when a table it reads changed its
                // columns after the connection prepared it ("cached plan must not change result
                // type"): it runs unnamed from now on. The error aborted the transaction, so it
                // cannot run again in this one.
                prepared.refuse(sql, types: types)
                throw error
            }
        }
        do {
            let result = try connection.query(PostgresQuery(unsafeSQL: sql, binds: binds), logger: logger)
                .wait(atMost: PostgresDeadline.reply, on: connection, doing: "running \(sql.prefix(80))") { closeQuietly(connection) }
            return StatementResult(rows: result.rows, count: result.metadata.rows ?? 0)
        } catch {
            throw PostgresNIODriver.translate(error)
        }
    }

    /// `text`'s statement as a named prepared statement (prepared first when the connection has
    /// not yet), run in a task on the connection's event loop, which the calling thread waits for.
    private func runPrepared(_ text: PostgresNamedStatement.Text, _ binds: PostgresBindings) throws -> [PostgresRow] {
        let connection = self.connection, logger = self.logger
        let promise = connection.eventLoop.makePromise(of: [PostgresRow].self)
        Task.detached(executorPreference: EventLoopTaskExecutor(connection.eventLoop)) {
            do {
                promise.succeed(try await PostgresNamedStatement.run(text, bindings: binds, on: connection, logger: logger))
            } catch {
                promise.fail(error)
            }
        }
        do {
            return try promise.futureResult
                .wait(atMost: PostgresDeadline.reply, on: connection, doing: "running \(text.sql.prefix(80))") { closeQuietly(connection) }
        } catch {
            throw PostgresNIODriver.translate(error)
        }
    }

    /// A cell as a value, by its type.
    /// A `bigint[]` cell's elements. A one-dimensional array in the binary format is read here
    /// (PostgresNIO's generic array decoding cost about a microsecond an element, a batch delete's
    /// 10,000 keys a quarter of its time); anything else is left to PostgresNIO.
    private static func int8Array(_ cell: PostgresCell) throws -> [PostgresValue] {
        guard cell.format == .binary, var bytes = cell.bytes,
              let dimensions = bytes.readInteger(as: Int32.self), bytes.readInteger(as: Int32.self) != nil,  // has NULLs: checked per element
              bytes.readInteger(as: UInt32.self) == PostgresDataType.int8.rawValue
        else { return try cell.decode([Int64].self).map { .int($0) } }
        if dimensions == 0 { return [] }
        guard dimensions == 1, let count = bytes.readInteger(as: Int32.self), count >= 0, bytes.readInteger(as: Int32.self) != nil else {
            return try cell.decode([Int64].self).map { .int($0) }
        }
        var elements: [PostgresValue] = []
        elements.reserveCapacity(Int(count))
        for _ in 0..<count {
            guard let length = bytes.readInteger(as: Int32.self) else { break }
            if length == -1 {
                elements.append(.null)
            } else if length == 8, let value = bytes.readInteger(as: Int64.self) {
                elements.append(.int(value))
            } else {
                break
            }
        }
        guard elements.count == Int(count), bytes.readableBytes == 0 else {
            throw PostgresDriverError(kind: .other, message: "column \(cell.columnName) is not a well-formed bigint[]")
        }
        return elements
    }

    static func value(_ cell: PostgresCell) throws -> PostgresValue {
        guard cell.bytes != nil, cell.dataType != .void else { return .null }  // void: a function that returns nothing
        do {
            switch cell.dataType {
            case .bool: return .bool(try cell.decode(Bool.self))
            case .int2, .int4, .int8, .oid: return .int(try cell.decode(Int64.self))
            case .int8Array: return .array(.bigint, try int8Array(cell))
            case .float4, .float8: return .double(try cell.decode(Double.self))
            case .bytea: return .bytes(try cell.decode(Data.self))
            case .text, .varchar, .name, .bpchar, .uuid: return .text(try cell.decode(String.self))
            default:
                // Anything else (numeric among them) as the text the server writes for it.
                guard cell.format == .text, var bytes = cell.bytes, let text = bytes.readString(length: bytes.readableBytes) else {
                    throw PostgresDriverError(kind: .other, message: "column \(cell.columnName) has the type \(cell.dataType), which ObjectGraph does not read (cast it to text)")
                }
                return .text(text)
            }
        } catch let error as PostgresDriverError {
            throw error
        } catch {
            throw PostgresDriverError(kind: .other, message: "column \(cell.columnName) (\(cell.dataType)) could not be read: \(error)")
        }
    }
}

/// An exported snapshot: its transaction stays open on its connection until released (or until
/// the snapshot goes away), which closes the connection and so ends the transaction.
private final class ExportedSnapshot: PostgresExportedSnapshot {
    let id: String
    private let connection: NIOLockedValueBox<PostgresConnection?>

    init(id: String, connection: PostgresConnection) {
        self.id = id
        self.connection = NIOLockedValueBox(connection)
    }

    deinit { release() }

    func release() {
        let open = connection.withLockedValue { connection -> PostgresConnection? in
            defer { connection = nil }
            return connection
        }
        open.map(closeQuietly)
    }
}

/// An array parameter in PostgreSQL's binary format, NULL elements included (PostgresNIO's own
/// arrays have none): the number of dimensions, whether any element is NULL, the element type,
/// the length and lower bound, then each element as its length (-1 for NULL) and its bytes.
private struct ArrayParameter: PostgresThrowingDynamicTypeEncodable {
    let element: PostgresArrayElement
    let values: [PostgresValue]

    var psqlType: PostgresDataType {
        switch element {
        case .bigint: .int8Array
        case .double: .float8Array
        case .boolean: .boolArray
        case .text: .textArray
        case .bytea: .byteaArray
        }
    }

    var psqlFormat: PostgresFormat { .binary }

    private var elementType: PostgresDataType {
        switch element {
        case .bigint: .int8
        case .double: .float8
        case .boolean: .bool
        case .text: .text
        case .bytea: .bytea
        }
    }

    func encode<JSONEncoder: PostgresJSONEncoder>(into buffer: inout ByteBuffer, context: PostgresEncodingContext<JSONEncoder>) throws {
        buffer.writeInteger(values.isEmpty ? 0 : 1, as: Int32.self)
        buffer.writeInteger(values.contains { if case .null = $0 { true } else { false } } ? 1 : 0, as: Int32.self)
        buffer.writeInteger(elementType.rawValue)
        guard !values.isEmpty else { return }
        // The header's 12 bytes, and the elements' lengths and (for the fixed-size types) values.
        let fixedSize = switch element {
        case .bigint, .double: 8
        case .boolean: 1
        case .text, .bytea: 0
        }
        buffer.reserveCapacity(minimumWritableBytes: 12 + values.count * (4 + fixedSize))
        buffer.writeInteger(Int32(values.count))
        buffer.writeInteger(1, as: Int32.self)
        guard fixedSize == 0 else {
            // Fixed-size elements go straight into the buffer's bytes, with one capacity check for
            // the whole array: through `writeInteger`, each element's two writes cost more than the
            // rest of a batch insert's statement (exclusivity checks and bounds of the buffer's storage).
            try buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: values.count * (4 + fixedSize)) { bytes in
                var offset = 0
                func store<T: FixedWidthInteger>(_ integer: T) {
                    bytes.storeBytes(of: integer.bigEndian, toByteOffset: offset, as: T.self)
                    offset += MemoryLayout<T>.size
                }
                for value in values {
                    switch (element, value) {
                    case (_, .null): store(Int32(-1))
                    case (.bigint, .int(let v)): store(Int32(8)); store(v)
                    case (.double, .double(let v)): store(Int32(8)); store(v.bitPattern)
                    case (.boolean, .bool(let v)): store(Int32(1)); store(UInt8(v ? 1 : 0))
                    default: throw Self.mismatch(element, value)
                    }
                }
                return offset
            }
            return
        }
        for value in values {
            switch (element, value) {
            case (_, .null):
                buffer.writeInteger(-1, as: Int32.self)
            case (.text, .text(let v)):
                buffer.writeInteger(Int32(v.utf8.count))
                buffer.writeString(v)
            case (.bytea, .bytes(let v)):
                buffer.writeInteger(Int32(v.count))
                buffer.writeBytes(v)
            default:
                throw Self.mismatch(element, value)
            }
        }
    }

    private static func mismatch(_ element: PostgresArrayElement, _ value: PostgresValue) -> PostgresDriverError {
        PostgresDriverError(kind: .other, message: "an array of \(element.sqlType) cannot hold \(value)")
    }
}

/// A LISTEN on a connection of its own, made again whenever the connection is lost.
private final class NIOListener: PostgresListener, Sendable {
    private let driver: PostgresNIODriver
    private let channel: String
    private let handler: @Sendable (String) -> Void
    private let reconnected: @Sendable () -> Void
    private let state = NIOLockedValueBox<(connection: PostgresConnection?, cancelled: Bool)>((nil, false))

    init(driver: PostgresNIODriver, channel: String, handler: @escaping @Sendable (String) -> Void, reconnected: @escaping @Sendable () -> Void) {
        self.driver = driver
        self.channel = channel
        self.handler = handler
        self.reconnected = reconnected
    }

    /// Connects and listens; when the connection closes (and the listener was not cancelled),
    /// reconnects after a pause, until it succeeds.
    func start() throws {
        let connection = try driver.dedicatedConnection()
        let handler = self.handler
        connection.addListener(channel: channel) { _, notification in handler(notification.payload) }
        do {
            _ = try connection.query(PostgresQuery(unsafeSQL: "LISTEN \(Self.quote(channel))"), logger: Logger(label: "ObjectGraph.PostgreSQL"))
                .wait(atMost: PostgresDeadline.reply, doing: "starting to listen") { closeQuietly(connection) }
        } catch {
            closeQuietly(connection)
            throw PostgresNIODriver.translate(error)
        }
        let cancelled = state.withLockedValue { state -> Bool in
            if !state.cancelled { state.connection = connection }
            return state.cancelled
        }
        if cancelled {
            closeQuietly(connection)
            return
        }
        connection.closeFuture.whenComplete { [weak self] _ in self?.connectionClosed() }
    }

    private func connectionClosed() {
        guard !state.withLockedValue({ $0.cancelled }) else { return }
        DispatchQueue.global().async { [weak self] in
            var pause = 0.05
            while let self, !self.state.withLockedValue({ $0.cancelled }) {
                do {
                    try self.start()
                    self.reconnected()
                    return
                } catch {
                    Thread.sleep(forTimeInterval: pause)
                    pause = min(pause * 2, 2)
                }
            }
        }
    }

    func cancel() {
        let connection = state.withLockedValue { state -> PostgresConnection? in
            state.cancelled = true
            defer { state.connection = nil }
            return state.connection
        }
        connection.map(closeQuietly)
    }

    static func quote(_ identifier: String) -> String { "\"" + identifier.replacingOccurrences(of: "\"", with: "\"\"") + "\"" }
}

/// Runs Swift tasks on one of SwiftNIO's event loops.
private final class EventLoopTaskExecutor: TaskExecutor {
    private let eventLoop: any EventLoop

    init(_ eventLoop: any EventLoop) { self.eventLoop = eventLoop }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        eventLoop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}

/// A connection of the pool handed to a synchronous caller: a task holds the lease
/// (`PostgresClient.withConnection`) until the caller releases it, or, when the caller stopped
/// waiting before it came, gives it back at once.
private final class Lease: PoolWaiter {
    enum Outcome {
        case leased
        case failed(any Error)
        case timedOut
    }

    private enum State {
        case waiting
        case leased(PostgresConnection, CheckedContinuation<Void, Never>)
        case failed(any Error)
        /// The caller stopped waiting.
        case abandoned
        case released
    }

    private let state = NIOLockedValueBox(State.waiting)
    private let ready = DispatchSemaphore(value: 0)

    /// The leased connection, until it is released.
    var connection: PostgresConnection? {
        state.withLockedValue { state in
            if case .leased(let connection, _) = state { return connection }
            return nil
        }
    }

    /// Called by the task with the pool's connection: holds it until `release()` resumes `continuation`.
    func hold(_ connection: PostgresConnection, until continuation: CheckedContinuation<Void, Never>) {
        let keep = state.withLockedValue { state -> Bool in
            guard case .waiting = state else { return false }
            state = .leased(connection, continuation)
            return true
        }
        if keep { ready.signal() } else { continuation.resume() }
    }

    /// Called by the task when the pool gave no connection.
    func fail(_ error: any Error) {
        let waiting = state.withLockedValue { state -> Bool in
            guard case .waiting = state else { return false }
            state = .failed(error)
            return true
        }
        if waiting { ready.signal() }
    }

    /// Waits at most `seconds` for the connection. After a time-out, a connection that comes goes
    /// back to the pool at once.
    func wait(seconds: Double) -> Outcome {
        let timedOut = ready.wait(timeout: .now() + .nanoseconds(Int(seconds * 1e9))) == .timedOut
        return state.withLockedValue { state -> Outcome in
            switch state {
            case .leased: return .leased
            case .failed(let error): return .failed(error)
            case .waiting where timedOut:
                state = .abandoned
                return .timedOut
            case .waiting, .abandoned, .released: preconditionFailure("Lease.wait: the lease was signalled without an outcome")
            }
        }
    }

    /// Gives the connection back to the pool.
    func release() {
        let continuation = state.withLockedValue { state -> CheckedContinuation<Void, Never>? in
            guard case .leased(_, let continuation) = state else { return nil }
            state = .released
            return continuation
        }
        continuation?.resume()
    }
}

/// What a store's own pool says of its attempts to open connections, for the callers waiting for
/// one: when an attempt fails, they stop waiting with the connection's error, as a caller whose
/// own attempt failed would, rather than wait for the pool's time-out while the server is down.
private final class PoolHealth: Sendable {
    private let waiting = NIOLockedValueBox<[ObjectIdentifier: any PoolWaiter]>([:])

    func waits(_ lease: any PoolWaiter) {
        waiting.withLockedValue { $0[ObjectIdentifier(lease)] = lease }
    }

    func stoppedWaiting(_ lease: any PoolWaiter) {
        _ = waiting.withLockedValue { $0.removeValue(forKey: ObjectIdentifier(lease)) }
    }

    /// The pool could not open a connection: every caller waiting for one fails with `error`.
    func connectFailed(_ error: String) {
        let failed = waiting.withLockedValue { waiting -> [any PoolWaiter] in
            defer { waiting = [:] }
            return Array(waiting.values)
        }
        for lease in failed {
            lease.fail(PostgresDriverError(kind: .connection, message: "the pool could not open a connection: \(error)"))
        }
    }
}

/// The log handler of a store's own pool (`PostgresClient`'s background logger): the store's log,
/// and for ``PoolHealth`` each failed attempt to open a connection, which PostgresClient reports
/// only there (as "Connection creation failed", at the info level, with the error).
private struct PoolWatchingLogHandler: LogHandler {
    var wrapped: any LogHandler
    let health: PoolHealth

    static let connectFailedMessage = "Connection creation failed"

    var metadata: Logger.Metadata {
        get { wrapped.metadata }
        set { wrapped.metadata = newValue }
    }

    var metadataProvider: Logger.MetadataProvider? {
        get { wrapped.metadataProvider }
        set { wrapped.metadataProvider = newValue }
    }

    /// At most info, to hear the failed attempts whatever the store's log level; messages below
    /// the store's own level are not passed on.
    var logLevel: Logger.Level {
        get { min(wrapped.logLevel, .info) }
        set { wrapped.logLevel = newValue }
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { wrapped[metadataKey: key] }
        set { wrapped[metadataKey: key] = newValue }
    }

    func log(event: LogEvent) {
        if event.message.description == Self.connectFailedMessage {
            health.connectFailed(event.metadata?["psql_error"].map { "\($0)" } ?? "no reason given")
        }
        if event.level >= wrapped.logLevel { wrapped.log(event: event) }
    }
}

/// A caller waiting for a connection of the pool, which ``PoolHealth`` fails when the pool
/// cannot open one.
private protocol PoolWaiter: AnyObject, Sendable {
    /// Ends the wait with `error`, unless the connection has come.
    func fail(_ error: any Error)
}

/// An asynchronous caller's wait for a connection: failed by the pool's time-out or by
/// ``PoolHealth``, which cancels the task waiting in the pool, unless the connection came first.
private final class AsyncLeaseWait: PoolWaiter {
    private enum State {
        case waiting
        case leased
        case failed(any Error)
    }

    private let state = NIOLockedValueBox(State.waiting)
    private let cancel = NIOLockedValueBox<(@Sendable () -> Void)?>(nil)

    /// Called with the connection: whether the caller still wants it.
    func leased() -> Bool {
        state.withLockedValue { state in
            guard case .waiting = state else { return false }
            state = .leased
            return true
        }
    }

    func fail(_ error: any Error) {
        let failed = state.withLockedValue { state -> Bool in
            guard case .waiting = state else { return false }
            state = .failed(error)
            return true
        }
        if failed { cancel.withLockedValue { $0 }?() }
    }

    /// How to stop the task waiting in the pool; called at once when the wait has already failed.
    func watch(_ cancel: @escaping @Sendable () -> Void) {
        self.cancel.withLockedValue { $0 = cancel }
        if failure != nil { cancel() }
    }

    /// Why the wait failed, if it did.
    var failure: (any Error)? {
        state.withLockedValue { state in
            if case .failed(let error) = state { return error }
            return nil
        }
    }
}

// Reflection (`Mirror`, and with it `dump` and Swift Testing's account of a failed expectation,
// which walks the values it names) stops at the driver's objects. Below them are SwiftNIO's
// connections and event loops, whose state their own threads change under their own locks:
// reading it from outside them is a data race.

extension PostgresNIODriver: CustomReflectable {
    var customMirror: Mirror {
        Mirror(self, children: ["maximumConnections": maximumConnections, "poolTimeout": poolTimeout, "ownsClient": runner != nil])
    }
}

extension NIOListener: CustomReflectable {
    var customMirror: Mirror { Mirror(self, children: ["channel": channel]) }
}

extension ExportedSnapshot: CustomReflectable {
    var customMirror: Mirror { Mirror(self, children: ["id": id]) }
}

extension EventLoopTaskExecutor: CustomReflectable {
    var customMirror: Mirror { Mirror(self, children: [:]) }
}

extension Lease: CustomReflectable {
    var customMirror: Mirror { Mirror(self, children: [:]) }
}
