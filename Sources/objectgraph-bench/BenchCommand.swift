import ArgumentParser
import Foundation
import ObjectGraph
import ObjectGraphBenchCore
import ObjectGraphPostgres

/// `objectgraph-bench`: every workload of the Benchmarks article through ObjectGraph, the raw SQLite
/// C API and GRDB, in one process, on the same file system, with the same pragmas; a table of
/// medians, ratios, targets and peak memory.
///
/// ```sh
/// swift run -c release objectgraph-bench                      # the full sizes
/// swift run -c release objectgraph-bench --quick --json b.json
/// swift run -c release objectgraph-bench --scale 0.05          # every size × 0.05
/// swift run -c release objectgraph-bench --only predicate --runs 7 --synchronous normal
/// swift run -c release objectgraph-bench --only fetch,fetch_typed --side objectgraph
/// swift run -c release objectgraph-bench --only batch,frc_merge  # the batch requests and the fetched results controller
/// swift run -c release objectgraph-bench --store postgres --url postgres://postgres@127.0.0.1:5432/bench --scale 0.1
/// valgrind --tool=callgrind .build/release/objectgraph-bench --quick --only fetch --runs 1 --side objectgraph
/// ```
///
/// Each metric (``Metric``) is a row; `--only` takes metrics or workloads (``BenchWorkload``).
/// Each variant checks the others: a workload whose ways disagree on the rows they saw or on a
/// checksum of the values is reported, and the command exits with a failure status. Missing a
/// target is not a failure: nothing here asserts on time.
/// Where `--store` puts the stores.
enum BenchStoreKind: String, ExpressibleByArgument {
    case sqlite, postgres
}

@main
struct BenchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "objectgraph-bench",
        abstract: "Compare ObjectGraph with the raw SQLite C API and GRDB, workload by workload.",
        subcommands: [BenchWorker.self, BenchRemoteChanges.self, BenchQueryTwins.self, BenchMigrationMemory.self])

    /// Registers the PostgreSQL store (for `--store postgres` and its workers), then runs the command.
    static func main() {
        PersistentStoreCoordinator.registerPostgresStore()
        main(nil)
    }

    @Flag(help: "Run small sizes: a smoke check that finishes in well under a minute.") var quick = false
    @Option(help: "Multiply every size (the full ones, or the quick ones with --quick) by this factor, e.g. 0.05.") var scale = 1.0
    @Option(help: "Timed runs of each workload, after one warm-up; the median is reported.") var runs = 3
    @Option(help: """
        Run these only, comma-separated: workloads (each runs all its metrics) \(BenchWorkload.allCases.map(\.rawValue).joined(separator: ", ")); \
        metrics \(Metric.allCases.map(\.rawValue).joined(separator: ", ")).
        """) var only: BenchSelection?
    @Option(help: "The synchronous pragma of all three ways: full or normal.") var synchronous = BenchSynchronous.full
    @Option(help: "Also write the figures as JSON to this file.") var json: String?
    @Flag(help: "Keep the folder of stores instead of removing it.") var keep = false
    @Option(help: "Run one way only, to profile it (no ratios, no cross-checks): objectgraph, raw or grdb.") var side: BenchVariant?
    @Flag(help: "ObjectGraph's stores record persistent history (what history costs: compare with a run without).") var history = false
    @Option(help: "Where the stores live: sqlite (files in a temporary folder) or postgres (schemas of the database --url names).")
    var store = BenchStoreKind.sqlite
    @Option(help: "With --store postgres: the database, postgres://user[:password]@host[:port]/database. Each way makes schemas of its own there, dropped at the end.")
    var url: String?

    func validate() throws {
        if runs < 1 { throw ValidationError("--runs must be at least 1") }
        if !(scale > 0) { throw ValidationError("--scale must be above 0") }
        switch store {
        case .sqlite:
            if url != nil { throw ValidationError("--url is for --store postgres") }
        case .postgres:
            if url == nil { throw ValidationError("--store postgres needs --url postgres://user@host:port/database") }
            if side == .grdb { throw ValidationError("GRDB is SQLite's: --side grdb does not run with --store postgres") }
            if history { throw ValidationError("--history is SQLite's: PostgreSQL stores hear each other through their change log") }
        }
    }

    func run() throws {
        var settings = BenchSettings(synchronous: synchronous, runs: runs, quick: quick, scale: scale)
        settings.history = history
        var postgres: BenchPostgres?
        if store == .postgres, let url {
            let prefix = BenchPostgres.newPrefix()
            settings.store = .postgres(url: url, prefix: prefix)
            postgres = try BenchPostgres(url: url, prefix: prefix)
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("objectgraph-bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { if !keep { try? FileManager.default.removeItem(at: directory) } }

        var report = BenchReport(
            settings: settings, sqliteVersion: RawConnection.libraryVersion, postgresVersion: try postgres?.serverVersion())
        BenchLog.note(report.header)
        BenchLog.note(postgres.map { "stores in the schemas \($0.prefix)_* of \($0.url.path.dropFirst())" } ?? "stores in \(directory.path)")
        defer {
            if let postgres {
                if keep {
                    BenchLog.note("schemas kept: \(postgres.prefix)_*")
                } else {
                    do { try postgres.dropRunSchemas() } catch { BenchLog.error("could not drop the schemas \(postgres.prefix)_*: \(error)") }
                }
            }
        }
        do {
            let runner = try BenchRunner(settings: settings, directory: directory, variants: side.map { [$0] } ?? settings.store.variants)
            let metrics = (only?.metrics ?? Metric.allCases).filter(settings.store.runs)
            for metric in metrics {
                report.rows.append(runner.row(of: metric))
            }
        }
        print(report.markdown())
        if let json {
            try report.json().write(to: URL(fileURLWithPath: json))
            BenchLog.note("wrote \(json)")
        }
        if keep { BenchLog.note("stores kept in \(directory.path)") }
        let failed = report.rows.filter { $0.failure != nil }
        if !failed.isEmpty {
            for row in failed { BenchLog.error("\(row.name): \(row.failure!)") }
            throw ExitCode.failure
        }
    }
}
