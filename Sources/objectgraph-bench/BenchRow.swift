import Foundation

/// One row of the report: a measurement's medians for the three ways, its target and verdict.
struct BenchRow {
    var metric: Metric
    /// What is timed.
    var summary: String
    /// Median seconds of each way that ran.
    var seconds: [BenchVariant: Double] = [:]
    /// The ways that cannot run the measurement yet (ObjectGraph, when its feature does not exist).
    var notYet: Set<BenchVariant> = []
    /// Peak resident memory above the baseline taken before the measurement, by way.
    var peakBytes: [BenchVariant: Int] = [:]
    var target: BenchTarget
    /// Further figures by way: medians of the samples' figures, and those the runner derives.
    var figures: [BenchVariant: [BenchFigure: Double]] = [:]
    /// Why the row's checks failed, if they did.
    var failure: String?

    /// The row's name in the table, the JSON file and for `--only`.
    var name: String { metric.rawValue }

    /// A further figure of one way, if it was reported.
    func figure(_ figure: BenchFigure, of variant: BenchVariant) -> Double? { figures[variant]?[figure] }

    /// A time cell: seconds, "not yet", or "-" for a way not run.
    func cell(_ variant: BenchVariant) -> String {
        if notYet.contains(variant) { return "not yet" }
        return seconds[variant].map(BenchReport.seconds) ?? "-"
    }

    var ratioRaw: Double? { ratio(to: .raw) }
    var ratioGRDB: Double? { ratio(to: .grdb) }

    private func ratio(to other: BenchVariant) -> Double? {
        guard let og = seconds[.objectGraph], let base = seconds[other], base > 0 else { return nil }
        return og / base
    }

    /// "met", "missed: …", "not yet", or a failed check.
    var verdict: String {
        if failure != nil { return "CHECK FAILED" }
        if notYet.contains(.objectGraph) { return "not yet" }
        guard let misses = target.misses(self) else { return "-" }
        return misses.isEmpty ? "met" : "missed: " + misses.joined(separator: "; ")
    }
}
