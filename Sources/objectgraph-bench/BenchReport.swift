import Foundation

/// One row of the report: a measurement's medians for the three ways, its target and verdict.
struct BenchRow {
    /// The row's name in JSON and for `--only` (`predicate_limit7`, `update_one_save`, ...).
    var name: String
    /// What is timed.
    var summary: String
    /// Median seconds of each way that ran.
    var seconds: [BenchVariant: Double] = [:]
    /// The ways that cannot run the measurement yet (ObjectGraph, when its feature does not exist).
    var notYet: Set<BenchVariant> = []
    /// Peak resident memory above the baseline taken before the measurement, by way.
    var peakBytes: [BenchVariant: Int] = [:]
    var target: BenchTarget
    /// Further figures for the JSON file (medians of the samples' extra fields, prefixed by way).
    var extra: [String: Double] = [:]
    /// Why the row's checks failed, if they did.
    var failure: String?

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

/// Prints the report as Markdown tables (readable in a terminal, pasteable into the README) and
/// writes it as JSON.
struct BenchReport {
    var settings: BenchSettings
    var quick: Bool
    var rows: [BenchRow] = []

    var header: String {
        "ObjectGraph vs the raw SQLite C API vs GRDB — SQLite \(RawConnection.libraryVersion), WAL, synchronous = \(settings.synchronous.pragmaValue) "
            + "for all three; median of \(settings.runs) run\(settings.runs == 1 ? "" : "s") after a warm-up\(quick ? "; --quick sizes" : "")"
    }

    /// The table of times, ratios and verdicts, then the table of peak memory.
    func markdown() -> String {
        var lines = [
            header, "",
            "ObjectGraph asks for the same synchronous setting through `PersistentStoreOption.durability`; "
                + "its public API cannot read back the setting its connection really uses.", "",
        ]
        lines.append("| workload | ObjectGraph s | raw s | GRDB s | OG/raw | OG/GRDB | target | result |")
        lines.append("|---|---:|---:|---:|---:|---:|---|---|")
        for row in rows {
            let cells = [
                row.name,
                row.cell(.objectGraph),
                row.cell(.raw),
                row.cell(.grdb),
                row.ratioRaw.map(\.ratio) ?? "-",
                row.ratioGRDB.map(\.ratio) ?? "-",
                row.target.text,
                row.verdict,
            ]
            lines.append("| " + cells.joined(separator: " | ") + " |")
        }
        lines.append("")
        lines.append("Peak resident memory above a baseline taken just before each run (MiB; the highest of the warm-up and the runs):")
        lines.append("")
        lines.append("| workload | ObjectGraph | raw | GRDB |")
        lines.append("|---|---:|---:|---:|")
        for row in rows where !row.peakBytes.isEmpty {
            let cells = [row.name] + BenchVariant.allCases.map { variant in
                row.peakBytes[variant].map { (Double($0) / 1_048_576).compact } ?? "-"
            }
            lines.append("| " + cells.joined(separator: " | ") + " |")
        }
        lines.append("")
        lines.append("What each row times:")
        for row in rows { lines.append("- \(row.name): \(row.summary)") }
        return lines.joined(separator: "\n")
    }

    /// `{"workloads":[{"name","objectgraph_s","raw_s","grdb_s","ratio_raw","ratio_grdb", ...}], ...}`;
    /// a figure that does not exist is `null`.
    func json() throws -> Data {
        func number(_ value: Double?) -> Any { value.map { $0 as Any } ?? NSNull() }
        let workloads: [[String: Any]] = rows.map { row in
            var object: [String: Any] = [
                "name": row.name,
                "summary": row.summary,
                "objectgraph_s": number(row.seconds[.objectGraph]),
                "raw_s": number(row.seconds[.raw]),
                "grdb_s": number(row.seconds[.grdb]),
                "ratio_raw": number(row.ratioRaw),
                "ratio_grdb": number(row.ratioGRDB),
                "target": row.target.text,
                "result": row.verdict,
            ]
            for variant in BenchVariant.allCases {
                if let bytes = row.peakBytes[variant] { object["\(variant.rawValue)_peak_mib"] = Double(bytes) / 1_048_576 }
            }
            if let failure = row.failure { object["failure"] = failure }
            for (key, value) in row.extra { object[key] = value }
            return object
        }
        let sizes = try JSONSerialization.jsonObject(with: JSONEncoder().encode(settings.sizes))
        let root: [String: Any] = [
            "synchronous": settings.synchronous.pragmaValue,
            "journal_mode": "WAL",
            "runs": settings.runs,
            "quick": quick,
            "sizes": sizes,
            "workloads": workloads,
        ]
        return try JSONSerialization.data(withJSONObject: root, options: [.prettyPrinted, .sortedKeys])
    }

    /// Seconds with four significant digits: 1.234, 0.01234, 0.0001234.
    static func seconds(_ value: Double) -> String {
        String(format: value >= 1 ? "%.3f" : "%.4g", value)
    }
}
