import Foundation
import Logging
import Testing
import ObjectGraph
@testable import ObjectGraphCore

/// Thrown inside a transaction to have it rolled back.
private struct RolledBack: Error {}

/// A driver that loses the connection during COMMIT on purpose, after the real transaction
/// committed (`committed`) or was rolled back: what a server that stops mid-COMMIT does.
final class CommitLosingDriver: PostgresDriver, @unchecked Sendable {  // `armed` is guarded by `lock`
    let real: any PostgresDriver
    let committed: Bool
    private let lock = NSLock()
    private var armed = false

    init(real: any PostgresDriver, committed: Bool) {
        self.real = real
        self.committed = committed
    }

    /// Loses the next read-write transaction's COMMIT.
    func arm() { lock.withLock { armed = true } }

    func transaction<T>(isolation: PostgresIsolation, readOnly: Bool, _ body: (any PostgresSession) throws -> T) throws -> T {
        let lose = !readOnly && lock.withLock { let was = armed; armed = false; return was }
        guard lose else { return try real.transaction(isolation: isolation, readOnly: readOnly, body) }
        do {
            _ = try real.transaction(isolation: isolation, readOnly: readOnly) { session in
                let result = try body(session)
                if !committed { throw RolledBack() }
                return result
            }
        } catch is RolledBack {}
        throw PostgresDriverError(kind: .connection, message: "serverClosedConnection (simulated)", commitInDoubt: true)
    }

    func listen(channel: String, handler: @escaping @Sendable (String) -> Void, reconnected: @escaping @Sendable () -> Void) throws -> any PostgresListener {
        try real.listen(channel: channel, handler: handler, reconnected: reconnected)
    }

    func exportSnapshot() throws -> any PostgresExportedSnapshot { try real.exportSnapshot() }

    func close() { real.close() }
}

/// Servers that stop, restart, and lose connections in the middle of a save.
@Suite("PostgreSQL store: faults", .needsPostgreSQL, .serialized)
struct PostgresFaultTests {
    /// A coordinator whose store goes through `driver`.
    func coordinator(_ url: URL, driver: any PostgresDriver) throws -> PersistentStoreCoordinator {
        let model = TestModels.notes()
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        let backend = try PostgresStore(url: url, model: model, readOnly: false, maximumConnections: 4, logger: Logger(label: "test"), driver: driver)
        _ = try coordinator.addTestStore(type: .postgres, url: url, backend: backend)
        return coordinator
    }

    /// A new database, and a context on a coordinator whose store loses the COMMIT it is armed for.
    func commitLosingStack(committed: Bool) throws -> (URL, CommitLosingDriver, PersistentStoreCoordinator, ManagedObjectContext) {
        let url = try PostgresTestServer.shared.get().makeDatabase()
        let real = try PostgresDrivers.factory().connect(url: url, maximumConnections: 4, logger: Logger(label: "test"))
        let driver = CommitLosingDriver(real: real, committed: committed)
        let coordinator = try coordinator(url, driver: driver)
        let context = ManagedObjectContext(concurrencyType: .confinement)
        context.persistentStoreCoordinator = coordinator
        return (url, driver, coordinator, context)
    }

    func count(_ url: URL) throws -> Int {
        let coordinator = PersistentStoreCoordinator(managedObjectModel: TestModels.notes())
        try coordinator.addPersistentStore(type: .postgres, at: url)
        let context = ManagedObjectContext(concurrencyType: .confinement)
        context.persistentStoreCoordinator = coordinator
        return try context.count(for: FetchRequest<ManagedObject>(entityName: "Note"))
    }

    @Test(arguments: [true, false])
    func aCommitWhoseConnectionIsLostIsAskedAfter(_ committed: Bool) throws {
        let (url, driver, _, context) = try commitLosingStack(committed: committed)
        // A many-to-many pair: the save runs in a transaction (not as one statement, below).
        let tag = context.insert("Tag", ["name": "t"])
        for i in 0..<3 { context.insert("Note", ["title": "n\(i)", "tags": Set([tag])]) }
        driver.arm()
        if committed {
            // The server says the transaction committed: the save succeeded, whole.
            try context.save()
            #expect(!context.hasChanges)
            #expect(try count(url) == 3)
        } else {
            // The server says it was rolled back: the save fails, nothing was written, the changes are kept.
            let error = try #require(throws: ObjectGraphError.self) { try context.save() }
            #expect(error.code == .io)
            #expect(error.message.contains("nothing was written"))
            #expect(context.hasChanges)
            #expect(try count(url) == 0)
            try context.save()
            #expect(try count(url) == 3)
        }
    }

    /// A save sent as one statement outside a transaction is found by its nonce when its
    /// connection is lost: if it committed, the save succeeded; if not, nothing was written and
    /// the save runs again in a transaction. Either way the rows are there once.
    @Test(arguments: [true, false])
    func aOneStatementSaveWhoseConnectionIsLostIsFoundByItsNonce(_ committed: Bool) throws {
        let (url, driver, coordinator, context) = try commitLosingStack(committed: committed)
        context.insert("Note", ["title": "first"])
        try context.save()  // it reserves the keys the next save takes
        let before = coordinator.statistics.sqlStatements
        for i in 0..<3 { context.insert("Note", ["title": "n\(i)"]) }
        driver.arm()
        try context.save()
        #expect(!context.hasChanges)
        #expect(try count(url) == 4)
        // The lost statement, then (when it had not committed) the transaction's statements.
        let statements = coordinator.statistics.sqlStatements - before
        #expect(committed ? statements == 1 : statements > 1)
    }

    @Test func aServerStoppedDuringASaveLeavesNothingPartialAndTheCoordinatorRecovers() throws {
        let server = try PostgresTestServer.start()
        let url = try server.makeDatabase()
        let coordinator = PersistentStoreCoordinator(managedObjectModel: TestModels.notes())
        try coordinator.addPersistentStore(type: .postgres, at: url)
        let context = ManagedObjectContext(concurrencyType: .confinement)
        context.persistentStoreCoordinator = coordinator
        let folder = context.insert("Folder", ["name": "f"])
        try context.save()

        // A save big enough to be under way when the server stops.
        for i in 0..<3000 { context.insert("Note", ["title": "n\(i)", "folder": folder]) }
        let stopper = Thread { _ = try? server.stopServer() }
        Thread.sleep(forTimeInterval: 0)
        stopper.start()
        let outcome = Result { try context.save() }
        while stopper.isExecuting || !stopper.isFinished { Thread.sleep(forTimeInterval: 0.05) }
        try server.startServer()
        let stored = try count(url)
        switch outcome {
        case .success:
            #expect(stored == 3000)
            #expect(!context.hasChanges)
        case .failure(let error):
            #expect((error as? ObjectGraphError)?.code == .io, "\(error)")
            #expect(stored == 0, "a failed save wrote \(stored) notes")
            #expect(context.hasChanges)
            // The same coordinator saves again once the server is back.
            try context.save()
            #expect(try count(url) == 3000)
        }
        // And goes on working.
        context.insert("Note", ["title": "after"])
        try context.save()
        #expect(try count(url) == 3001)
    }
}
