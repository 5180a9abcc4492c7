import Foundation
import Logging
import NIOCore
import NIOPosix
import Testing
import ObjectGraph
@testable import ObjectGraphCore
@testable import ObjectGraphPostgres

/// The PostgreSQL store without a registered driver (no server needed).
@Suite("PostgreSQL driver registration")
struct PostgresDriverRegistrationTests {
    @Test func aPostgreSQLStoreWithoutARegisteredDriverIsRefusedSayingWhatToAdd() {
        #expect {
            try PostgresDrivers.factory(nil)
        } throws: { error in
            let message = String(describing: error)
            return (error as? ObjectGraphError)?.code == .unsupported && message.contains("product ObjectGraphPostgres")
                && message.contains("PersistentStoreCoordinator.registerPostgresStore()")
        }
    }

    /// A statement whose reply never comes (a lost reply, a server that stopped answering) does not
    /// block its caller forever: after the deadline the connection is closed and a connection error
    /// says what was being waited for.
    @Test func aReplyThatNeverComesIsAConnectionErrorAfterItsDeadline() {
        let promise = MultiThreadedEventLoopGroup.singleton.next().makePromise(of: Int.self)
        let closed = Protected(false)
        #expect {
            try promise.futureResult.wait(atMost: .milliseconds(50), doing: "running SELECT 1") {
                closed.withLock { $0 = true }
                promise.fail(ChannelError.alreadyClosed)
            }
        } throws: { error in
            let error = error as? PostgresDriverError
            return error?.kind == .connection && error?.message.contains("no reply from the server") == true
                && error?.message.contains("running SELECT 1") == true
        }
        #expect(closed.withLock { $0 })
    }

    @Test func aReplyWithinItsDeadlineIsReturned() throws {
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let future = loop.scheduleTask(in: .milliseconds(10)) { 42 }.futureResult
        #expect(try future.wait(atMost: .seconds(10), doing: "running SELECT 42") { Issue.record("timed out") } == 42)
    }
}

/// The PostgreSQL driver (ObjectGraphPostgres over PostgresNIO), on a throwaway cluster: values
/// round-trip exactly, transactions commit or roll back whole, server errors keep their SQLSTATE,
/// the pool shares its connections between threads, notifications arrive, and a lost server is
/// reconnected to.
@Suite("PostgreSQL driver", .needsPostgreSQL)
struct PostgresDriverTests {
    private func connect(_ url: URL, connections: Int = 4) throws -> any PostgresDriver {
        try PostgresDrivers.factory().connect(url: url, maximumConnections: connections, logger: Logger(label: "test"))
    }

    private func database() throws -> (PostgresTestServer, URL) {
        let server = try PostgresTestServer.shared.get()
        return (server, try server.makeDatabase())
    }

    @Test func theRegisteredDriverIsObjectGraphPostgressOwn() throws {
        let factory = try PostgresDrivers.factory()
        #expect(String(reflecting: factory) == "ObjectGraphPostgres.PostgresNIODriverFactory")
    }

