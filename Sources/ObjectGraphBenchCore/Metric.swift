import Foundation
import ArgumentParser

/// One row of the report: what is timed, on which data, through which API.
///
/// The raw values are the rows' names in the table, in the JSON file and for `--only`. Each metric
/// belongs to a ``BenchWorkload`` (the data it reads and the preparation it needs) and, on the
/// ObjectGraph side, uses one ``BenchAccess``; the raw SQLite and GRDB sides run the same code for
/// the key-value and typed variants, so that both are held to the same baselines.
package enum Metric: String, CaseIterable, Codable, Sendable, ExpressibleByArgument {
    case insert
    case insertTyped = "insert_typed"
    case fetch
    case fetchTyped = "fetch_typed"
    case fault
    case cacheHit = "cachehit"
    case batched
    case predicateLimit7 = "predicate_limit7"
    case predicateNoLimit = "predicate_nolimit"
    case updateOneSave = "update_one_save"
    case updateTyped = "update_typed"
    case updateSeparateSaves = "update_separate_saves"
    case readWrite = "readwrite"
    case merge
    case batchInsert = "batch_insert"
    case batchInsertTyped = "batch_insert_typed"
    case batchUpdate = "batch_update"
    case batchDelete = "batch_delete"
    case frcMerge = "frc_merge"

    /// The workload whose data the metric reads, and whose stores are seeded before it runs.
    package var workload: BenchWorkload {
        switch self {
        case .insert, .insertTyped: .insert
        case .fetch, .fetchTyped: .fetch
        case .fault: .fault
        case .cacheHit: .cachehit
        case .batched: .batched
        case .predicateLimit7, .predicateNoLimit: .predicate
        case .updateOneSave, .updateTyped, .updateSeparateSaves: .update
        case .readWrite: .readwrite
        case .merge: .merge
        case .batchInsert, .batchInsertTyped, .batchUpdate, .batchDelete: .batch
        case .frcMerge: .frcMerge
        }
    }

    /// How the ObjectGraph side reads and writes values.
    package var access: BenchAccess {
        switch self {
        case .insertTyped, .fetchTyped, .updateTyped, .batchInsertTyped: .typed
        default: .keyValue
        }
    }
}

/// The workloads of the benchmark, in the order they run: the groups of
/// metrics that share their data.
package enum BenchWorkload: String, CaseIterable, Codable, Sendable, ExpressibleByArgument {
    case insert, fetch, fault, cachehit, batched, predicate, update, readwrite, merge
    /// `batch_insert`, `batch_update`, `batch_delete`: batch requests against set-based SQL.
    case batch
    /// A fetched results controller over a large result merging another context's save.
    case frcMerge = "frc_merge"

    /// The metrics of the workload, in the order of the report.
    package var metrics: [Metric] { Metric.allCases.filter { $0.workload == self } }
}

/// How the ObjectGraph side touches values.
package enum BenchAccess: String, Codable, Sendable {
    /// `value(forKey:)` and `setValue(_:forKey:)` on `ManagedObject`, Core Data's dynamic API.
    case keyValue
    /// The properties of a `@Managed` class (`Item`, in the executable), SwiftData's API.
    case typed
}

/// What `--only` selects: metrics or workloads, comma-separated (`--only fetch,update_typed`).
/// A workload's name selects all its metrics (`insert` selects `insert` and `insert_typed`).
package struct BenchSelection: ExpressibleByArgument, Sendable {
    /// The selected metrics, in the order of the report.
    package let metrics: [Metric]

    package init(metrics: [Metric]) {
        self.metrics = Metric.allCases.filter(metrics.contains)
    }

    package init?(argument: String) {
        var selected: [Metric] = []
        for name in argument.split(separator: ",").map({ String($0).trimmingCharacters(in: .whitespaces) }) {
            if let workload = BenchWorkload(rawValue: name) {
                selected += workload.metrics
            } else if let metric = Metric(rawValue: name) {
                selected.append(metric)
            } else {
                return nil
            }
        }
        guard !selected.isEmpty else { return nil }
        self.init(metrics: selected)
    }
}
