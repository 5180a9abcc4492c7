import Foundation
import ObjectGraphPostgres
import Testing
@testable import ObjectGraphCore

/// What some tests need beyond Swift and SQLite: Apple's Core Data files, and a PostgreSQL server.
///
/// On a machine without them (a fresh clone in a folder of its own, without PostgreSQL) those tests
/// are skipped, each with the reason in the test output. CI sets `OBJECTGRAPH_REQUIRE_FIXTURES=1`
/// and `OBJECTGRAPH_REQUIRE_POSTGRES=1`: then they always run, and a missing fixture folder or a
/// PostgreSQL server that does not start fails them.
enum TestRequirements {
    static let fixturesVariable = "OBJECTGRAPH_FIXTURES"
    static let requireFixturesVariable = "OBJECTGRAPH_REQUIRE_FIXTURES"
    static let requirePostgresVariable = "OBJECTGRAPH_REQUIRE_POSTGRES"

    private static var environment: [String: String] { ProcessInfo.processInfo.environment }

    /// Whether this run is `.ci/run`'s ThreadSanitizer pass (`OBJECTGRAPH_TSAN=1`, which also makes
    /// Package.swift instrument this package's targets).
    static let isThreadSanitizing = environment["OBJECTGRAPH_TSAN"] == "1"

    /// Whether the tests of Apple's Core Data files run: the fixtures were found, or are required.
    static var runsFixtureTests: Bool {
        environment[requireFixturesVariable] == "1" || (try? CoreDataFixtures.root()) != nil
    }

    /// Whether the PostgreSQL tests run: a server was given or can be started, or PostgreSQL is
    /// required. Registers the PostgreSQL store's driver first (``PersistentStoreCoordinator/registerPostgresStore()``),
    /// as a program that uses PostgreSQL does.
    static let runsPostgresTests: Bool = {
        PersistentStoreCoordinator.registerPostgresStore()
        return environment[requirePostgresVariable] == "1" || PostgresTestServer.isAvailable
    }()

    static let fixturesReason: Comment = """
        Needs Apple's Core Data fixtures: the folder shared/coredata-fixtures beside the repository, \
        or \(fixturesVariable)=<folder>; \(requireFixturesVariable)=1 makes their absence a failure
        """

    static let postgresReason: Comment = """
        Needs PostgreSQL 15: its initdb under \(PostgresTestServer.debianBinaries.path) (Debian: apt-get install \
        postgresql), on PATH or in \(PostgresTestServer.binariesVariable)=<folder>, or a server in \
        \(PostgresTestServer.urlVariable)=postgres://user@host:port/database; \
        \(requirePostgresVariable)=1 makes its absence a failure
        """
}

extension Trait where Self == ConditionTrait {
    /// For a test that reads Apple's Core Data files (``CoreDataFixtures``): skipped, with the
    /// reason, where they are not found and not required.
    static var needsCoreDataFixtures: Self {
        .enabled(if: TestRequirements.runsFixtureTests, TestRequirements.fixturesReason)
    }

    /// For a test that needs a PostgreSQL server (``PostgresTestServer``): skipped, with the
    /// reason, where none can be had and none is required.
    static var needsPostgreSQL: Self {
        .enabled(if: TestRequirements.runsPostgresTests, TestRequirements.postgresReason)
    }
}
