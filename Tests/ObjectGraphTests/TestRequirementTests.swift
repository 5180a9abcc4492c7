import Foundation
import ObjectGraph
import Testing
@testable import ObjectGraphCore

/// The tests that need Apple's Core Data files or PostgreSQL (``TestRequirements``): skipped with
/// their reason where these are missing, failed instead when CI requires them. Each case runs one
/// such test in a second run of this test bundle, with the environment it describes.
@Suite("Tests that need fixtures or PostgreSQL")
struct TestRequirementTests {
    /// Runs the tests whose names match `filter` in a process of its own; its exit status and output.
    private func run(_ filter: String, _ environment: [String: String]) throws -> (status: Int32, output: String) {
        var inherited = ProcessInfo.processInfo.environment
        for name in [TestRequirements.fixturesVariable, TestRequirements.requireFixturesVariable, TestRequirements.requirePostgresVariable,
                     PostgresTestServer.urlVariable, PostgresTestServer.binariesVariable] {
            inherited[name] = nil
        }
        inherited["SWIFT_BACKTRACE"] = "enable=no"
        let child = try ChildProcess(
            URL(fileURLWithPath: CommandLine.arguments[0]), ["--testing-library", "swift-testing", "--filter", filter],
            environment: inherited.merging(environment) { $1 }, mergingErrors: true)
        let (status, signaled) = child.wait()
        try #require(!signaled, "the child test run was ended by a signal")
        return (status, String(decoding: child.standardOutput, as: UTF8.self))
    }

    private let fixtureTest = "aReferenceToAModelFileIsCheckedByItsChecksum"
    private let postgresTest = "theStoreParameterizedTestsHaveAPostgreSQLCase"
    private let nowhere = "/nonexistent/objectgraph-tests"

    @Test func aFixtureTestIsSkippedWithItsReasonWhereTheFixturesAreMissing() throws {
        let (status, output) = try run(fixtureTest, [TestRequirements.fixturesVariable: nowhere])
        #expect(status == 0, "\(output)")
        #expect(output.contains("skipped: \"Needs Apple's Core Data fixtures"), "\(output)")
        #expect(output.contains("OBJECTGRAPH_FIXTURES=<folder>"), "\(output)")
    }

    @Test func requiredFixturesThatAreMissingFailTheRun() throws {
        let (status, output) = try run(fixtureTest, [TestRequirements.fixturesVariable: nowhere, TestRequirements.requireFixturesVariable: "1"])
        #expect(status != 0, "\(output)")
        #expect(!output.contains("skipped: \""), "\(output)")
        #expect(output.contains("The Core Data fixtures (shared/coredata-fixtures) were not found; looked in: \(nowhere)"), "\(output)")
    }

    @Test func aPostgreSQLTestIsSkippedWithItsReasonWherePostgreSQLIsMissing() throws {
        let (status, output) = try run(postgresTest, [PostgresTestServer.binariesVariable: nowhere])
        #expect(status == 0, "\(output)")
        #expect(output.contains("skipped: \"Needs PostgreSQL 15"), "\(output)")
        #expect(output.contains("OBJECTGRAPH_TEST_POSTGRES_URL="), "\(output)")
    }

    @Test func requiredPostgreSQLThatCannotStartFailsTheRun() throws {
        let (status, output) = try run(postgresTest, [PostgresTestServer.binariesVariable: nowhere, TestRequirements.requirePostgresVariable: "1"])
        #expect(status != 0, "\(output)")
        #expect(!output.contains("skipped: \""), "\(output)")
        #expect(output.contains("PostgreSQL's initdb was not found"), "\(output)")
    }
}

/// The PostgreSQL case of the tests parameterized over every store (``StoreKind/everyStore``):
/// without PostgreSQL they have none, and this test, skipped with the reason, says so.
@Suite("PostgreSQL cases of the tests run on every store")
struct PostgreSQLCaseTests {
    @Test(.needsPostgreSQL) func theStoreParameterizedTestsHaveAPostgreSQLCase() throws {
        #expect(StoreKind.everyStore.last == .postgres)
        #expect(StoreKind.sqliteInMemoryAndPostgres == [.sqlite, .inMemory, .postgres])
        let stack = try TestStack(.postgres)
        let context = stack.context()
        context.insert("Note", ["title": "on PostgreSQL"])
        try context.save()
        #expect(try stack.context().all("Note").map { $0.value(forKey: "title") as? String } == ["on PostgreSQL"])
    }
}
