import ArgumentParser
import Foundation
import ObjectGraphBenchCore

/// `objectgraph-bench`: every workload of issues 6, 13, 16 and 17 through ObjectGraph, the raw SQLite
/// C API and GRDB, in one process, on the same file system, with the same pragmas; a table of
/// medians, ratios, targets and peak memory.
///
/// ```sh
/// swift run -c release objectgraph-bench                      # the sizes
/// swift run -c release objectgraph-bench --quick --json b.json
/// swift run -c release objectgraph-bench --scale 0.05          # every size × 0.05
/// swift run -c release objectgraph-bench --only predicate --runs 7 --synchronous normal
/// swift run -c release objectgraph-bench --only fetch,fetch_typed --side objectgraph
/// swift run -c release objectgraph-bench --only batch,frc_merge  # the batch requests and the fetched results controller
/// valgrind --tool=callgrind .build/release/objectgraph-bench --quick --only fetch --runs 1 --side objectgraph
/// ```
///
/// Each metric (``Metric``) is a row; `--only` takes metrics or workloads (``BenchWorkload``).
/// Each variant checks the others: a workload whose ways disagree on the rows they saw or on a
/// checksum of the values is reported, and the command exits with a failure status. Missing a
/// target is not a failure: nothing here asserts on time.
@main
struct BenchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "objectgraph-bench",
        abstract: "Compare ObjectGraph with the raw SQLite C API and GRDB, workload by workload (issues 6, 13, 16 and 17).",
        subcommands: [BenchWorker.self, BenchRemoteChanges.self])

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

    func validate() throws {
        if runs < 1 { throw ValidationError("--runs must be at least 1") }
        if !(scale > 0) { throw ValidationError("--scale must be above 0") }
    }

    func run() throws {
        var settings = BenchSettings(synchronous: synchronous, runs: runs, quick: quick, scale: scale)
        settings.history = history
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("objectgraph-bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { if !keep { try? FileManager.default.removeItem(at: directory) } }

        var report = BenchReport(settings: settings, sqliteVersion: RawConnection.libraryVersion)
        BenchLog.note(report.header)
        BenchLog.note("stores in \(directory.path)")
        let runner = try BenchRunner(settings: settings, directory: directory, variants: side.map { [$0] } ?? BenchVariant.allCases)
        for metric in only?.metrics ?? Metric.allCases {
            report.rows.append(runner.row(of: metric))
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
