import Foundation
import Logging
import Testing
import ObjectGraph
@testable import ObjectGraphCore

/// A driver whose write transactions hand each statement to `interpose` before running it, and
/// record them.
final class InterposingDriver: PostgresDriver, @unchecked Sendable {  // `statements` is guarded by `lock`
    let real: any PostgresDriver
    private let interpose: @Sendable (_ sql: String, _ parameters: [PostgresValue], _ real: any PostgresDriver) throws -> Void
    private let lock = NSLock()
    private var statements: [String] = []

    init(real: any PostgresDriver, interpose: @escaping @Sendable (String, [PostgresValue], any PostgresDriver) throws -> Void) {
        self.real = real
        self.interpose = interpose
    }

    /// The statements of the write transactions and of the writes outside one since the last call.
    func takeStatements() -> [String] { lock.withLock { defer { statements = [] }; return statements } }

    func transaction<T>(isolation: PostgresIsolation, readOnly: Bool, _ body: (any PostgresSession) throws -> T) throws -> T {
        guard !readOnly else { return try real.transaction(isolation: isolation, readOnly: readOnly, body) }
        return try real.transaction(isolation: isolation, readOnly: readOnly) { session in
            try body(Session(session: session, driver: self))
        }
    }

    func readOneStatement<T>(_ body: (any PostgresSession) throws -> T) throws -> T { try real.readOneStatement(body) }

    func writeOneStatement<T>(_ body: (any PostgresSession) throws -> T) throws -> T {
        try real.writeOneStatement { session in try body(Session(session: session, driver: self)) }
    }

    func listen(channel: String, handler: @escaping @Sendable (String) -> Void, reconnected: @escaping @Sendable () -> Void) throws -> any PostgresListener {
        try real.listen(channel: channel, handler: handler, reconnected: reconnected)
    }

    func exportSnapshot() throws -> any PostgresExportedSnapshot { try real.exportSnapshot() }

    func close() { real.close() }

    private struct Session: PostgresSession {
        let session: any PostgresSession
        let driver: InterposingDriver

        private func before(_ sql: String, _ parameters: [PostgresValue]) throws {
            driver.lock.withLock { driver.statements.append(sql) }
            try driver.interpose(sql, parameters, driver.real)
        }

        func query(_ sql: String, _ parameters: [PostgresValue]) throws -> [[PostgresValue]] {
            try before(sql, parameters)
            return try session.query(sql, parameters)
        }

        func execute(_ sql: String, _ parameters: [PostgresValue]) throws -> Int {
            try before(sql, parameters)
            return try session.execute(sql, parameters)
        }
    }
}

/// What the save's own check cannot see, a row another instance commits between that check and the
/// save's INSERT or UPDATE, the store's unique indexes refuse, and the save reports it as the check
/// would have: a constraint conflict, with the store as it was and the context's changes kept.
@Suite("PostgreSQL unique indexes refuse what a save's check missed", .needsPostgreSQL, .serialized)
struct PostgresUniqueIndexTests {
    static let model = ManagedObjectModel(entities: [
        EntityDescription(name: "User", properties: [.attribute("email", .string), .attribute("name", .string)], uniquenessConstraints: [["email"]]),
    ])

    /// A coordinator on the store at `url` (the model above), through `driver`.
    static func coordinator(_ url: URL, driver: any PostgresDriver) throws -> PersistentStoreCoordinator {
        let coordinator = PersistentStoreCoordinator(managedObjectModel: Self.model)
        let backend = try PostgresStore(url: url, model: Self.model, readOnly: false, maximumConnections: 4, logger: Logger(label: "test"), driver: driver)
        _ = try coordinator.addTestStore(type: .postgres, url: url, backend: backend)
        return coordinator
    }

    static func context(_ coordinator: PersistentStoreCoordinator) -> ManagedObjectContext {
        let context = ManagedObjectContext(concurrencyType: .confinement)
        context.persistentStoreCoordinator = coordinator
        return context
    }

