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

    /// A fetch that prefetches a to-one relationship reads its destinations' rows in its own
    /// statement (a `LEFT JOIN`): the folders of a page of notes cost no second round trip, and
    /// the notes' folders are there, filled, whether the notes come as faults or with values.
    @Test(arguments: [true, false]) func aFetchReadsItsToOnePrefetchesInItsOwnStatement(asFaults: Bool) throws {
        let (coordinator, driver, _) = try stack()
        let writer = context(coordinator)
        let folders = (0..<2).map { writer.insert("Folder", ["name": "f\($0)"]) }
        for i in 0..<6 { writer.insert("Note", ["title": "n\(i)", "rank": Int64(i), "folder": folders[i % 2]]) }
        writer.insert("Note", ["title": "loose", "rank": Int64(6)])
        try writer.save()
        _ = driver.takeReads()

        let reader = context(coordinator)
        let request = FetchRequest<ManagedObject>(entityName: "Note")
        request.predicate = FetchPredicate(format: "rank >= 1")
        request.sortDescriptors = [FetchSortDescriptor(key: "rank", ascending: true)]
        request.fetchLimit = 5
        request.returnsObjectsAsFaults = asFaults
        request.relationshipKeyPathsForPrefetching = ["folder"]
        let notes = try reader.fetch(request)
        let reads = driver.takeReads()
        guard reads.count == 1, case .oneStatement(let statements) = reads[0] else {
            Issue.record("the fetch ran as \(reads)")
            return
        }
        #expect(statements.count == 1)
        #expect(statements.first?.contains("LEFT JOIN") == true)
        // Each folder once, filled from the fetch's statement.
        let fetchedFolders = notes.compactMap { $0.value(forKey: "folder") as? ManagedObject }
        #expect(fetchedFolders.count == 5)
        #expect(Set(fetchedFolders.map(ObjectIdentifier.init)).count == 2)
        #expect(notes.map { $0.value(forKey: "title") as? String } == ["n1", "n2", "n3", "n4", "n5"])
        #expect(fetchedFolders.map { $0.value(forKey: "name") as? String } == ["f1", "f0", "f1", "f0", "f1"])
        #expect(driver.takeReads().isEmpty)

        // A page whose only note has no folder reads no folder.
        request.predicate = FetchPredicate(format: "title == %@", "loose")
        let loose = try context(coordinator).fetch(request)
        #expect(loose.count == 1)
        #expect(loose.first?.value(forKey: "folder") == nil)
        #expect(driver.takeReads().count == 1)
    }

    /// A fetch whose predicate reads through a to-one relationship (`folder.name == %@`) and that
    /// prefetches that relationship joins the destination's table once, and reads the prefetched
    /// rows from the predicate's join.
    @Test func aPrefetchThePredicateAlreadyJoinsIsReadFromThePredicatesJoin() throws {
        let (coordinator, driver, _) = try stack()
        let writer = context(coordinator)
        let folders = (0..<3).map { writer.insert("Folder", ["name": "f\($0)"]) }
        for i in 0..<9 { writer.insert("Note", ["title": "n\(i)", "rank": Int64(i), "folder": folders[i % 3]]) }
        writer.insert("Note", ["title": "loose", "rank": Int64(9)])
        try writer.save()
        _ = driver.takeReads()

        let reader = context(coordinator)
        let request = FetchRequest<ManagedObject>(entityName: "Note")
        request.predicate = FetchPredicate(format: "folder.name == %@ OR folder.name == %@", "f1", "f2")
        request.sortDescriptors = [FetchSortDescriptor(key: "rank", ascending: false)]
        request.fetchLimit = 4
        request.returnsObjectsAsFaults = false
        request.relationshipKeyPathsForPrefetching = ["folder"]
        let notes = try reader.fetch(request)
        let reads = driver.takeReads()
        guard reads.count == 1, case .oneStatement(let statements) = reads[0], let sql = statements.first else {
            Issue.record("the fetch ran as \(reads)")
            return
        }
        #expect(sql.components(separatedBy: "LEFT JOIN").count == 2, "\(sql)")
        #expect(notes.map { $0.value(forKey: "title") as? String } == ["n8", "n7", "n5", "n4"])
        let fetchedFolders = notes.compactMap { $0.value(forKey: "folder") as? ManagedObject }
        #expect(fetchedFolders.map { $0.value(forKey: "name") as? String } == ["f2", "f1", "f2", "f1"])
        #expect(driver.takeReads().isEmpty)
    }

    /// A prefetched destination that is also one of the fetched rows (a tree's parent) is
    /// registered once, with the row's values, and a context's unsaved change to a destination
    /// is kept: the store's row does not replace it.
    @Test func aToOnePrefetchThatMeetsTheRowsOrUnsavedChangesKeepsEachObjectsState() throws {
        let model = ManagedObjectModel(entities: [
            EntityDescription(name: "Node", properties: [
                .attribute("name", .string, isOptional: false, defaultValue: ""),
                .relationship("parent", destination: "Node", toMany: false, inverse: "children", deleteRule: .nullify),
                .relationship("children", destination: "Node", toMany: true, inverse: "parent", deleteRule: .cascade),
            ]),
        ])
        let url = try PostgresTestServer.shared.get().makeDatabase()
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        _ = try coordinator.addPersistentStore(type: .postgres, at: url)
        let writer = context(coordinator)
        let root = writer.insert("Node", ["name": "root"])
        let child = writer.insert("Node", ["name": "child", "parent": root])
        writer.insert("Node", ["name": "grandchild", "parent": child])
        try writer.save()

        let reader = context(coordinator)
        let request = FetchRequest<ManagedObject>(entityName: "Node")
        request.sortDescriptors = [FetchSortDescriptor(key: "name", ascending: true)]
        request.relationshipKeyPathsForPrefetching = ["parent"]
        let nodes = try reader.fetch(request)
        #expect(nodes.map { $0.value(forKey: "name") as? String } == ["child", "grandchild", "root"])
        #expect((nodes[1].value(forKey: "parent") as? ManagedObject) === nodes[0])
        #expect((nodes[0].value(forKey: "parent") as? ManagedObject) === nodes[2])
        #expect(reader.registeredObjects.count == 3)

        let editing = context(coordinator)
        let edited = try editing.existingObject(with: root.objectID)
        edited.setValue("renamed", forKey: "name")
        let again = try editing.fetch(request)
        #expect(again.compactMap { $0.value(forKey: "name") as? String }.sorted() == ["child", "grandchild", "renamed"])
        #expect(edited.hasChanges)
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
