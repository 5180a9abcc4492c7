import Logging
import NIOConcurrencyHelpers
import NIOCore
import PostgresNIO

// Reads the store sends again and again (a note by its ID, a page of a folder, the change log
// after a number) run as named prepared statements: PostgreSQL parses, analyzes and plans such a
// statement once per connection, where an unnamed statement does all three on every call. For a
// lookup by a unique key, that work is most of the server's time (measured with pgbench on the
// example server's queries: 4,930 statements per second unnamed, 15,083 prepared).

/// Which statements a driver prepares, and under which names.
///
/// A statement is prepared the second time its text is seen with the same parameter types, so a
/// text used once (a save carries a nonce in its text) never takes a name. Only `SELECT`s are
/// prepared: a read has no effect, so one that fails as a prepared statement can run again
/// unnamed. At most ``capacity`` statements get a name; later ones run unnamed, so the statements
/// each connection keeps on the server stay bounded whatever the variety of the store's queries.
final class PostgresPreparedStatements: Sendable {
    /// The most statements a driver prepares.
    static let capacity = 256
    /// The most texts remembered as seen once; the set starts again when it is full.
    static let seenCapacity = 4096

    private struct Key: Hashable {
        var sql: String
        var types: [PostgresDataType]
    }

    private struct State {
        var named: [Key: String] = [:]
        /// Names given so far: a name is never given to a second statement, as a connection that
        /// prepared the first keeps it under that name.
        var issued = 0
        var seenOnce: Set<Key> = []
        /// Statements that failed as prepared statements: they run unnamed from then on.
        var refused: Set<Key> = []
    }

    private let state = NIOLockedValueBox(State())

    /// The name `sql` runs under with parameters of `types`, or nil when it runs unnamed.
    func name(for sql: String, types: [PostgresDataType]) -> String? {
        guard sql.utf8.starts(with: "SELECT ".utf8) else { return nil }
        let key = Key(sql: sql, types: types)
        return state.withLockedValue { state -> String? in
            if let name = state.named[key] { return name }
            guard !state.refused.contains(key), state.issued < Self.capacity else { return nil }
            guard state.seenOnce.remove(key) != nil else {
                if state.seenOnce.count >= Self.seenCapacity { state.seenOnce.removeAll(keepingCapacity: true) }
                state.seenOnce.insert(key)
                return nil
            }
            state.issued += 1
            let name = "objectgraph_\(state.issued)"
            state.named[key] = name
            return name
        }
    }

    /// Runs `sql` unnamed from now on: the server refused it as a prepared statement.
    func refuse(_ sql: String, types: [PostgresDataType]) {
        let key = Key(sql: sql, types: types)
        state.withLockedValue { state in
            state.named[key] = nil
            state.refused.insert(key)
        }
    }

    /// How many statements have a name (for tests).
    var namedCount: Int { state.withLockedValue { $0.named.count } }
}

/// A statement PostgresNIO runs as a named prepared statement, preparing it on a connection the
/// first time the connection runs it.
///
/// PostgresNIO takes a prepared statement's name, text and parameter types from its type, as
/// static properties, which it reads while `execute` is called, in the calling task. The store's
/// statements are made at run time, so this one type reads them from a task-local value that
/// ``run(_:on:logger:)`` binds around the call.
struct PostgresNamedStatement: PostgresPreparedStatement {
    struct Text: Sendable {
        var name: String
        var sql: String
        var types: [PostgresDataType]
    }

    @TaskLocal static var current: Text?

    static var name: String { text.name }
    static var sql: String { text.sql }
    static var bindingDataTypes: [PostgresDataType] { text.types }

    private static var text: Text {
        guard let current else {
            preconditionFailure("PostgresNamedStatement: PostgresNIO read the statement outside PostgresNamedStatement.run")
        }
        return current
    }

    typealias Row = PostgresRow

    let bindings: PostgresBindings

    func makeBindings() throws -> PostgresBindings { bindings }
    func decodeRow(_ row: PostgresRow) throws -> PostgresRow { row }

    /// The rows of `text`'s statement run with `bindings` on `connection`.
    static func run(_ text: Text, bindings: PostgresBindings, on connection: PostgresConnection, logger: Logger) async throws -> [PostgresRow] {
        try await $current.withValue(text) {
            var rows: [PostgresRow] = []
            for try await row in try await connection.execute(PostgresNamedStatement(bindings: bindings), logger: logger) {
                rows.append(row)
            }
            return rows
        }
    }
}