    private func emails(_ url: URL) throws -> [String] {
        let coordinator = PersistentStoreCoordinator(managedObjectModel: Self.model)
        try coordinator.addPersistentStore(type: .postgres, at: url)
        let request = FetchRequest<ManagedObject>(entityName: "User")
        request.sortDescriptors = [FetchSortDescriptor(key: "email", ascending: true)]
        return try Self.context(coordinator).fetch(request).compactMap { $0.value(forKey: "email") as? String }
    }

    /// Commits, on a connection of its own, a user whose email is `email`, once, when `armed` and
    /// the statement inserts a user (alone, or in a save's one statement).
    private static func committingADuplicate(_ armed: Protected<Bool>, email: String) -> @Sendable (String, [PostgresValue], any PostgresDriver) throws -> Void {
        { sql, _, real in
            guard sql.contains(#"INSERT INTO "public"."ZUSER""#), armed.withLock({ let was = $0; $0 = false; return was }) else { return }
            try real.transaction(isolation: .readCommitted, readOnly: false) { session in
                try session.execute(
                    #"INSERT INTO "public"."ZUSER" ("Z_PK", "Z_ENT", "Z_OPT", "ZEMAIL", "ZNAME") SELECT 5000, "Z_ENT", 1, $1, 'theirs' FROM "public"."ZUSER" LIMIT 1"#,
                    [.text(email)])
            }
        }
    }

    @Test func anInsertTheIndexRefusesIsAConstraintConflictAndWritesNothing() throws {
        let url = try PostgresTestServer.shared.get().makeDatabase()
        let armed = Protected(false)
        let real = try PostgresDrivers.factory().connect(url: url, maximumConnections: 4, logger: Logger(label: "test"))
        let driver = InterposingDriver(real: real, interpose: Self.committingADuplicate(armed, email: "y@example.com"))
        let context = Self.context(try Self.coordinator(url, driver: driver))
        context.insert("User", ["email": "a@example.com", "name": "a"])
        try context.save()
        #expect(!driver.takeStatements().contains { $0.hasPrefix("SAVEPOINT") })

        context.insert("User", ["email": "x@example.com", "name": "ours"])
        context.insert("User", ["email": "y@example.com", "name": "ours too"])
        armed.withLock { $0 = true }
        let error = try #require(throws: ObjectGraphError.self) { try context.save() }
        #expect(error.code == .constraintConflict)
        #expect(error.message.contains("@example.com"))
        #expect(context.hasChanges)
        // The duplicate another connection committed is there; nothing of the failed save is.
        #expect(try emails(url).count == 2)
        #expect(!driver.takeStatements().contains { $0.hasPrefix("SAVEPOINT") })
    }

    /// The save's uniqueness check after its writes: whether it runs (a `SELECT` of the email).
    private static func checked(_ statements: [String]) -> Bool {
        statements.contains { $0.hasPrefix("SELECT") && $0.contains("ZEMAIL") }
    }

    /// With every unique index in place, the indexes alone enforce the constraints: a save sends
    /// no query of its own for them, and still reports each conflict, within one save or across
    /// two, with nothing written.
    @Test func withEveryUniqueIndexInPlaceTheIndexesAloneEnforceTheConstraints() throws {
        let url = try PostgresTestServer.shared.get().makeDatabase()
        let real = try PostgresDrivers.factory().connect(url: url, maximumConnections: 4, logger: Logger(label: "test"))
        let driver = InterposingDriver(real: real) { _, _, _ in }
        let coordinator = try Self.coordinator(url, driver: driver)
        let first = Self.context(coordinator)
        let user = first.insert("User", ["email": "a@example.com", "name": "a"])
        try first.save()
        #expect(!Self.checked(driver.takeStatements()))

        let second = Self.context(coordinator)
        second.insert("User", ["email": "a@example.com", "name": "again"])
        var error = try #require(throws: ObjectGraphError.self) { try second.save() }
        #expect(error.code == .constraintConflict)
        #expect(second.hasChanges)
        second.rollback()

        second.insert("User", ["email": "b@example.com", "name": "b"])
        second.insert("User", ["email": "b@example.com", "name": "b too"])
        error = try #require(throws: ObjectGraphError.self) { try second.save() }
        #expect(error.code == .constraintConflict)
        #expect(second.hasChanges)

        // Two objects that exchange their values in one save.
        let other = first.insert("User", ["email": "c@example.com", "name": "c"])
        try first.save()
        _ = driver.takeStatements()
        user.setValue("c@example.com", forKey: "email")
        other.setValue("a@example.com", forKey: "email")
        try first.save()
        #expect(!Self.checked(driver.takeStatements()))
        #expect(try emails(url) == ["a@example.com", "c@example.com"])
    }

    /// A store that lacks one of its unique indexes (written before they were made, or dropped by
    /// hand) is still checked by each save.
    @Test func aStoreWithoutAUniqueIndexIsCheckedBySaves() throws {
        let url = try PostgresTestServer.shared.get().makeDatabase()
        let real = try PostgresDrivers.factory().connect(url: url, maximumConnections: 4, logger: Logger(label: "test"))
        _ = try Self.coordinator(url, driver: real)
        try real.transaction(isolation: .readCommitted, readOnly: false) { session in
            _ = try session.execute(#"DROP INDEX "public"."Z_User_UNIQUE_email""#, [])
        }
        let driver = InterposingDriver(real: real) { _, _, _ in }
        let context = Self.context(try Self.coordinator(url, driver: driver))
        context.insert("User", ["email": "a@example.com", "name": "a"])
        try context.save()
        #expect(Self.checked(driver.takeStatements()))
        context.insert("User", ["email": "a@example.com", "name": "again"])
        let error = try #require(throws: ObjectGraphError.self) { try context.save() }
        #expect(error.code == .constraintConflict)
        #expect(try emails(url) == ["a@example.com"])
    }

    @Test func onlyAnUpdateThatWritesAConstrainedValueRunsInASavepoint() throws {
        let url = try PostgresTestServer.shared.get().makeDatabase()
        let real = try PostgresDrivers.factory().connect(url: url, maximumConnections: 4, logger: Logger(label: "test"))
        let taken = Protected(false)
        // Before the update that takes "b@example.com", another connection takes it.
        let driver = InterposingDriver(real: real) { sql, _, real in
            guard sql.contains(#"UPDATE "public"."ZUSER""#) && sql.contains("ZEMAIL"), taken.withLock({ let was = $0; $0 = false; return was }) else { return }
            try real.transaction(isolation: .readCommitted, readOnly: false) { session in
                try session.execute(#"UPDATE "public"."ZUSER" SET "ZEMAIL" = 'b@example.com' WHERE "ZNAME" = 'other'"#, [])
            }
        }
        let context = Self.context(try Self.coordinator(url, driver: driver))
        let user = context.insert("User", ["email": "a@example.com", "name": "a"])
        context.insert("User", ["email": "o@example.com", "name": "other"])
        try context.save()
        _ = driver.takeStatements()

        user.setValue("renamed", forKey: "name")
        try context.save()
        #expect(!driver.takeStatements().contains { $0.hasPrefix("SAVEPOINT") })

        user.setValue("b@example.com", forKey: "email")
        taken.withLock { $0 = true }
        let error = try #require(throws: ObjectGraphError.self) { try context.save() }
        #expect(error.code == .constraintConflict)
        #expect(error.message.contains("b@example.com"))
        #expect(context.hasChanges)
        #expect(driver.takeStatements().contains { $0.hasPrefix("SAVEPOINT") })
        #expect(try emails(url) == ["a@example.com", "b@example.com"])
    }
}
