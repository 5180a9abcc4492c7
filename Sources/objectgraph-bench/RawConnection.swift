import Foundation
import GRDBSQLite
import ObjectGraphBenchCore

/// The few calls of the SQLite C API the raw side makes, with errors turned into `BenchError`.
/// Nothing here caches, converts or allocates on the raw side's behalf: it is the floor.
final class RawConnection: @unchecked Sendable {  // used by one thread at a time (each reader opens its own)
    let handle: OpaquePointer
    let path: String

    /// Opens (creating it if needed) the database at `path` in WAL mode with the given `synchronous`.
    init(path: String, synchronous: BenchSynchronous) throws {
        var handle: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX
        let code = sqlite3_open_v2(path, &handle, flags, nil)
        guard code == SQLITE_OK, let handle else {
            if let handle { sqlite3_close_v2(handle) }
            throw BenchError("sqlite3_open_v2(\(path)): \(String(cString: sqlite3_errstr(code)))")
        }
        self.handle = handle
        self.path = path
        sqlite3_busy_timeout(handle, 5_000)
        try execute("PRAGMA journal_mode = WAL")
        try execute("PRAGMA synchronous = \(synchronous.pragmaValue)")
        guard Int(try int64("PRAGMA synchronous")) == synchronous.pragmaNumber else {
            throw BenchError("\(path): synchronous is not \(synchronous.pragmaValue)")
        }
    }

    deinit { sqlite3_close_v2(handle) }

    /// Runs SQL without results (several statements allowed).
    func execute(_ sql: String) throws {
        var message: UnsafeMutablePointer<CChar>?
        let code = sqlite3_exec(handle, sql, nil, nil, &message)
        if code != SQLITE_OK {
            let text = message.map { String(cString: $0) } ?? String(cString: sqlite3_errstr(code))
            sqlite3_free(message)
            throw BenchError("\(sql): \(text)")
        }
    }

    /// A prepared statement.
    func prepare(_ sql: String) throws -> RawStatement {
        var statement: OpaquePointer?
        let code = sqlite3_prepare_v2(handle, sql, -1, &statement, nil)
        guard code == SQLITE_OK, let statement else {
            throw BenchError("sqlite3_prepare_v2(\(sql)): \(String(cString: sqlite3_errmsg(handle)))")
        }
        return RawStatement(handle: statement, connection: self)
    }

    /// The single integer a query returns.
    func int64(_ sql: String) throws -> Int64 {
        let statement = try prepare(sql)
        guard try statement.step() else { throw BenchError("\(sql) returned no row") }
        return statement.int64(0)
    }

    /// The version of the SQLite library the three ways use.
    static var libraryVersion: String { String(cString: sqlite3_libversion()) }

    var lastErrorMessage: String { String(cString: sqlite3_errmsg(handle)) }

    /// The rows the last INSERT, UPDATE or DELETE changed.
    var changes: Int { Int(sqlite3_changes(handle)) }
}

/// A prepared statement; finalized when released.
final class RawStatement {
    let handle: OpaquePointer
    private let connection: RawConnection

    fileprivate init(handle: OpaquePointer, connection: RawConnection) {
        self.handle = handle
        self.connection = connection
    }

    deinit { sqlite3_finalize(handle) }

    /// SQLite copies bound text at once (`SQLITE_TRANSIENT`).
    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

    func bind(_ index: Int32, _ value: Int64) { sqlite3_bind_int64(handle, index, value) }

    func bind(_ index: Int32, _ value: String) { sqlite3_bind_text(handle, index, value, -1, Self.transient) }

    /// Steps once: true when a row is available, false when done.
    func step() throws -> Bool {
        switch sqlite3_step(handle) {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default: throw BenchError("sqlite3_step(\(String(cString: sqlite3_sql(handle)))): \(connection.lastErrorMessage)")
        }
    }

    /// Steps a statement that returns no row, then resets it for the next bindings.
    func run() throws {
        _ = try step()
        sqlite3_reset(handle)
    }

    func reset() { sqlite3_reset(handle) }

    func int64(_ column: Int32) -> Int64 { sqlite3_column_int64(handle, column) }

    func text(_ column: Int32) -> String { String(cString: sqlite3_column_text(handle, column)) }
}
