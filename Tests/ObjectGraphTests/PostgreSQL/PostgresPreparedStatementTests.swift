import Foundation
import Logging
import PostgresNIO
import Testing
@testable import ObjectGraphCore
@testable import ObjectGraphPostgres

/// Which statements the driver names, without a server.
@Suite("PostgreSQL prepared statements: which")
struct PostgresPreparedStatementChoiceTests {
    @Test func aSelectIsNamedTheSecondTimeItsTextAndTypesAreSeen() {
        let statements = PostgresPreparedStatements()
        let sql = "SELECT 1 WHERE $1 = $1"
        #expect(statements.name(for: sql, types: [.int8]) == nil)
        let name = statements.name(for: sql, types: [.int8])
        #expect(name != nil)
        #expect(statements.name(for: sql, types: [.int8]) == name)
        // The same text with other parameter types is another statement: PostgreSQL would read
        // the first one's binary values as the other's types.
        #expect(statements.name(for: sql, types: [.text]) == nil)
        let other = statements.name(for: sql, types: [.text])
        #expect(other != nil && other != name)
    }

    @Test func onlySelectsAreNamed() {
        let statements = PostgresPreparedStatements()
        for sql in ["UPDATE t SET a = 1", "/* ObjectGraph save X */ WITH w AS (INSERT INTO t VALUES (1) RETURNING 1) SELECT 1", "WITH a AS (SELECT 1) SELECT * FROM a"] {
            for _ in 0..<3 { #expect(statements.name(for: sql, types: []) == nil, "\(sql)") }
        }
        #expect(statements.namedCount == 0)
    }

    @Test func atMostTheCapacityIsNamedAndNoNameIsGivenTwice() {
        let statements = PostgresPreparedStatements()
        var names: Set<String> = []
        for index in 0..<(PostgresPreparedStatements.capacity + 10) {
            let sql = "SELECT \(index)"
            _ = statements.name(for: sql, types: [])
            if let name = statements.name(for: sql, types: []) { #expect(names.insert(name).inserted) }
            if index == 3 { statements.refuse("SELECT 3", types: []) }
        }
        #expect(names.count == PostgresPreparedStatements.capacity)
        // A refused statement runs unnamed from then on; its name is not given to another.
        #expect(statements.name(for: "SELECT 3", types: []) == nil)
        #expect(statements.namedCount == PostgresPreparedStatements.capacity - 1)
    }
}

/// Reads outside a transaction run as prepared statements on a throwaway cluster: the second run
/// of a text is prepared on its connection, the answers are the unnamed statement's, and a
/// prepared statement the server refuses (its table changed under it) runs again unnamed.
@Suite("PostgreSQL prepared statements", .needsPostgreSQL)
struct PostgresPreparedStatementTests {
    private func connect(_ url: URL) throws -> any PostgresDriver {
        // One connection: every statement runs on it, and pg_prepared_statements is its own.
        try PostgresDrivers.factory().connect(url: url, maximumConnections: 1, logger: Logger(label: "test"))
    }

    private func prepared(_ driver: any PostgresDriver) throws -> [String] {
        try driver.transaction(isolation: .readCommitted, readOnly: false) { session in
            try session.query("SELECT name FROM pg_prepared_statements ORDER BY name", []).compactMap { row in
                if case .text(let name) = row[0] { name } else { nil }
            }
        }
    }

    @Test func aRepeatedReadIsPreparedOnItsConnectionAndAnswersAsBefore() throws {
        let url = try PostgresTestServer.shared.get().makeDatabase()
        let driver = try connect(url)
        defer { driver.close() }
        _ = try driver.writeOneStatement { try $0.execute("CREATE TABLE notes (id bigint PRIMARY KEY, title text, stars double precision)", []) }
        _ = try driver.writeOneStatement {
            try $0.execute("INSERT INTO notes SELECT i, 'note ' || i, i / 4.0 FROM generate_series(1, 50) AS i", [])
        }
        let sql = "SELECT id, title, stars FROM notes WHERE id > $1 AND title <> $2 ORDER BY id LIMIT $3"
        var answers: [[[PostgresValue]]] = []
        for limit in [3, 4, 5] {
            answers.append(try driver.readOneStatement { try $0.query(sql, [.int(40), .text("note 42"), .int(Int64(limit))]) })
        }
        #expect(answers[0].map { $0[0] } == [.int(41), .int(43), .int(44)])
        #expect(answers[2] == [
            [.int(41), .text("note 41"), .double(10.25)], [.int(43), .text("note 43"), .double(10.75)],
            [.int(44), .text("note 44"), .double(11)], [.int(45), .text("note 45"), .double(11.25)],
            [.int(46), .text("note 46"), .double(11.5)],
        ])
        let names = try prepared(driver)
        #expect(names.filter { $0.hasPrefix("objectgraph_") }.count == 1, "\(names)")
        // NULL parameters make another statement (their type is the server's to infer).
        let nulls = try driver.readOneStatement { try $0.query(sql, [.int(40), .null, .int(2)]) }
        #expect(nulls.isEmpty)  // title <> NULL is never true
    }

    /// In a read-only transaction (a read of several statements, a pinned query generation) the
    /// reads are prepared too; in a transaction that writes, none is.
    @Test func readOnlyTransactionsPrepareTheirReadsAndWritingOnesDoNot() throws {
        let url = try PostgresTestServer.shared.get().makeDatabase()
        let driver = try connect(url)
        defer { driver.close() }
        _ = try driver.writeOneStatement { try $0.execute("CREATE TABLE notes (id bigint PRIMARY KEY, title text)", []) }
        let written = "SELECT count(*) FROM notes WHERE id > $1"
        for i in 0..<3 {
            try driver.transaction(isolation: .readCommitted, readOnly: false) { session in
                _ = try session.execute("INSERT INTO notes VALUES ($1, 'n')", [.int(Int64(i))])
                #expect(try session.query(written, [.int(-1)]) == [[.int(Int64(i + 1))]])
            }
        }
        #expect(try prepared(driver).isEmpty)
        let read = "SELECT title FROM notes WHERE id = $1"
        for i in 0..<3 {
            let rows = try driver.transaction(isolation: .repeatableRead, readOnly: true) { session in
                try session.query(read, [.int(Int64(i))])
            }
            #expect(rows == [[.text("n")]])
        }
        #expect(try prepared(driver).count == 1)
    }

    @Test func aPreparedReadTheServerRefusesRunsAgainUnnamed() throws {
        let url = try PostgresTestServer.shared.get().makeDatabase()
        let driver = try connect(url)
        defer { driver.close() }
        _ = try driver.writeOneStatement { try $0.execute("CREATE TABLE notes (id bigint PRIMARY KEY, title text)", []) }
        _ = try driver.writeOneStatement { try $0.execute("INSERT INTO notes VALUES (1, 'one')", []) }
        let sql = "SELECT * FROM notes WHERE id = $1"
        for _ in 0..<3 { #expect(try driver.readOneStatement { try $0.query(sql, [.int(1)]) } == [[.int(1), .text("one")]]) }
        #expect(try prepared(driver).contains { $0.hasPrefix("objectgraph_") })
        // The prepared statement's rows change shape: PostgreSQL refuses it ("cached plan must
        // not change result type"), and the read is answered unnamed.
        _ = try driver.writeOneStatement { try $0.execute("ALTER TABLE notes ADD COLUMN body text DEFAULT 'b'", []) }
        for _ in 0..<2 {
            #expect(try driver.readOneStatement { try $0.query(sql, [.int(1)]) } == [[.int(1), .text("one"), .text("b")]])
        }
    }
}
