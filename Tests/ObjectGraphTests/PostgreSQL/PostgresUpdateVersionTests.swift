import Foundation
import Logging
import Testing
import ObjectGraph
@testable import ObjectGraphCore

/// A save whose one written row is an update checks the row's version in its `UPDATE` (`AND
/// "Z_OPT" = …`), without reading the row first (as does a save sent as one statement, for each of
/// its updates); a save in a transaction of several rows reads and locks them in key order first. Either way a row changed or deleted since the context read it is a
/// conflict with the row as it is now, and nothing is written.
@Suite("PostgreSQL saves of one update check its version in the UPDATE", .needsPostgreSQL)
struct PostgresUpdateVersionTests {
    private func context(_ url: URL, driver: any PostgresDriver) throws -> ManagedObjectContext {
        let context = PostgresUniqueIndexTests.context(try PostgresUniqueIndexTests.coordinator(url, driver: driver))
        context.mergePolicy = .error
        return context
    }

    private static func lockingReads(_ statements: [String]) -> Int { statements.filter { $0.hasSuffix("FOR UPDATE") }.count }

    @Test func oneUpdateIsOneStatementThatChecksItsVersion() throws {
        let url = try PostgresTestServer.shared.get().makeDatabase()
        let real = try PostgresDrivers.factory().connect(url: url, maximumConnections: 4, logger: Logger(label: "test"))
        let driver = InterposingDriver(real: real) { _, _, _ in }
        let context = try context(url, driver: driver)
        let first = context.insert("User", ["email": "a@example.com", "name": "a"])
        let second = context.insert("User", ["email": "b@example.com", "name": "b"])
        let third = context.insert("User", ["email": "c@example.com", "name": "c"])
        try context.save()
        _ = driver.takeStatements()

        first.setValue("renamed", forKey: "name")
        try context.save()
        var statements = driver.takeStatements()
        #expect(Self.lockingReads(statements) == 0)
        // One statement outside a transaction (PostgresOneStatementSaveTests), whose UPDATE checks the version.
        #expect(statements.count == 1)
        #expect(statements.contains { $0.contains("UPDATE \"public\".\"ZUSER\"") && $0.contains("\"Z_OPT\" = $") })

        // Two updates and a deletion: a transaction, which reads and locks the rows first.
        first.setValue("again", forKey: "name")
        second.setValue("too", forKey: "name")
        context.delete(third)
        try context.save()
        statements = driver.takeStatements()
        #expect(Self.lockingReads(statements) == 1)
    }

    @Test func aRowChangedOrDeletedSinceTheReadIsAConflictAndNothingIsWritten() throws {
        let url = try PostgresTestServer.shared.get().makeDatabase()
        let real = try PostgresDrivers.factory().connect(url: url, maximumConnections: 4, logger: Logger(label: "test"))
        let ours = try context(url, driver: real)
        let theirs = try context(url, driver: real)
        let user = ours.insert("User", ["email": "a@example.com", "name": "a"])
        try ours.save()

        let changed = try theirs.existingObject(with: user.objectID)
        changed.setValue("theirs", forKey: "name")
        try theirs.save()
        user.setValue("ours", forKey: "name")
        var error = try #require(throws: ObjectGraphError.self) { try ours.save() }
        #expect(error.code == .mergeConflict)
        #expect(error.conflicts.first?.persistedSnapshot?["name"] as? String == "theirs")
        #expect(ours.hasChanges)

        theirs.delete(changed)
        try theirs.save()
        error = try #require(throws: ObjectGraphError.self) { try ours.save() }
        #expect(error.code == .mergeConflict)
        #expect(error.conflicts.first?.persistedSnapshot == nil)
        #expect(ours.hasChanges)
        let check = try context(url, driver: real)
        #expect(try check.count(for: FetchRequest<ManagedObject>(entityName: "User")) == 0)
    }
}
