/// A metric's target, and how a row of the report is held to it.
///
/// The targets are the project's speed targets: for insert, fetch, fault, cachehit, batched, update
/// and merge (the typed variants are held to the key-value ones' targets), for the batch requests,
/// for `frc_merge`, and for the predicate and readwrite rows (see the Benchmarks article).
package struct BenchTarget: Sendable {
    /// The target as the Benchmarks article's table states it.
    package let text: String
    /// The ways the row misses the target (empty when it is met); nil when there is nothing to judge.
    package let misses: @Sendable (BenchRow) -> [String]?

    /// ObjectGraph's time at most `raw` times the raw SQLite time and `grdb` times GRDB's (each if given).
    package static func ratios(raw: Double? = nil, grdb: Double? = nil, rawName: String = "raw") -> BenchTarget {
        let text = [raw.map { "≤ \($0.compact)× \(rawName)" }, grdb.map { "≤ \($0.compact)× GRDB" }]
            .compactMap { $0 }.joined(separator: ", ")
        return BenchTarget(text: text) { row in
            var judged = false
            var misses: [String] = []
            if let raw, let ratioRaw = row.ratioRaw {
                judged = true
                if ratioRaw > raw { misses.append("\(ratioRaw.ratio) raw, target \(raw.compact)×") }
            }
            if let grdb, let ratioGRDB = row.ratioGRDB {
                judged = true
                if ratioGRDB > grdb { misses.append("\(ratioGRDB.ratio) GRDB, target \(grdb.compact)×") }
            }
            return judged ? misses : nil
        }
    }

    /// `batched`: ObjectGraph's peak memory above its baseline, and its time per row against `fetch`'s.
    package static func batched(maximumMiB: Double, perRowRatio: Double) -> BenchTarget {
        BenchTarget(text: "peak ≤ \(maximumMiB.compact) MiB above baseline; per-row time ≤ \(perRowRatio.compact)× fetch") { row in
            guard let peak = row.peakBytes[.objectGraph], let perRow = row.figure(.perRowVersusFetch, of: .objectGraph) else { return nil }
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
    package static let readWrite = BenchTarget(text: "reader p99 ≤ 1.5× idle p99; writer ≥ 0.8× solo throughput") { row in
        func figures(_ variant: BenchVariant) -> (latency: Double, throughput: Double)? {
            guard let idle = row.figure(.readerP99IdleSeconds, of: variant), let loaded = row.figure(.readerP99LoadedSeconds, of: variant),
                  let solo = row.figure(.writerSoloSeconds, of: variant), let withReaders = row.figure(.writerLoadedSeconds, of: variant),
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
    package static func merge(raw: Double, objects: Int) -> BenchTarget {
        BenchTarget(text: "≤ \(raw.compact)× raw re-fetch; stall < 16 ms per 1,000 objects") { row in
            guard let ratio = row.ratioRaw,
                  let stallSeconds = row.figure(.mergeCallSeconds, of: .objectGraph) ?? row.seconds[.objectGraph]
            else { return nil }
            var misses: [String] = []
            if ratio > raw { misses.append("\(ratio.ratio) raw, target \(raw.compact)×") }
            let stall = stallSeconds * 1000 / (Double(objects) / 1000)
            if stall >= 16 { misses.append("stall \(stall.compact) ms per 1,000, target < 16") }
            return misses
        }
    }

    /// `frc_merge`: ObjectGraph's time under `milliseconds` (one frame at 60 Hz for 16), and the
    /// whole merge call too (`merge_call_s`, the queue's stall) when it is reported. The other sides'
    /// times are shown for comparison, not judged.
    package static func frame(milliseconds: Double) -> BenchTarget {
        BenchTarget(text: "< \(milliseconds.compact) ms (one frame), merge to controllerDidChangeContent and the whole merge call") { row in
            guard let seconds = row.seconds[.objectGraph] else { return nil }
            var misses: [String] = []
            if seconds * 1000 >= milliseconds { misses.append("\((seconds * 1000).compact) ms to controllerDidChangeContent, target < \(milliseconds.compact)") }
            if let call = row.figure(.mergeCallSeconds, of: .objectGraph), call * 1000 >= milliseconds {
                misses.append("merge call \((call * 1000).compact) ms, target < \(milliseconds.compact)")
            }
            return misses
        }
    }
}
