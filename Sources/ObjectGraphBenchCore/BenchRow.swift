import Foundation

/// One row of the report: a measurement's medians for the three ways, its target and verdict.
package struct BenchRow {
    package var metric: Metric
    /// What is timed.
    package var summary: String
    /// Median seconds of each way that ran.
    package var seconds: [BenchVariant: Double] = [:]
    /// The ways that cannot run the measurement yet (ObjectGraph, when its feature does not exist).
    package var notYet: Set<BenchVariant> = []
    /// Peak resident memory above the baseline taken before the measurement, by way.
    package var peakBytes: [BenchVariant: Int] = [:]
    package var target: BenchTarget
    /// Further figures by way: medians of the samples' figures, and those the runner derives.
    package var figures: [BenchVariant: [BenchFigure: Double]] = [:]
    /// Why the row's checks failed, if they did.
    package var failure: String?

    package init(metric: Metric, summary: String, target: BenchTarget) {
        self.metric = metric
        self.summary = summary
        self.target = target
    }

    /// The row's name in the table, the JSON file and for `--only`.
    package var name: String { metric.rawValue }

    /// A further figure of one way, if it was reported.
    package func figure(_ figure: BenchFigure, of variant: BenchVariant) -> Double? { figures[variant]?[figure] }

    /// A time cell: seconds, "not yet", or "-" for a way not run.
    package func cell(_ variant: BenchVariant) -> String {
        if notYet.contains(variant) { return "not yet" }
        return seconds[variant].map(BenchReport.seconds) ?? "-"
    }

    package var ratioRaw: Double? { ratio(to: .raw) }
    package var ratioGRDB: Double? { ratio(to: .grdb) }

    private func ratio(to other: BenchVariant) -> Double? {
        guard let og = seconds[.objectGraph], let base = seconds[other], base > 0 else { return nil }
        return og / base
    }

    /// "met", "missed: …", "not yet", or a failed check.
    package var verdict: String {
        if failure != nil { return "CHECK FAILED" }
        if notYet.contains(.objectGraph) { return "not yet" }
        guard let misses = target.misses(self) else { return "-" }
        return misses.isEmpty ? "met" : "missed: " + misses.joined(separator: "; ")
    }
}
