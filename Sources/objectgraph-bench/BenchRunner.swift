import Foundation
import ObjectGraphBenchCore

/// Runs measurements on the three sides (interleaved run by run, or in child processes) and turns
/// their samples into rows of the report, checking that the three did the same work.
final class BenchRunner {
    let settings: BenchSettings
    let directory: URL
    let sides: [any BenchSide]
    /// ObjectGraph's median seconds per row of `fetch`: the reference of `batched`.
    private var fetchSecondsPerRow: Double?

    init(settings: BenchSettings, directory: URL, variants: [BenchVariant]) throws {
        self.settings = settings
        self.directory = directory
        sides = try variants.map { try Self.side($0, directory: directory, settings: settings) }
    }

    /// The side of a way, working in its own folder under `directory` (and, on PostgreSQL, in
    /// schemas of its own).
    static func side(_ variant: BenchVariant, directory: URL, settings: BenchSettings) throws -> any BenchSide {
        let folder = directory.appendingPathComponent(variant.rawValue)
        let synchronous = settings.synchronous
        if case .postgres(let url, let prefix) = settings.store {
            let postgres = try BenchPostgres(url: url, prefix: prefix)
            switch variant {
            case .objectGraph: return try ObjectGraphSide(directory: folder, synchronous: synchronous, postgres: postgres)
            case .raw: return RawPostgresSide(postgres: postgres)
            case .grdb: throw BenchError("GRDB is SQLite's: it does not run with --store postgres")
            }
        }
        switch variant {
        case .objectGraph: return try ObjectGraphSide(directory: folder, synchronous: synchronous, history: settings.history)
        case .raw: return try RawSide(directory: folder, synchronous: synchronous)
        case .grdb: return try GRDBSide(directory: folder, synchronous: synchronous)
        }
    }

    /// The row of a metric.
    func row(of metric: Metric) -> BenchRow {
        if metric == .batched && fetchSecondsPerRow == nil {
            BenchLog.note("batched: measuring fetch first, the reference of its per-row time")
            _ = row(of: .fetch)
        }
        return row(BenchMeasurement.of(metric, sizes: settings.sizes))
    }

    private func row(_ measurement: BenchMeasurement) -> BenchRow {
        var row = BenchRow(metric: measurement.metric, summary: measurement.summary, target: measurement.target)
        var problems: [String] = []
        let results = measurement.inChildProcess
            ? runInChildren(measurement, problems: &problems)
            : runInterleaved(measurement, problems: &problems)
        var samples: [BenchVariant: [BenchSample]] = [:]
        for side in sides {
            let variant = side.variant
            guard let result = results[variant] else { continue }
            if result.samples.isEmpty {
                row.notYet.insert(variant)
                BenchLog.note("\(measurement.name): \(settings.store.title(of: variant)): not yet")
                continue
            }
            samples[variant] = result.samples
            row.peakBytes[variant] = result.peakBytes
            let timed = result.samples.dropFirst()
            row.seconds[variant] = BenchStatistics.median(timed.map(\.seconds))
            for figure in Set(timed.flatMap(\.figures.keys)) {
                row.figures[variant, default: [:]][figure] = BenchStatistics.median(timed.compactMap { $0.figures[figure] })
            }
            BenchLog.note("\(measurement.name): \(settings.store.title(of: variant)): median \(BenchReport.seconds(row.seconds[variant]!)) s")
        }
        problems += BenchCrossCheck.mismatches(samples)
        if let verify = measurement.verify {
            problems += verifyStores(verify)
        }
        if measurement.metric == .fetch, let seconds = row.seconds[.objectGraph] {
            fetchSecondsPerRow = seconds / Double(settings.sizes.fetch)
        }
        if measurement.metric == .batched, let seconds = row.seconds[.objectGraph], let reference = fetchSecondsPerRow {
            row.figures[.objectGraph, default: [:]][.perRowVersusFetch] = seconds / Double(settings.sizes.batched) / reference
        }
        if !problems.isEmpty {
            row.failure = problems.joined(separator: "; ")
            BenchLog.error("\(measurement.name): \(row.failure!)")
        }
        return row
    }

    /// The samples of every side and the highest peak above baseline of any of its runs.
    private typealias SideResults = [BenchVariant: (samples: [BenchSample], peakBytes: Int?)]

    /// Runs the measurement in this process, interleaving the sides run by run (in a rotating
    /// order), so that a slow spell of this shared machine (its disk's fsync time varies tenfold)
    /// falls on every side alike. Each run has its own memory baseline.
    private func runInterleaved(_ measurement: BenchMeasurement, problems: inout [String]) -> SideResults {
        var results: SideResults = [:]
        var active: [any BenchSide] = []
        for side in sides {
            do {
                BenchLog.note("\(measurement.name): preparing \(settings.store.title(of: side.variant))…")
                try side.prepare(measurement.metric, sizes: settings.sizes)
                results[side.variant] = ([], nil)
                active.append(side)
            } catch {
                problems.append("\(side.variant.title) failed: \(error)")
            }
        }
        for index in 0...settings.runs {
            BenchLog.note("\(measurement.name): \(index == 0 ? "warm-up" : "run \(index) of \(settings.runs)")")
            let order = active.indices.map { active[($0 + index) % active.count] }
            for side in order {
                let variant = side.variant
                do {
                    guard let (sample, bytes) = try measurement.runOnce(on: side, index: index) else {
                        active.removeAll { $0.variant == variant }  // not yet
                        continue
                    }
                    results[variant]!.samples.append(sample)
                    results[variant]!.peakBytes = max(results[variant]!.peakBytes ?? 0, bytes ?? 0)
                } catch {
                    problems.append("\(variant.title) failed: \(error)")
                    results[variant] = nil
                    active.removeAll { $0.variant == variant }
                }
            }
        }
        return results
    }

    /// Runs the measurement in a child process per side, one side after the other.
    private func runInChildren(_ measurement: BenchMeasurement, problems: inout [String]) -> SideResults {
        var results: SideResults = [:]
        for side in sides {
            BenchLog.note("\(measurement.name): \(side.variant.title), in a child process…")
            do {
                results[side.variant] = try BenchWorkerProcess.run(
                    measurement, variant: side.variant, directory: directory, settings: settings, prepare: side)
            } catch {
                problems.append("\(side.variant.title) failed: \(error)")
            }
        }
        return results
    }

    /// Reads the same figure back from each side's store; they must agree.
    private func verifyStores(_ verify: (any BenchSide) throws -> Int64) -> [String] {
        var values: [(BenchVariant, Int64)] = []
        for side in sides {
            do { values.append((side.variant, try verify(side))) } catch { return ["\(side.variant.title) could not be read back: \(error)"] }
        }
        return BenchCrossCheck.disagreement(values).map { [$0] } ?? []
    }
}
