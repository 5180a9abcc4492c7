import Foundation
import ObjectGraphBenchCore
import Testing

@Suite("Benchmark report")
struct BenchReportTests {
    private func row(_ metric: Metric, target: BenchTarget, og: Double, raw: Double, grdb: Double) -> BenchRow {
        var row = BenchRow(metric: metric, summary: "what \(metric.rawValue) times", target: target)
        row.seconds = [.objectGraph: og, .raw: raw, .grdb: grdb]
        row.peakBytes = [.objectGraph: 3 * 1_048_576, .raw: 1_048_576 / 2]
        return row
    }

    @Test("a ratio target is met at or under its bound and missed above it, with the figure")
    func ratioTargets() {
        let target = BenchTarget.ratios(raw: 4, grdb: 1)
        #expect(row(.fetch, target: target, og: 2, raw: 1, grdb: 2).verdict == "met")
        #expect(row(.fetch, target: target, og: 5, raw: 1, grdb: 10).verdict == "missed: 5.00× raw, target 4×")
        #expect(target.text == "≤ 4× raw, ≤ 1× GRDB")
        var alone = BenchRow(metric: .fetch, summary: "", target: target)
        alone.seconds = [.objectGraph: 1]
        #expect(alone.verdict == "-")
    }

    @Test("the frame target judges ObjectGraph's time to didChangeContent and its whole merge call, not the other sides")
    func frameTarget() {
        let target = BenchTarget.frame(milliseconds: 16)
        #expect(row(.frcMerge, target: target, og: 0.004, raw: 0.03, grdb: 0.04).verdict == "met")
        #expect(row(.frcMerge, target: target, og: 0.02, raw: 0.001, grdb: 0.001).verdict == "missed: 20 ms to controllerDidChangeContent, target < 16")
        var stalled = row(.frcMerge, target: target, og: 0.01, raw: 0.01, grdb: 0.01)
        stalled.figures[.objectGraph] = [.mergeCallSeconds: 0.05]
        #expect(stalled.verdict == "missed: merge call 50 ms, target < 16")
        #expect(BenchRow(metric: .frcMerge, summary: "", target: target).verdict == "-")
    }

    @Test("a failed cross-check and a side that cannot run yet show in the verdict")
    func failureAndNotYet() {
        var failed = row(.merge, target: .ratios(raw: 1.5), og: 1, raw: 1, grdb: 1)
        failed.failure = "the stores disagree"
        #expect(failed.verdict == "CHECK FAILED")
        var notYet = BenchRow(metric: .merge, summary: "", target: .ratios(raw: 1.5))
        notYet.notYet = [.objectGraph]
        #expect(notYet.verdict == "not yet" && notYet.cell(.objectGraph) == "not yet" && notYet.cell(.raw) == "-")
    }

    @Test("the Markdown report has a row per metric with times, ratios, target and verdict, and a memory table")
    func markdown() {
        var report = BenchReport(settings: BenchSettings(synchronous: .full, runs: 3), sqliteVersion: "3.40.1")
        report.rows = [
            row(.insertTyped, target: .ratios(grdb: 1), og: 2, raw: 0.1, grdb: 1),
            row(.updateOneSave, target: .ratios(grdb: 1), og: 0.5, raw: 0.25, grdb: 1),
        ]
        let lines = report.markdown().split(separator: "\n").map(String.init)
        #expect(lines[0].contains("SQLite 3.40.1, WAL, synchronous = FULL for all three; median of 3 runs after a warm-up; full sizes"))
        #expect(lines.contains("| insert_typed | 2.000 | 0.1 | 1.000 | 20.00× | 2.00× | ≤ 1× GRDB | missed: 2.00× GRDB, target 1× |"))
        #expect(lines.contains("| update_one_save | 0.5 | 0.25 | 1.000 | 2.00× | 0.50× | ≤ 1× GRDB | met |"))
        #expect(lines.contains("| insert_typed | 3 | 0.5 | - |"))
        #expect(lines.contains("- update_one_save: what update_one_save times"))
    }

    @Test("on PostgreSQL the report compares with PostgresNIO only, gives no SQLite verdicts, and the store's metrics exclude SQLite's own")
    func postgresReport() throws {
        var settings = BenchSettings(synchronous: .full, runs: 3)
        settings.store = .postgres(url: "postgres://postgres@127.0.0.1:5432/bench", prefix: "ogb_0000abcd")
        var report = BenchReport(settings: settings, sqliteVersion: "3.40.1", postgresVersion: "15.18")
        var fetch = row(.fetch, target: .ratios(raw: 4, grdb: 1.5), og: 0.6, raw: 0.3, grdb: 0)
        fetch.seconds[.grdb] = nil
        report.rows = [fetch]
        let lines = report.markdown().split(separator: "\n").map(String.init)
        #expect(lines[0].contains("PostgreSQL 15.18"))
        #expect(lines.contains("| metric | ObjectGraph s | raw PostgresNIO s | OG/raw |"))
        #expect(lines.contains("| fetch | 0.6 | 0.3 | 2.00× |"))
        #expect(lines.contains("| fetch | 3 | 0.5 |"))
        #expect(!lines.contains { $0.contains("missed") || $0.contains("GRDB s") })
        let root = try #require(try JSONSerialization.jsonObject(with: report.json()) as? [String: Any])
        #expect(root["store"] as? String == "postgres" && root["postgres_version"] as? String == "15.18" && root["synchronous"] == nil)

        #expect(settings.store.variants == [.objectGraph, .raw])
        #expect(Metric.allCases.filter(settings.store.runs).count == Metric.allCases.count - 3)
        #expect(!settings.store.runs(.merge) && settings.store.runs(.batchDelete) && BenchStore.sqlite.runs(.merge))
        #expect(settings.store.title(of: .raw) == "raw PostgresNIO" && BenchStore.sqlite.title(of: .raw) == "raw SQLite")
        // The settings reach a worker process as JSON: the store survives the trip.
        let decoded = try JSONDecoder().decode(BenchSettings.self, from: JSONEncoder().encode(settings))
        #expect(decoded.store == settings.store)
    }

    @Test("the JSON report names each figure by side and metric")
    func json() throws {
        var report = BenchReport(settings: BenchSettings(synchronous: .normal, runs: 1, scale: 0.05), sqliteVersion: "3")
        var batched = row(.batched, target: .batched(maximumMiB: 64, perRowRatio: 1.5), og: 2, raw: 1, grdb: 1)
        batched.figures[.objectGraph] = [.perRowVersusFetch: 2.5]
        report.rows = [batched]
        let root = try #require(try JSONSerialization.jsonObject(with: report.json()) as? [String: Any])
        #expect(root["synchronous"] as? String == "NORMAL")
        #expect(root["scale"] as? Double == 0.05)
        let workload = try #require((root["workloads"] as? [[String: Any]])?.first)
        #expect(workload["name"] as? String == "batched")
        #expect(workload["objectgraph_per_row_vs_fetch"] as? Double == 2.5)
        #expect(workload["objectgraph_peak_mib"] as? Double == 3)
        #expect(workload["result"] as? String == "missed: per row 2.50× fetch, target 1.5×")
    }
}
