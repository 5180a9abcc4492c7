import ArgumentParser

/// The workloads of the benchmark (issue 6), in the order they run.
///
/// Each has one or two rows in the report (``BenchMeasurement/of(_:sizes:)``).
enum BenchWorkload: String, CaseIterable, Codable, Sendable, ExpressibleByArgument {
    case insert, fetch, fault, cachehit, batched, predicate, update, readwrite, merge
}

/// A workload's target, and how a row of the report is held to it.
struct BenchTarget: Sendable {
    /// The target as the table states it.
    let text: String
    /// The ways the row misses the target (empty when it is met); nil when there is nothing to judge.
    let misses: @Sendable (BenchRow) -> [String]?

    /// ObjectGraph's time at most `raw` times the raw SQLite time (and `grdb` times GRDB's, if given).
    static func ratios(raw: Double, grdb: Double? = nil, rawName: String = "raw") -> BenchTarget {
        let text = "≤ \(raw.compact)× \(rawName)" + (grdb.map { ", ≤ \($0.compact)× GRDB" } ?? "")
        return BenchTarget(text: text) { row in
            guard let ratioRaw = row.ratioRaw else { return nil }
            var misses: [String] = []
            if ratioRaw > raw { misses.append("\(ratioRaw.ratio) raw, target \(raw.compact)×") }
            if let grdb, let ratioGRDB = row.ratioGRDB, ratioGRDB > grdb {
                misses.append("\(ratioGRDB.ratio) GRDB, target \(grdb.compact)×")
            }
            return misses
        }
    }

    /// `batched`: ObjectGraph's peak memory above its baseline, and its time per row against `fetch`'s.
    static func batched(maximumMiB: Double, perRowRatio: Double) -> BenchTarget {
        BenchTarget(text: "peak ≤ \(maximumMiB.compact) MiB above baseline; per-row time ≤ \(perRowRatio.compact)× fetch") { row in
            guard let peak = row.peakBytes[.objectGraph], let perRow = row.extra["objectgraph_per_row_vs_fetch"] else { return nil }
            var misses: [String] = []
            let mib = Double(peak) / 1_048_576
            if mib > maximumMiB { misses.append("peak \(mib.compact) MiB, target \(maximumMiB.compact)") }
            if perRow > perRowRatio { misses.append("per row \(perRow.ratio) fetch, target \(perRowRatio.compact)×") }
            return misses
        }
    }

    /// `readwrite`: readers' p99 under load against idle, and the writer's throughput against solo.
    /// A miss gives the raw SQLite figures beside ObjectGraph's: on a machine with fewer cores than
    /// threads, the floor itself may miss.
    static let readWrite = BenchTarget(text: "reader p99 ≤ 1.5× idle p99; writer ≥ 0.8× solo throughput") { row in
        func figures(_ variant: BenchVariant) -> (latency: Double, throughput: Double)? {
            let prefix = variant.rawValue
            guard let idle = row.extra["\(prefix)_reader_p99_idle_s"], let loaded = row.extra["\(prefix)_reader_p99_loaded_s"],
                  let solo = row.extra["\(prefix)_writer_solo_s"], let withReaders = row.extra["\(prefix)_writer_loaded_s"],
                  idle > 0, withReaders > 0
            else { return nil }
            return (loaded / idle, solo / withReaders)
        }
        guard let og = figures(.objectGraph) else { return nil }
        let raw = figures(.raw)
        var misses: [String] = []
        if og.latency > 1.5 { misses.append("p99 \(og.latency.ratio) idle (raw \(raw.map(\.latency.ratio) ?? "-")), target 1.5×") }
        if og.throughput < 0.8 { misses.append("writer \(og.throughput.ratio) solo (raw \(raw.map(\.throughput.ratio) ?? "-")), target 0.8×") }
        return misses
    }

    /// `merge`: against a raw re-fetch of the changed rows, and the main queue's stall per 1,000 objects.
    static func merge(objects: Int) -> BenchTarget {
        BenchTarget(text: "≤ 1.0× raw re-fetch; stall < 16 ms per 1,000 objects") { row in
            guard let ratio = row.ratioRaw, let stallSeconds = row.extra["objectgraph_merge_call_s"] ?? row.seconds[.objectGraph] else { return nil }
            var misses: [String] = []
            if ratio > 1.0 { misses.append("\(ratio.ratio) raw, target 1.0×") }
            let stall = stallSeconds * 1000 / (Double(objects) / 1000)
            if stall >= 16 { misses.append("stall \(stall.compact) ms per 1,000, target < 16") }
            return misses
        }
    }
}

extension Int {
    /// The number with thousands separators: 100,000.
    var grouped: String {
        let digits = String(magnitude)
        var result = ""
        for (n, digit) in digits.enumerated() {
            if n > 0 && (digits.count - n) % 3 == 0 { result.append(",") }
            result.append(digit)
        }
        return (self < 0 ? "-" : "") + result
    }
}

extension Double {
    /// Short decimal form without trailing zeros: 1.5, 64, 0.25.
    var compact: String {
        var text = String(format: "%.2f", self)
        while text.contains(".") && (text.hasSuffix("0") || text.hasSuffix(".")) { text.removeLast() }
        return text
    }

    /// A ratio as the report prints it: 1.23×.
    var ratio: String { String(format: "%.2f×", self) }
}
