import Foundation
import Testing
import ObjectGraph
@testable import ObjectGraphCore

/// A query generation on PostgreSQL is a transaction kept open on a connection of its own, whose
/// exported snapshot the pinned contexts' reads import: it ends when the last of them lets it go.
@Suite("PostgreSQL query generations", .needsPostgreSQL)
struct PostgresQueryGenerationTests {
    /// The connections of the store's database that hold a transaction open after exporting its snapshot.
    private func exportingTransactions(_ backend: PostgresStore) throws -> Int {
        let rows = try backend.driver.transaction(isolation: .readCommitted, readOnly: true) { session in
            try session.query(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND state = 'idle in transaction' AND query = 'SELECT pg_export_snapshot()'",
                [])
        }
        return Int(rows.first?.first?.integer ?? -1)
    }

    @Test func aGenerationHoldsOneTransactionUntilItsLastContextLetsItGo() throws {
        let stack = try TestStack(.postgres)
        let backend = try #require(stack.store.backend as? PostgresStore)
        let seed = stack.context("seed")
        seed.insert("Note", ["title": "a"])
        try seed.save()
        #expect(try exportingTransactions(backend) == 0)

        let pinned = stack.context("pinned")
        try pinned.setQueryGenerationFrom(.current)
        let follower = stack.context("follower")
        try follower.setQueryGenerationFrom(pinned.queryGenerationToken)
        let open = try exportingTransactions(backend)
        #expect(open == 1, "\(open) transactions open for one generation")  // shared by its contexts

        let writer = stack.context("writer")
        writer.insert("Note", ["title": "b"])
        try writer.save()
        let request = FetchRequest<ManagedObject>(entityName: "Note")
        #expect(try pinned.count(for: request) == 1)
        #expect(try follower.fetch(request).count == 1)

        try pinned.setQueryGenerationFrom(nil)
        #expect(try exportingTransactions(backend) == 1)  // the follower still holds it
        try follower.setQueryGenerationFrom(nil)
        let deadline = Date().addingTimeInterval(5)
        while try exportingTransactions(backend) > 0 && Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
        #expect(try exportingTransactions(backend) == 0)
        #expect(try follower.count(for: request) == 2)
    }
}
