import Foundation
import Logging
import Testing
import ObjectGraph
@testable import ObjectGraphCore

/// A driver that records each read it is asked for: in a transaction, or one statement outside one,
/// and the statements each ran.
final class ReadRecordingDriver: PostgresDriver, @unchecked Sendable {  // `reads` is guarded by `lock`
    enum Read: Equatable {
        case transaction([String])
        case oneStatement([String])
    }

    let real: any PostgresDriver
    private let lock = NSLock()
    private var reads: [Read] = []

    init(real: any PostgresDriver) { self.real = real }

    /// The reads since the last call, in order; not the change listener's reads of the change log,
    /// which it makes on its own queue whenever a save is announced.
    func takeReads() -> [Read] { lock.withLock { defer { reads = [] }; return reads } }

    private func record(_ read: Read) {
        let statements = switch read { case .transaction(let s), .oneStatement(let s): s }
        if statements.contains(where: { $0.contains(PostgresStoreTables.changeTable) }) { return }
        lock.withLock { reads.append(read) }
    }

    func transaction<T>(isolation: PostgresIsolation, readOnly: Bool, _ body: (any PostgresSession) throws -> T) throws -> T {
        guard readOnly else { return try real.transaction(isolation: isolation, readOnly: readOnly, body) }
        let recording = RecordingSession()
        defer { record(.transaction(recording.statements)) }
        return try real.transaction(isolation: isolation, readOnly: readOnly) { session in
            recording.session = session
            return try body(recording)
        }
    }

    func readOneStatement<T>(_ body: (any PostgresSession) throws -> T) throws -> T {
        let recording = RecordingSession()
        defer { record(.oneStatement(recording.statements)) }
        return try real.readOneStatement { session in
            recording.session = session
            return try body(recording)
        }
    }

    func listen(channel: String, handler: @escaping @Sendable (String) -> Void, reconnected: @escaping @Sendable () -> Void) throws -> any PostgresListener {
        try real.listen(channel: channel, handler: handler, reconnected: reconnected)
    }

    func exportSnapshot() throws -> any PostgresExportedSnapshot { try real.exportSnapshot() }

    func close() { real.close() }
}

/// A session that passes statements on and records their SQL.
private final class RecordingSession: PostgresSession {
    var session: (any PostgresSession)?
    private(set) var statements: [String] = []

    func query(_ sql: String, _ parameters: [PostgresValue]) throws -> [[PostgresValue]] {
        statements.append(sql)
        return try session!.query(sql, parameters)
    }

    func execute(_ sql: String, _ parameters: [PostgresValue]) throws -> Int {
        statements.append(sql)
        return try session!.execute(sql, parameters)
    }

    func forEachRow(_ sql: String, _ parameters: [PostgresValue], _ body: ([PostgresValue]) throws -> Void) throws {
        statements.append(sql)
        try session!.forEachRow(sql, parameters, body)
    }
}

/// A read PostgreSQL answers with one statement runs outside a transaction: one statement reads one
/// snapshot either way, and a BEGIN and a COMMIT would be two round trips of its three. Reads of
/// several statements keep their `REPEATABLE READ` transaction, so that every statement reads the
/// same snapshot.
@Suite("PostgreSQL reads of one statement run outside a transaction", .needsPostgreSQL)
struct PostgresReadStatementTests {
    private func stack() throws -> (PersistentStoreCoordinator, ReadRecordingDriver, URL) {
        let url = try PostgresTestServer.shared.get().makeDatabase()
        let real = try PostgresDrivers.factory().connect(url: url, maximumConnections: 4, logger: Logger(label: "test"))
        let driver = ReadRecordingDriver(real: real)
        let coordinator = PersistentStoreCoordinator(managedObjectModel: TestModels.notes())
        let backend = try PostgresStore(url: url, model: TestModels.notes(), readOnly: false, maximumConnections: 4, logger: Logger(label: "test"), driver: driver)
        _ = try coordinator.addTestStore(type: .postgres, url: url, backend: backend)
        return (coordinator, driver, url)
    }

