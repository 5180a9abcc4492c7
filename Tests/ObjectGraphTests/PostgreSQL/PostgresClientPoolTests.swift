import Foundation
import Logging
import PostgresNIO
import Testing
import ObjectGraph
@testable import ObjectGraphCore
@testable import ObjectGraphPostgres

/// The PostgreSQL store's pool is PostgresNIO's `PostgresClient`: the store's own, or the app's
/// (``PersistentStoreOption/postgresClient``), leased by synchronous callers without needing a
/// thread of Swift's cooperative pool.
@Suite("PostgreSQL store's pool (PostgresClient)", .needsPostgreSQL)
struct PostgresClientPoolTests {
    private func database(poolTimeout: Double? = nil) throws -> URL {
        let url = try PostgresTestServer.shared.get().makeDatabase()
        guard let poolTimeout else { return url }
        return URL(string: url.absoluteString + (url.query == nil ? "?" : "&") + "pool_timeout=\(poolTimeout)")!
    }

    /// The app's client, of `connections` connections, running until `body` returns.
    private func withAppClient<T>(
        _ url: URL, connections: Int, _ body: (PostgresClient) async throws -> T
    ) async throws -> T {
        var configuration = try PostgresURL(url).clientConfiguration()
        configuration.options.maximumConnections = connections
        let client = PostgresClient(configuration: configuration, backgroundLogger: Logger(label: "test.app-client"))
        let running = Task { await client.run() }
        defer { running.cancel() }
        return try await body(client)
    }

    /// A store given the app's client takes its connections from it: while the app holds the
    /// client's only connection, the store waits for it (and says so after its pool_timeout); once
    /// the app lets it go, the store reads and saves. Removing the store leaves the client running.
    @Test(.timeLimit(.minutes(10)))
    func aStoreGivenTheAppsClientTakesItsConnectionsFromIt() async throws {
        let url = try database(poolTimeout: 2)
        try await withAppClient(url, connections: 1) { client in
            // Its connection open before the store is added (a busy machine may take a while).
            try await client.query("SELECT 1")
            let coordinator = PersistentStoreCoordinator(managedObjectModel: TestModels.notes())
            let store = try coordinator.addPersistentStore(type: .postgres, at: url, options: [PersistentStoreOption.postgresClient: client])
            let context = ManagedObjectContext(concurrencyType: .privateQueue)
            context.persistentStoreCoordinator = coordinator
            try await context.perform {
                context.insert("Folder", ["name": "inbox"])
                try context.save()
            }

            // The app holds the client's one connection: the store's read waits, then is busy.
            let holding = AsyncStream<Void>.makeStream()
            let release = AsyncStream<Void>.makeStream()
            let holder = Task {
                try await client.withConnection { _ in
                    holding.continuation.yield()
                    for await _ in release.stream { break }
                }
            }
            for await _ in holding.stream { break }
            let busy = await context.perform {
                Result { try context.count(for: FetchRequest<ManagedObject>(entityName: "Folder")) }
            }
            #expect(throws: ObjectGraphError.self) { try busy.get() }
            if case .failure(let error as ObjectGraphError) = busy {
                #expect(error.code == .busy, "\(error)")
                #expect(error.message.contains("app's PostgresClient"), "\(error)")
            }
            release.continuation.yield()
            try await holder.value

            #expect(try await context.perform { try context.count(for: FetchRequest<ManagedObject>(entityName: "Folder")) } == 1)
            try coordinator.removePersistentStore(store)
            // The app's client still runs.
            let rows = try await client.query("SELECT count(*) FROM \"ZFOLDER\"")
            var counted: Int64?
            for try await row in rows { counted = try row.decode(Int64.self) }
            #expect(counted == 1)
        }
    }

    @Test func anOptionThatIsNotAPostgresClientIsRefusedNamingIt() throws {
        let url = try database()
        let coordinator = PersistentStoreCoordinator(managedObjectModel: TestModels.notes())
        #expect {
            try coordinator.addPersistentStore(type: .postgres, at: url, options: [PersistentStoreOption.postgresClient: "postgres://elsewhere"])
        } throws: { error in
            let error = error as? ObjectGraphError
            return error?.code == .unsupported && error?.key == PersistentStoreOption.postgresClient
                && error?.message.contains("must be a PostgresClient, not String") == true
        }
        #expect(coordinator.persistentStores.isEmpty)
    }

    /// Synchronous callers on every thread of Swift's cooperative pool (here, more tasks blocking
    /// in the driver than the pool has threads, and more than the store has connections) still get
    /// their connections: the leases' tasks run on an event loop, not on the threads they block.
    @Test(.timeLimit(.minutes(10)))
    func callersBlockingEveryCooperativeThreadStillGetConnections() async throws {
        let url = try database(poolTimeout: 30)
        let driver = try PostgresDrivers.factory().connect(url: url, maximumConnections: 2, logger: Logger(label: "test"))
        defer { driver.close() }
        let callers = 4 * max(2, ProcessInfo.processInfo.activeProcessorCount)
        let answers = try await withThrowingTaskGroup(of: Int64.self) { group in
            for index in 0..<callers {
                group.addTask {
                    // Blocks this cooperative thread until the driver answers.
                    let rows = try driver.transaction(isolation: .readCommitted, readOnly: true) { session in
                        try session.query("SELECT $1::bigint FROM pg_sleep(0.01)", [.int(Int64(index))])
                    }
                    guard case .int(let value)? = rows.first?.first else { throw PostgresDriverError(kind: .other, message: "no row") }
                    return value
                }
            }
            var answers: [Int64] = []
            for try await answer in group { answers.append(answer) }
            return answers
        }
        #expect(answers.sorted() == (0..<Int64(callers)).map { $0 })
    }
}
