import Foundation
import Logging

// The PostgreSQL store speaks to its server through a driver: the protocols below, which the
// module ObjectGraphPostgres implements over PostgresNIO. The core keeps the store's SQL and
// rules and none of PostgresNIO (SwiftNIO, TLS and their C code), so a program that uses only
// SQLite (the `objectgraph` tool among them) builds none of it. A program that uses PostgreSQL
// depends on the product ObjectGraphPostgres and registers its driver once
// (`PersistentStoreCoordinator.registerPostgresStore()`), as Core Data registers a store class.

/// One value sent to or read from PostgreSQL: a parameter of a statement or a cell of a row.
package enum PostgresValue: Sendable, Hashable, CustomStringConvertible {
    case null
    case bool(Bool)
    /// `smallint`, `integer` and `bigint`.
    case int(Int64)
    /// `real` and `double precision` (NaN and the infinities included).
    case double(Double)
    /// `text`, `varchar`, `name`; `numeric` read as its text. PostgreSQL's text cannot hold U+0000.
    case text(String)
    /// `bytea`.
    case bytes(Data)
    /// A one-dimensional array of `element`s, NULL among them (each a value of the element's
    /// case, or `.null`): sent as a column of a set-based insert (`unnest`) or a list of keys
    /// (`= ANY($1)`); read from a one-dimensional `bigint[]` cell (`array_agg` of keys).
    case array(PostgresArrayElement, [PostgresValue])

    package var description: String {
        switch self {
        case .null: "NULL"
        case .bool(let v): v ? "true" : "false"
        case .int(let v): String(v)
        case .double(let v): String(v)
        case .text(let v): "'\(v.replacingOccurrences(of: "'", with: "''"))'"
        case .bytes(let v): "<\(v.count) bytes>"
        case .array(let element, let v): "<\(v.count) \(element.sqlType)>"
        }
    }
}

/// The element type of an array parameter (``PostgresValue/array(_:_:)``).
package enum PostgresArrayElement: Sendable, Hashable {
    case bigint, double, boolean, text, bytea

    /// The array's type, as a cast names it.
    package var sqlType: String {
        switch self {
        case .bigint: "bigint[]"
        case .double: "double precision[]"
        case .boolean: "boolean[]"
        case .text: "text[]"
        case .bytea: "bytea[]"
        }
    }
}

/// An error the server or the connection reported.
package struct PostgresDriverError: Error, Sendable, CustomStringConvertible {
    package enum Kind: Sendable, Equatable {
        /// The server refused a statement; `sqlState` says why (23505: a unique index; 40001: a
        /// serialization failure; 40P01: a deadlock).
        case server
        /// The connection could not be made or was lost (the server stopped or restarted, the
        /// network failed). What the statement did is unknown unless it ran in a transaction, which
        /// the server then rolled back.
        case connection
        /// Every connection of the pool stayed in use for as long as the caller may wait for one
        /// (`pool_timeout`): nothing was sent.
        case poolExhausted
        /// Anything else: a value of a type the driver does not read, a closed driver.
        case other
    }

    package var kind: Kind
    /// The SQLSTATE code of a server error.
    package var sqlState: String?
    package var message: String
    /// The constraint a server error names (a unique index), if any.
    package var constraint: String?
    /// Whether the connection was lost while COMMIT was under way: the transaction may have been
    /// committed or not, and only the server can say (`txid_status`).
    package var commitInDoubt = false

    package init(kind: Kind, sqlState: String? = nil, message: String, constraint: String? = nil, commitInDoubt: Bool = false) {
        self.kind = kind
        self.sqlState = sqlState
        self.message = message
        self.constraint = constraint
        self.commitInDoubt = commitInDoubt
    }

    package var description: String {
        switch kind {
        case .server: "PostgreSQL error \(sqlState ?? "?"): \(message)"
        case .connection: "PostgreSQL connection failed: \(message)"
        case .poolExhausted, .other: message
        }
    }
}

/// Statements run on one connection, inside the transaction or the read that handed it out.
package protocol PostgresSession {
    /// Runs a statement with its parameters (`$1`, `$2`, …) and returns every row's cells.
    func query(_ sql: String, _ parameters: [PostgresValue]) throws -> [[PostgresValue]]
    /// Runs a statement and returns the number of rows it inserted, updated or deleted.
    @discardableResult
    func execute(_ sql: String, _ parameters: [PostgresValue]) throws -> Int
    /// Runs a statement and hands `body` each row's cells in turn, for results of many rows that a
    /// caller reduces as it goes: no array of every row's cells is built (the driver may still
    /// receive the whole result before the first call). The array `body` gets is valid only
    /// during the call.
    func forEachRow(_ sql: String, _ parameters: [PostgresValue], _ body: ([PostgresValue]) throws -> Void) throws
}

extension PostgresSession {
    package func forEachRow(_ sql: String, _ parameters: [PostgresValue], _ body: ([PostgresValue]) throws -> Void) throws {
        for row in try query(sql, parameters) { try body(row) }
    }
}

/// How a transaction isolates itself from others.
package enum PostgresIsolation: String, Sendable {
    case readCommitted = "READ COMMITTED"
    case repeatableRead = "REPEATABLE READ"
    case serializable = "SERIALIZABLE"
}

