import Foundation

/// Prints the report as Markdown tables (readable in a terminal, pasteable into the README) and
/// writes it as JSON.
package struct BenchReport {
    package var settings: BenchSettings
    /// The version of the SQLite library the three ways use.
    package var sqliteVersion: String
    /// The server's `server_version`, when the stores are PostgreSQL's.
    package var postgresVersion: String?
    package var rows: [BenchRow] = []

    package init(settings: BenchSettings, sqliteVersion: String, postgresVersion: String? = nil, rows: [BenchRow] = []) {
        self.settings = settings
        self.sqliteVersion = sqliteVersion
        self.postgresVersion = postgresVersion
        self.rows = rows
    }

    package var header: String {
        let runs = "median of \(settings.runs) run\(settings.runs == 1 ? "" : "s") after a warm-up; \(settings.sizesDescription)"
        switch settings.store {
        case .sqlite:
            return "ObjectGraph vs the raw SQLite C API vs GRDB — SQLite \(sqliteVersion), WAL, synchronous = \(settings.synchronous.pragmaValue) "
                + "for all three; " + runs
        case .postgres:
            return "ObjectGraph's PostgreSQL store vs PostgresNIO's prepared statements (the raw column) — PostgreSQL \(postgresVersion ?? "?"), "
                + "one database on loopback, synchronous_commit = on for both; " + runs
        }
    }

    /// What the table's second paragraph says about how the ways were set up alike.
    private var setupNote: String {
        switch settings.store {
        case .sqlite:
            "ObjectGraph asks for the same synchronous setting through `PersistentStoreOption.durability`; "
                + "its public API cannot read back the setting its connection really uses."
        case .postgres:
            "Each way keeps its tables in schemas of its own in the same database; GRDB is SQLite's and is not run. "
                + "`readwrite`, `merge` and `frc_merge` time SQLite's connections and are not run either."
        }
    }

    /// The table of times, ratios and verdicts, then the table of peak memory.
    package func markdown() -> String {
        var lines = [
            header, "", setupNote, "",
        ]
        if case .postgres = settings.store {
            lines += postgresTables()
        } else {
            lines += sqliteTables()
        }
        lines.append("What each row times:")
        for row in rows { lines.append("- \(row.name): \(row.summary)") }
        return lines.joined(separator: "\n")
    }

    /// The times, ratios and verdicts of the three ways, then their peak memory.
    private func sqliteTables() -> [String] {
        var lines: [String] = []
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
        return lines
    }

    /// On PostgreSQL: ObjectGraph against PostgresNIO only, as ratios to that floor. The targets
    /// of the SQLite table are not PostgreSQL's (they compare with GRDB, and the batch rows with
    /// set-based SQL ObjectGraph does not send PostgreSQL yet), so no verdict is given.
    private func postgresTables() -> [String] {
        var lines = [
            "| metric | ObjectGraph s | raw PostgresNIO s | OG/raw |",
            "|---|---:|---:|---:|",
        ]
        for row in rows {
            lines.append("| " + [row.name, row.cell(.objectGraph), row.cell(.raw), row.ratioRaw.map(\.ratio) ?? "-"].joined(separator: " | ") + " |")
        }
        lines.append("")
        lines.append("Peak resident memory above a baseline taken just before each run (MiB; the highest of the warm-up and the runs):")
        lines.append("")
        lines.append("| metric | ObjectGraph | raw PostgresNIO |")
        lines.append("|---|---:|---:|")
        for row in rows where !row.peakBytes.isEmpty {
            let cells = [row.name] + [BenchVariant.objectGraph, .raw].map { variant in
                row.peakBytes[variant].map { (Double($0) / 1_048_576).compact } ?? "-"
            }
            lines.append("| " + cells.joined(separator: " | ") + " |")
        }
        lines.append("")
        lines.append("On PostgreSQL the raw `batch_insert` is one INSERT of ten unnested arrays (PostgreSQL's bulk path), "
            + "and the raw `batch_update` and `batch_delete` count their rows in the statement.")
        lines.append("")
        return lines
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
        var root: [String: Any] = [
            "synchronous": settings.synchronous.pragmaValue,
            "journal_mode": "WAL",
            "runs": settings.runs,
            "quick": settings.quick,
            "scale": settings.scale,
            "sizes": sizes,
            "workloads": workloads,
        ]
        if case .postgres = settings.store {
            root["store"] = "postgres"
            root["postgres_version"] = postgresVersion ?? NSNull()
            root["synchronous"] = nil
            root["journal_mode"] = nil
        } else {
            root["store"] = "sqlite"
        }
        return try JSONSerialization.data(withJSONObject: root, options: [.prettyPrinted, .sortedKeys])
    }

    /// Seconds with four significant digits: 1.234, 0.01234, 0.0001234.
    package static func seconds(_ value: Double) -> String {
        String(format: value >= 1 ? "%.3f" : "%.4g", value)
    }
}