    /// `bigint[]` cells (a batch delete's keys, one array per entity) are read element by element,
    /// NULLs and the extremes included; an array of another shape is refused with the column's name.
    @Test func bigintArraysAreReadWhole() throws {
        let (_, url) = try database()
        let driver = try connect(url)
        defer { driver.close() }
        let many = (0..<10_000).map { Int64($0) * 3 - 7 }
        let rows = try driver.transaction(isolation: .repeatableRead, readOnly: true) { session in
            try session.query(
                "SELECT ARRAY[1, NULL, 9223372036854775807, -9223372036854775808]::int8[], '{}'::int8[], $1::int8[], ARRAY[42]::int8[]",
                [.array(.bigint, many.map { .int($0) })])
        }
        #expect(rows.count == 1)
        #expect(rows.first?[0] == .array(.bigint, [.int(1), .null, .int(Int64.max), .int(Int64.min)]))
        #expect(rows.first?[1] == .array(.bigint, []))
        #expect(rows.first?[2] == .array(.bigint, many.map { .int($0) }))
        #expect(rows.first?[3] == .array(.bigint, [.int(42)]))
        #expect {
            _ = try driver.transaction(isolation: .repeatableRead, readOnly: true) { session in
                try session.query("SELECT ARRAY[[1, 2], [3, 4]]::int8[] AS square", [])
            }
        } throws: { error in
            "\(error)".contains("square")
        }
    }

    @Test func everyKindOfValueRoundTripsExactly() throws {
        let (_, url) = try database()
        let driver = try connect(url)
        defer { driver.close() }
        let values: [[PostgresValue]] = [
            [.int(1), .bool(true), .int(Int64.max), .double(1.5), .text("Crème brûlée 👍🏽"), .bytes(Data([0, 1, 255])), .text("10.25")],
            [.int(2), .bool(false), .int(Int64.min), .double(-0.0), .text(""), .bytes(Data()), .text("-0.000001")],
            [.int(3), .null, .null, .double(.nan), .null, .null, .null],
            [.int(4), .null, .int(0), .double(.infinity), .text("'quoted' \"both\""), .null, .text("123456789012345678901234567890.5")],
            [.int(5), .null, .null, .double(-.infinity), .null, .null, .null],
        ]
        try driver.transaction(isolation: .readCommitted, readOnly: false) { session in
            try session.execute("CREATE TABLE t (id bigint PRIMARY KEY, b boolean, i bigint, d double precision, s text, x bytea, n numeric)", [])
            for row in values {
                try session.execute("INSERT INTO t VALUES ($1, $2, $3, $4, $5, $6, $7::numeric)", row)
            }
        }
        let read = try driver.transaction(isolation: .repeatableRead, readOnly: true) { session in
            try session.query("SELECT id, b, i, d, s, x, n::text FROM t ORDER BY id", [])
        }
        #expect(read.count == values.count)
        for (got, expected) in zip(read, values) {
            for (g, e) in zip(got, expected) {
                if case .double(let x) = e, x.isNaN {
                    guard case .double(let y) = g else { Issue.record("\(g) is not NaN"); continue }
                    #expect(y.isNaN)
                } else if case .double(let x) = e, case .double(let y) = g {
                    #expect(x.bitPattern == y.bitPattern, "\(x) read as \(y)")
                } else {
                    #expect(g == e)
                }
            }
        }
        // smallint and integer read as integers; a count is a bigint.
        let small = try driver.transaction(isolation: .readCommitted, readOnly: true) { try $0.query("SELECT 7::smallint, 8::integer, count(*) FROM t", []) }
        #expect(small == [[.int(7), .int(8), .int(5)]])
    }

    @Test func aTransactionThatThrowsLeavesNothingAndOneThatReturnsKeepsEverything() throws {
        let (_, url) = try database()
        let driver = try connect(url)
        defer { driver.close() }
        try driver.transaction(isolation: .readCommitted, readOnly: false) { try $0.execute("CREATE TABLE t (id bigint PRIMARY KEY)", []) }
        struct Stop: Error {}
        #expect(throws: Stop.self) {
            try driver.transaction(isolation: .readCommitted, readOnly: false) { session in
                #expect(try session.execute("INSERT INTO t VALUES (1), (2)", []) == 2)
                throw Stop()
            }
        }
        #expect(try driver.transaction(isolation: .readCommitted, readOnly: true) { try $0.query("SELECT count(*) FROM t", []) } == [[.int(0)]])
        // A statement the server refuses rolls back the statements before it.
        #expect(throws: PostgresDriverError.self) {
            try driver.transaction(isolation: .readCommitted, readOnly: false) { session in
                try session.execute("INSERT INTO t VALUES (1)", [])
                try session.execute("INSERT INTO t VALUES (1)", [])
            }
        }
        #expect(try driver.transaction(isolation: .readCommitted, readOnly: true) { try $0.query("SELECT count(*) FROM t", []) } == [[.int(0)]])
        try driver.transaction(isolation: .serializable, readOnly: false) { try $0.execute("INSERT INTO t VALUES (1), (2), (3)", []) }
        #expect(try driver.transaction(isolation: .readCommitted, readOnly: true) { try $0.query("SELECT count(*) FROM t", []) } == [[.int(3)]])
    }

    /// A read of one statement runs outside a transaction (in the server's default isolation, not
    /// a transaction's), and on a connection the server ended while it sat in the pool, runs again
    /// on a new one.
    @Test func aReadOfOneStatementRunsOutsideATransactionAndOutlivesAnEndedConnection() throws {
        let (server, url) = try database()
        let driver = try connect(url, connections: 1)
        defer { driver.close() }
        let isolation = "SELECT current_setting('transaction_isolation')"
        #expect(try driver.transaction(isolation: .repeatableRead, readOnly: true) { try $0.query(isolation, []) } == [[.text("repeatable read")]])
        #expect(try driver.readOneStatement { try $0.query(isolation, []) } == [[.text("read committed")]])
        // A refused statement leaves the connection usable.
        #expect(throws: PostgresDriverError.self) { try driver.readOneStatement { try $0.query("SELECT 1/0", []) } }
        let pid = try driver.readOneStatement { try $0.query("SELECT pg_backend_pid()", []) }
        #expect(try driver.readOneStatement { try $0.query("SELECT pg_backend_pid()", []) } == pid)

        guard case .int(let backend)? = pid.first?.first else {
            Issue.record("pg_backend_pid() returned \(pid)")
            return
        }
        try server.psql("SELECT pg_terminate_backend(\(backend))")
        #expect(try driver.readOneStatement { try $0.query("SELECT 41 + 1", []) } == [[.int(42)]])
        #expect(try driver.readOneStatement { try $0.query("SELECT pg_backend_pid()", []) } != pid)
    }

    @Test func serverErrorsKeepTheirStateAndConstraint() throws {
        let (_, url) = try database()
        let driver = try connect(url)
        defer { driver.close() }
        try driver.transaction(isolation: .readCommitted, readOnly: false) { session in
            try session.execute("CREATE TABLE t (id bigint PRIMARY KEY, s text)", [])
            try session.execute("CREATE UNIQUE INDEX t_s ON t (s)", [])
            try session.execute("INSERT INTO t VALUES (1, 'a')", [])
        }
        do {
            try driver.transaction(isolation: .readCommitted, readOnly: false) { try $0.execute("INSERT INTO t VALUES (2, 'a')", []) }
            Issue.record("a duplicate was inserted")
        } catch let error as PostgresDriverError {
            #expect(error.kind == .server)
            #expect(error.sqlState == "23505")
            #expect(error.constraint == "t_s")
        }
        // PostgreSQL's text cannot hold U+0000: the server says so (the store checks before it writes).
        do {
            try driver.transaction(isolation: .readCommitted, readOnly: false) { try $0.execute("INSERT INTO t VALUES (3, $1)", [.text("a\0b")]) }
            Issue.record("a NUL was written")
        } catch let error as PostgresDriverError {
            #expect(error.kind == .server)
            #expect(error.sqlState == "22021")
        }
        // A read-only transaction refuses writes.
        #expect(throws: PostgresDriverError.self) {
            try driver.transaction(isolation: .readCommitted, readOnly: true) { try $0.execute("DELETE FROM t", []) }
        }
        // The pool's connections stay usable after errors.
        #expect(try driver.transaction(isolation: .readCommitted, readOnly: true) { try $0.query("SELECT s FROM t", []) } == [[.text("a")]])
    }

    @Test func aBadURLOrAMissingDatabaseIsAnErrorThatSaysWhich() throws {
        let server = try PostgresTestServer.shared.get()
        for (url, words) in [
            ("mysql://127.0.0.1/x", "not a postgres:// URL"), ("postgres://127.0.0.1", "names no database"),
            ("postgres://127.0.0.1/x?sslmode=maybe", "sslmode"),
        ] {
            do {
                _ = try connect(URL(string: url)!)
                Issue.record("\(url) connected")
            } catch {
                #expect("\(error)".contains(words), "\(error)")
            }
        }
        do {
            _ = try connect(URL(string: "\(server.serverURL)/og_no_such_database")!)
            Issue.record("connected to a missing database")
        } catch let error as PostgresDriverError {
            // The server's FATAL reply to a connection it refuses is its refusal, not a lost connection.
            #expect(error.kind == .server, "\(error)")
            #expect(error.sqlState == "3D000", "\(error)")
        }
    }

    @Test func aServerThatIsNotThereIsAConnectionError() throws {
        // A port nothing listens on: the kernel refuses the connection at once.
        let socket = Foundation.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, length) == 0 && getsockname(socket, $0, &length) == 0 } }
        let port = Int(UInt16(bigEndian: address.sin_port))
        close(socket)
        do {
            let driver = try connect(URL(string: "postgres://postgres@127.0.0.1:\(port)/postgres")!)
            _ = try driver.transaction(isolation: .readCommitted, readOnly: true) { try $0.query("SELECT 1", []) }
            Issue.record("connected to a closed port")
        } catch let error as PostgresDriverError {
            #expect(error.kind == .connection, "\(error)")
        }
    }

    @Test func threadsShareThePoolWithoutExceedingIt() throws {
        let (_, url) = try database()
        let driver = try connect(url, connections: 2)
        defer { driver.close() }
        try driver.transaction(isolation: .readCommitted, readOnly: false) { try $0.execute("CREATE TABLE t (id bigint PRIMARY KEY, pid integer)", []) }
        DispatchQueue.concurrentPerform(iterations: 16) { i in
            do {
                try driver.transaction(isolation: .readCommitted, readOnly: false) { session in
                    try session.execute("INSERT INTO t VALUES ($1, pg_backend_pid())", [.int(Int64(i))])
                }
            } catch {
                Issue.record("transaction \(i): \(error)")
            }
        }
        let rows = try driver.transaction(isolation: .readCommitted, readOnly: true) { try $0.query("SELECT count(*), count(DISTINCT pid) FROM t", []) }
        #expect(rows.first?.first == .int(16))
        guard case .int(let connections) = rows.first?.last else { Issue.record("no count"); return }
        #expect((1...2).contains(connections), "\(connections) connections for a pool of 2")
    }

    /// When every connection stays in use, a caller waits at most the URL's `pool_timeout`, then
    /// gets a typed error; a store reports it as busy, naming what it was doing, and works again
    /// once a connection is free.
    // The waits that matter are timed inside; the limit only stops a hang. Like every time limit of
    // these suites it is generous: it counts the test's own run, and in the full parallel run on
    // two cores each of a test's resumptions waits behind the other suites' jobs for Swift's
    // cooperative pool (tests of a few seconds alone end after 4–6 minutes there, and two limits of
    // 2 minutes were exceeded in CI with nothing hung).
    @Test(.timeLimit(.minutes(10)))
    func anExhaustedPoolIsAWaitThatEndsWithATypedError() throws {
        let (_, base) = try database()
        let url = URL(string: base.absoluteString + (base.query == nil ? "?" : "&") + "pool_timeout=0.3")!
        let driver = try connect(url, connections: 2)
        defer { driver.close() }
        let holding = DispatchGroup()
        let release = DispatchSemaphore(value: 0)
        let started = DispatchSemaphore(value: 0)
        for _ in 0..<2 {
            // Threads of their own: holders that block must not take Dispatch's few worker threads.
            holding.enter()
            Thread.detachNewThread {
                defer { holding.leave() }
                _ = try? driver.transaction(isolation: .readCommitted, readOnly: true) { session -> Void in
                    _ = try session.query("SELECT 1", [])
                    started.signal()
                    release.wait()
                }
            }
        }
        started.wait()
        started.wait()
        let start = Date()
        #expect {
            try driver.transaction(isolation: .readCommitted, readOnly: true) { try $0.query("SELECT 1", []) }
        } throws: { error in
            let error = error as? PostgresDriverError
            return error?.kind == .poolExhausted && error?.message.contains("all 2 connections") == true
        }
        let waited = Date().timeIntervalSince(start)
        #expect(waited >= 0.25 && waited < 5, "waited \(waited) s")
        release.signal()
        release.signal()
        holding.wait()
        #expect(try driver.transaction(isolation: .readCommitted, readOnly: true) { try $0.query("SELECT 1", []) }.first?.first == .int(1))


        // Through a store (one reader and one writer connection): ObjectGraphError.busy, saying
        // what waited.
        let coordinator = PersistentStoreCoordinator(managedObjectModel: TestModels.notes())
        let store = try coordinator.addPersistentStore(type: .postgres, at: url, options: [PersistentStoreOption.maximumReaderCount: 1])
        let backend = try #require(store.backend as? PostgresStore)
        for _ in 0..<2 {
            // Threads of their own: holders that block must not take Dispatch's few worker threads.
            holding.enter()
            Thread.detachNewThread {
                defer { holding.leave() }
                _ = try? backend.driver.transaction(isolation: .readCommitted, readOnly: true) { session -> Void in
                    _ = try session.query("SELECT 1", [])
                    started.signal()
                    release.wait()
                }
            }
        }
        started.wait()
        started.wait()
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.persistentStoreCoordinator = coordinator
        #expect {
            try context.performAndWait { try context.fetch(FetchRequest<ManagedObject>(entityName: "Note")) }
        } throws: { error in
            let error = error as? ObjectGraphError
            return error?.code == .busy && error?.message.contains("fetching Note") == true && error?.message.contains("pool_timeout") == true
        }
        release.signal()
        release.signal()
        holding.wait()
        #expect(try context.performAndWait { try context.count(for: FetchRequest<ManagedObject>(entityName: "Note")) } == 0)
    }

    @Test func aBadPoolTimeoutIsRefusedSayingWhy() throws {
        let (_, base) = try database()
        let url = URL(string: base.absoluteString + (base.query == nil ? "?" : "&") + "pool_timeout=soon")!
        #expect { try connect(url) } throws: { "\($0)".contains("pool_timeout=soon") }
    }

    @Test func aListenerHearsNotificationsFromOtherConnections() throws {
        let (_, url) = try database()
        let driver = try connect(url)
        let other = try connect(url)
        defer { driver.close(); other.close() }
        let heard = Protected<[String]>([])
        let listener = try driver.listen(channel: "og test", handler: { payload in heard.withLock { $0.append(payload) } }, reconnected: {})
        defer { listener.cancel() }
        for i in 0..<3 {
            try other.transaction(isolation: .readCommitted, readOnly: false) { try $0.execute("SELECT pg_notify('og test', $1)", [.text("n\(i)")]) }
        }
        // Nothing is sent for a transaction that rolls back.
        struct Stop: Error {}
        _ = try? other.transaction(isolation: .readCommitted, readOnly: false) { session -> Void in
            try session.execute("SELECT pg_notify('og test', 'rolled back')", [])
            throw Stop()
        }
        try other.transaction(isolation: .readCommitted, readOnly: false) { try $0.execute("SELECT pg_notify('og test', 'last')", []) }
        let deadline = Date().addingTimeInterval(10)
        while heard.withLock({ $0.count }) < 4 && Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        #expect(heard.withLock { $0 } == ["n0", "n1", "n2", "last"])
    }

    /// A session the server ends between two statements of a transaction (a restart or a shutdown
    /// terminates it with an error and closes it): the next statement fails with a connection error
    /// within seconds, not after the reply deadline, and the pool goes on with a new connection.
    // As for the exhausted pool: the wait that matters is timed inside, the limit only stops a hang.
    @Test(.timeLimit(.minutes(10)))
    func aStatementOnASessionTheServerEndedFailsAtOnce() throws {
        let (server, url) = try database()
        let driver = try connect(url, connections: 1)
        defer { driver.close() }
        let started = Protected<Date?>(nil)
        do {
            try driver.transaction(isolation: .readCommitted, readOnly: false) { session in
                guard case .int(let pid)? = try session.query("SELECT pg_backend_pid()", []).first?.first else {
                    Issue.record("no backend pid")
                    return
                }
                try server.psql("SELECT pg_terminate_backend(\(pid))")
                Thread.sleep(forTimeInterval: 0.3)
                started.withLock { $0 = Date() }
                _ = try session.query("SELECT 1", [])
            }
            Issue.record("a statement ran on a session the server had ended")
        } catch let error as PostgresDriverError {
            #expect(error.kind == .connection, "\(error)")
        }
        let waited = Date().timeIntervalSince(started.withLock { $0 } ?? Date())
        #expect(waited < 10, "the statement waited \(waited) s for a reply on a closed connection")
        #expect(try driver.transaction(isolation: .readCommitted, readOnly: true) { try $0.query("SELECT 2", []) } == [[.int(2)]])
    }

    /// A session the server ends while a statement runs: the statement's reply is the server's
    /// FATAL error (57P01), which is a lost connection, not a refused statement, and the pool goes
    /// on with a new connection.
    @Test(.timeLimit(.minutes(10)))
    func aSessionTheServerEndsDuringAStatementIsALostConnection() throws {
        let (server, url) = try database()
        let driver = try connect(url, connections: 2)
        defer { driver.close() }
        do {
            try driver.transaction(isolation: .readCommitted, readOnly: true) { session in
                guard case .int(let backend)? = try session.query("SELECT pg_backend_pid()", []).first?.first else {
                    Issue.record("no backend pid")
                    return
                }
                // Ends the session once pg_stat_activity shows its statement running (it has been sent).
                Thread {
                    let deadline = Date().addingTimeInterval(60)
                    while Date() < deadline {
                        let running = (try? server.psql("SELECT count(*) FROM pg_stat_activity WHERE pid = \(backend) AND query LIKE '%pg_sleep%' AND state = 'active'")) ?? ""
                        if running.trimmingCharacters(in: .whitespacesAndNewlines) == "1" { break }
                        Thread.sleep(forTimeInterval: 0.02)
                    }
                    _ = try? server.psql("SELECT pg_terminate_backend(\(backend))")
                }.start()
                _ = try session.query("SELECT pg_sleep(30)", [])
            }
            Issue.record("a statement ended by the server returned")
        } catch let error as PostgresDriverError {
            #expect(error.kind == .connection, "\(error)")
            #expect(error.sqlState == "57P01", "\(error)")
        }
        #expect(try driver.readOneStatement { try $0.query("SELECT 2", []) } == [[.int(2)]])
    }

    // As for the exhausted pool: the limit only stops a hang (a full parallel run, on a machine
    // busy with another build, held this test past two minutes).
    @Test(.timeLimit(.minutes(10)))
    func afterTheServerRestartsThePoolAndTheListenerConnectAgain() throws {
        let server = try PostgresTestServer.start()  // a cluster of its own: this test stops it
        let url = try server.makeDatabase()
        let driver = try connect(url)
        defer { driver.close() }
        try driver.transaction(isolation: .readCommitted, readOnly: false) { try $0.execute("CREATE TABLE t (id bigint PRIMARY KEY)", []) }
        let heard = Protected<[String]>([])
        let reconnections = Protected(0)
        let listener = try driver.listen(
            channel: "restart", handler: { payload in heard.withLock { $0.append(payload) } },
            reconnected: { reconnections.withLock { $0 += 1 } })
        defer { listener.cancel() }

        try server.stopServer()
        // A lost connection, said as soon as the pool fails to open one, not after the pool's
        // time-out (10 s): a server that is down is not a busy pool.
        let start = Date()
        do {
            try driver.transaction(isolation: .readCommitted, readOnly: false) { try $0.execute("INSERT INTO t VALUES (1)", []) }
            Issue.record("wrote to a stopped server")
        } catch let error as PostgresDriverError {
            #expect(error.kind == .connection, "\(error)")
        }
        #expect(Date().timeIntervalSince(start) < 8, "waited \(Date().timeIntervalSince(start)) s")
        try server.startServer()
        // The pool makes new connections; the listener connects again and says so.
        try driver.transaction(isolation: .readCommitted, readOnly: false) { try $0.execute("INSERT INTO t VALUES (2)", []) }
        #expect(try driver.transaction(isolation: .readCommitted, readOnly: true) { try $0.query("SELECT id FROM t", []) } == [[.int(2)]])
        var deadline = Date().addingTimeInterval(30)
        while reconnections.withLock({ $0 }) == 0 && Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
        #expect(reconnections.withLock { $0 } == 1)
        try driver.transaction(isolation: .readCommitted, readOnly: false) { try $0.execute("SELECT pg_notify('restart', 'after')", []) }
        deadline = Date().addingTimeInterval(10)
        while heard.withLock({ $0.isEmpty }) && Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        #expect(heard.withLock { $0 } == ["after"])
    }
}