/// A pool of connections to one database.
package protocol PostgresDriver: AnyObject, Sendable {
    /// Runs `body` in one transaction on one connection: committed when it returns, rolled back
    /// when it throws (or when the connection is lost, by the server). A connection lost during
    /// COMMIT throws an error whose ``PostgresDriverError/commitInDoubt`` is true.
    @discardableResult
    func transaction<T>(isolation: PostgresIsolation, readOnly: Bool, _ body: (any PostgresSession) throws -> T) throws -> T
    /// Runs `body`, which reads with one statement, on one connection outside a transaction. One
    /// statement reads one snapshot, inside a transaction or not; without one, it is spared the
    /// BEGIN and the COMMIT, two of a read's three round trips. A second statement in `body` is a
    /// programmer error: reads of several statements run in a ``transaction(isolation:readOnly:_:)``.
    func readOneStatement<T>(_ body: (any PostgresSession) throws -> T) throws -> T
    /// Runs `body`, which writes with one statement, on one connection outside a transaction: the
    /// statement commits as it ends, or changes nothing when it fails. A connection lost once the
    /// statement was sent throws an error whose ``PostgresDriverError/commitInDoubt`` is true (it
    /// may have committed); it is not run again. A second statement in `body` is a programmer error.
    func writeOneStatement<T>(_ body: (any PostgresSession) throws -> T) throws -> T
    /// Runs one statement that reads, outside a transaction, and returns its rows, suspending the
    /// caller until they come: no thread waits for the connection or the reply.
    func query(_ sql: String, _ parameters: [PostgresValue]) async throws -> [[PostgresValue]]
    /// Listens on a channel with a connection of its own: `handler` gets each notification's
    /// payload, and `reconnected` is called each time the connection was lost and made again
    /// (notifications sent in between are lost: the listener catches up by other means).
    func listen(
        channel: String, handler: @escaping @Sendable (String) -> Void, reconnected: @escaping @Sendable () -> Void
    ) throws -> any PostgresListener
    /// Opens a `REPEATABLE READ` read-only transaction on a connection of its own, outside the
    /// pool, and exports its snapshot (`pg_export_snapshot()`): until the snapshot is released, a
    /// transaction that begins with `SET TRANSACTION SNAPSHOT` reads exactly what it saw.
    func exportSnapshot() throws -> any PostgresExportedSnapshot
    /// Closes every connection; later calls throw.
    func close()
}

extension PostgresDriver {
    /// A `REPEATABLE READ` read-only transaction, for drivers without reads outside one.
    package func readOneStatement<T>(_ body: (any PostgresSession) throws -> T) throws -> T {
        try transaction(isolation: .repeatableRead, readOnly: true, body)
    }

    /// A `READ COMMITTED` transaction, for drivers without writes outside one.
    package func writeOneStatement<T>(_ body: (any PostgresSession) throws -> T) throws -> T {
        try transaction(isolation: .readCommitted, readOnly: false, body)
    }

    /// The synchronous read, for drivers without an asynchronous one (it blocks the caller's thread).
    package func query(_ sql: String, _ parameters: [PostgresValue]) async throws -> [[PostgresValue]] {
        try readOneStatement { try $0.query(sql, parameters) }
    }
}

/// A snapshot a transaction of its own keeps open (``PostgresDriver/exportSnapshot()``).
package protocol PostgresExportedSnapshot: AnyObject, Sendable {
    /// What `SET TRANSACTION SNAPSHOT` names.
    var id: String { get }
    /// Ends the transaction and closes its connection; the snapshot can no longer be read.
    func release()
}

/// A channel being listened on; ``cancel()`` stops listening and closes its connection.
package protocol PostgresListener: AnyObject, Sendable {
    func cancel()
}

/// What a driver module provides: a way to connect.
package protocol PostgresDriverFactory {
    /// Connects to the database a `postgres://user:password@host:port/database?schema=…` URL
    /// names, with at most `maximumConnections` connections at once. A caller waits for a
    /// connection at most the URL's `pool_timeout` seconds (10 when it names none), then gets a
    /// ``PostgresDriverError/Kind/poolExhausted`` error.
    ///
    /// - Parameter client: the app's pool (``PersistentStoreOption/postgresClient``), which the
    ///   app runs; nil for a pool of the store's own.
    static func connect(url: URL, maximumConnections: Int, client: (any Sendable)?, logger: Logger) throws -> any PostgresDriver
}

extension PostgresDriverFactory {
    /// Connects with a pool of the store's own.
    static func connect(url: URL, maximumConnections: Int, logger: Logger) throws -> any PostgresDriver {
        try connect(url: url, maximumConnections: maximumConnections, client: nil, logger: logger)
    }
}

/// The driver a program registered for `StoreType.postgres`.
package enum PostgresDrivers {
    private static let registered = Protected<(any PostgresDriverFactory.Type)?>(nil)

    /// Makes `factory` the driver of every PostgreSQL store added from now on. Registering again
    /// replaces the driver (for new stores only).
    package static func register(_ factory: any PostgresDriverFactory.Type) {
        registered.withLock { $0 = factory }
    }

    /// The registered driver factory.
    ///
    /// - Throws: ``ObjectGraphError/unsupported`` when the program registered none.
    package static func factory() throws -> any PostgresDriverFactory.Type {
        try factory(registered.withLock { $0 })
    }

    /// `factory` itself, or the error that says how to register one.
    package static func factory(_ factory: (any PostgresDriverFactory.Type)?) throws -> any PostgresDriverFactory.Type {
        guard let factory else {
            throw ObjectGraphError(
                .unsupported,
                "A PostgreSQL store needs its driver, which this program has not registered: add the product "
                    + "ObjectGraphPostgres to the target's dependencies, import ObjectGraphPostgres, and call "
                    + "PersistentStoreCoordinator.registerPostgresStore() once before adding the store")
        }
        return factory
    }
}
