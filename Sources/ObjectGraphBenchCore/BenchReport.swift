import Foundation

/// Prints the report as Markdown tables (readable in a terminal, pasteable into the README) and
/// writes it as JSON.
package struct BenchReport {
    package var settings: BenchSettings
    /// The version of the SQLite library the three ways use.
    package var sqliteVersion: String
    package var rows: [BenchRow] = []

    package init(settings: BenchSettings, sqliteVersion: String, rows: [BenchRow] = []) {
        self.settings = settings
        self.sqliteVersion = sqliteVersion
        self.rows = rows
    }

    package var header: String {
        "ObjectGraph vs the raw SQLite C API vs GRDB — SQLite \(sqliteVersion), WAL, synchronous = \(settings.synchronous.pragmaValue) "
            + "for all three; median of \(settings.runs) run\(settings.runs == 1 ? "" : "s") after a warm-up; \(settings.sizesDescription)"
    }

    /// The table of times, ratios and verdicts, then the table of peak memory.
    package func markdown() -> String {
        var lines = [
            header, "",
            "ObjectGraph asks for the same synchronous setting through `PersistentStoreOption.durability`; "
                + "its public API cannot read back the setting its connection really uses.", "",
        ]
        lines.append("| metric | ObjectGraph s | raw s | GRDB s | OG/raw | OG/GRDB | target | result |")
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
        lines.append("| metric | ObjectGraph | raw | GRDB |")
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
    package func json() throws -> Data {
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
            for (variant, figures) in row.figures {
                for (figure, value) in figures { object["\(variant.rawValue)_\(figure.rawValue)"] = value }
            }
            return object
        }
        let sizes = try JSONSerialization.jsonObject(with: JSONEncoder().encode(settings.sizes))
        let root: [String: Any] = [
            "synchronous": settings.synchronous.pragmaValue,
            "journal_mode": "WAL",
            "runs": settings.runs,
            "quick": settings.quick,
            "scale": settings.scale,
            "sizes": sizes,
            "workloads": workloads,
        ]
        return try JSONSerialization.data(withJSONObject: root, options: [.prettyPrinted, .sortedKeys])
    }

    /// Seconds with four significant digits: 1.234, 0.01234, 0.0001234.
    package static func seconds(_ value: Double) -> String {
        String(format: value >= 1 ? "%.3f" : "%.4g", value)
    }
}