    private func context(_ coordinator: PersistentStoreCoordinator) -> ManagedObjectContext {
        let context = ManagedObjectContext(concurrencyType: .confinement)
        context.persistentStoreCoordinator = coordinator
        return context
    }

    @Test func fetchesCountsAndFaultsAnsweredInSQLAreOneStatementEach() throws {
        let (coordinator, driver, _) = try stack()
        let writer = context(coordinator)
        let folder = writer.insert("Folder", ["name": "f"])
        for i in 0..<5 { writer.insert("Note", ["title": "n\(i)", "rank": Int64(i), "folder": folder]) }
        try writer.save()
        _ = driver.takeReads()

        let reader = context(coordinator)
        let request = FetchRequest<ManagedObject>(entityName: "Note")
        request.predicate = FetchPredicate(format: "folder.name == %@ AND rank >= 2", "f")
        request.sortDescriptors = [FetchSortDescriptor(key: "rank", ascending: false)]
        request.fetchLimit = 2
        #expect(try reader.fetch(request).map { $0.value(forKey: "title") as? String } == ["n4", "n3"])
        var reads = driver.takeReads()
        #expect(reads.count == 1)
        guard case .oneStatement(let statements)? = reads.first else {
            Issue.record("the fetch ran as \(reads)")
            return
        }
        #expect(statements.count == 1)
        #expect(statements.first?.hasPrefix("SELECT") == true)

        #expect(try reader.count(for: request) == 2)
        reads = driver.takeReads()
        #expect(reads.count == 1)
        if case .oneStatement(let statements)? = reads.first { #expect(statements.count == 1) } else { Issue.record("the count ran as \(reads)") }

        // The folder's row, read by ID when its fault fires in a context of its own (the row cache
        // holds no row of it: the coordinator is new).
        let other = PersistentStoreCoordinator(managedObjectModel: TestModels.notes())
        let otherDriver = ReadRecordingDriver(real: driver.real)
        let backend = try PostgresStore(
            url: try #require(coordinator.persistentStores.first?.url), model: TestModels.notes(), readOnly: false, maximumConnections: 4,
            logger: Logger(label: "test"), driver: otherDriver)
        _ = try other.addTestStore(type: .postgres, url: coordinator.persistentStores.first?.url, backend: backend)
        let faulting = context(other)
        let fault = faulting.object(with: ManagedObjectID(entity: folder.entity, store: try #require(other.persistentStores.first), primaryKey: try #require(folder.objectID.primaryKey)))
        _ = otherDriver.takeReads()
        #expect(fault.value(forKey: "name") as? String == "f")
        reads = otherDriver.takeReads()
        #expect(reads.count == 1)
        if case .oneStatement(let statements)? = reads.first { #expect(statements.count == 1) } else { Issue.record("the fault ran as \(reads)") }
    }

    /// What memory evaluates (here `MATCHES`) may read related rows as it goes: those reads and
    /// the fetch's own statement share one transaction.
    @Test func aFetchPartlyEvaluatedInMemoryStaysOneTransaction() throws {
        let (coordinator, driver, _) = try stack()
        let writer = context(coordinator)
        let folder = writer.insert("Folder", ["name": "f"])
        for i in 0..<3 { writer.insert("Note", ["title": "n\(i)", "folder": folder]) }
        try writer.save()
        _ = driver.takeReads()

        let request = FetchRequest<ManagedObject>(entityName: "Note")
        request.predicate = FetchPredicate(format: "title MATCHES %@", "n[01]")
        request.sortDescriptors = [FetchSortDescriptor(key: "title", ascending: true)]
        #expect(try context(coordinator).fetch(request).map { $0.value(forKey: "title") as? String } == ["n0", "n1"])
        let reads = driver.takeReads()
        #expect(reads.count == 1)
        guard case .transaction(let statements)? = reads.first else {
            Issue.record("the fetch ran as \(reads)")
            return
        }
        #expect(!statements.isEmpty)
    }
}
