import Foundation
import Logging
import Testing
import ObjectGraph
@testable import ObjectGraphCore

/// A save that needs primary keys reserves a block more than it uses in `Z_PRIMARYKEY`; once it
/// commits, the store object's later saves take their keys from that block without a statement.
/// A reservation that did not commit is never used, and two store objects on one database never
/// hand out the same key.
@Suite("PostgreSQL saves take their keys from blocks reserved by committed saves", .needsPostgreSQL)
struct PostgresKeyReserveTests {
    private func makeContext(_ url: URL, driver: any PostgresDriver) throws -> ManagedObjectContext {
        PostgresUniqueIndexTests.context(try PostgresUniqueIndexTests.coordinator(url, driver: driver))
    }

    private static func allocations(_ statements: [String]) -> Int {
        statements.filter { $0.hasPrefix("UPDATE") && $0.contains("Z_PRIMARYKEY") }.count
    }

    @Test func savesAfterTheFirstTakeTheirKeysWithoutAStatement() throws {
        let url = try PostgresTestServer.shared.get().makeDatabase()
        let real = try PostgresDrivers.factory().connect(url: url, maximumConnections: 4, logger: Logger(label: "test"))
        let driver = InterposingDriver(real: real) { _, _, _ in }
        let context = try makeContext(url, driver: driver)
        var keys: [Int64] = []
        for i in 0..<(PostgresKeyReserve.blockSize + 3) {
            let user = context.insert("User", ["email": "u\(i)@example.com", "name": "u"])
            try context.save()
            keys.append(try #require(user.objectID.primaryKey))
            let allocations = Self.allocations(driver.takeStatements())
            // The first save reserves the block; the save after the block runs out reserves the next.
            #expect(allocations == (i == 0 || i == PostgresKeyReserve.blockSize + 1 ? 1 : 0), "save \(i)")
        }
        #expect(keys == Array(1...Int64(PostgresKeyReserve.blockSize + 3)))
    }

    @Test func aReservationThatDidNotCommitIsNotUsed() throws {
        let url = try PostgresTestServer.shared.get().makeDatabase()
        let real = try PostgresDrivers.factory().connect(url: url, maximumConnections: 4, logger: Logger(label: "test"))
        let driver = InterposingDriver(real: real) { _, _, _ in }
        let context = try makeContext(url, driver: driver)
        // The first save reserves a block; the second uses all of it.
        context.insert("User", ["email": "a@example.com", "name": "a"])
        try context.save()
        for i in 0..<PostgresKeyReserve.blockSize { context.insert("User", ["email": "b\(i)@example.com", "name": "b"]) }
        try context.save()
        _ = driver.takeStatements()

        // A save that reserves the next block in its transaction (a deletion: not one statement), then
        // fails: a duplicate email the unique index refuses.
        context.delete(try #require(context.all("User", sortedBy: "email").last))
        context.insert("User", ["email": "a@example.com", "name": "again"])
        #expect(throws: ObjectGraphError.self) { try context.save() }
        #expect(Self.allocations(driver.takeStatements()) == 1)
        context.rollback()

        // Its reservation was rolled back with it: another store object takes those keys, and this
        // one does not hand them out again.
        let other = try makeContext(url, driver: real)
        let theirs = (0..<2).map { other.insert("User", ["email": "c\($0)@example.com", "name": "c"]) }
        try other.save()
        let ours = context.insert("User", ["email": "d@example.com", "name": "d"])
        try context.save()
        let keys = (theirs + [ours]).compactMap(\.objectID.primaryKey)
        #expect(Set(keys).count == 3)
        #expect(try context.count(for: FetchRequest<ManagedObject>(entityName: "User")) == PostgresKeyReserve.blockSize + 4)
    }

    @Test func twoStoreObjectsSavingInTurnNeverShareAKey() throws {
        let url = try PostgresTestServer.shared.get().makeDatabase()
        let real = try PostgresDrivers.factory().connect(url: url, maximumConnections: 4, logger: Logger(label: "test"))
        let first = try makeContext(url, driver: real)
        let second = try makeContext(url, driver: real)
        var keys: Set<Int64> = []
        for i in 0..<(2 * PostgresKeyReserve.blockSize + 5) {
            let context = i % 3 == 0 ? second : first
            let users = (0..<(i % 4 + 1)).map { context.insert("User", ["email": "u\(i)-\($0)@example.com", "name": "u"]) }
            try context.save()
            for user in users { #expect(keys.insert(try #require(user.objectID.primaryKey)).inserted) }
        }
        let request = FetchRequest<ManagedObject>(entityName: "User")
        #expect(try first.count(for: request) == keys.count)
    }
}
