import ArgumentParser
import Foundation

/// The `synchronous` pragma every way of the benchmark uses: stated in the output, the same for
/// ObjectGraph, the raw SQLite C API and GRDB.
package enum BenchSynchronous: String, CaseIterable, Codable, Sendable, ExpressibleByArgument {
    /// `synchronous = FULL`: an acknowledged commit survives power loss (ObjectGraph's default).
    case full
    /// `synchronous = NORMAL`: an acknowledged commit survives a crash of the process.
    case normal

    /// The pragma's value, as SQL spells it.
    package var pragmaValue: String { rawValue.uppercased() }

    /// What `PRAGMA synchronous` reads back: 2 for FULL, 1 for NORMAL.
    package var pragmaNumber: Int { self == .full ? 2 : 1 }
}

/// How big each workload is: the full sizes, small ones for a smoke check (`--quick`), either
/// scaled by `--scale`.
package struct BenchSizes: Codable, Sendable {
    /// Objects inserted and saved by `insert`.
    package var insert: Int
    /// Rows read by `fetch`, and the rows `fault` and `cachehit` pick from.
    package var fetch: Int
    /// Objects read at random by `fault` and materialised from the row cache by `cachehit`.
    package var randomReads: Int
    /// Rows iterated by `batched`.
    package var batched: Int
    /// `fetchBatchSize` of `batched`.
    package var batchSize: Int
    /// Rows of the `predicate` table.
    package var predicateRows: Int
    /// Queries (each with its own prefix) in one timed run of `predicate`.
    package var predicateQueries: Int
    /// Objects changed in one save by `update`, and the size of its table.
    package var update: Int
    /// Saves of one change each by `update`.
    package var singleSaves: Int
    /// Batches the `readwrite` writer saves in each phase.
    package var readWriteBatches: Int
    /// Objects in one `readwrite` batch.
    package var readWriteBatchSize: Int
    /// Concurrent readers of `readwrite`.
    package var readers: Int
    /// Queries each `readwrite` reader runs when the writer is idle.
    package var idleQueriesPerReader: Int
    /// Objects changed in the background and merged by `merge`.
    package var merge: Int
    /// Rows `batch_insert` inserts, and the rows of the stores `batch_update` and `batch_delete`
    /// change (each changes half of them).
    package var batch: Int
    /// Objects in the results of `frc_merge`'s controller.
    package var resultsObjects: Int
    /// Changes (updates that move objects, inserts, deletes) `frc_merge`'s controller merges.
    package var resultsChanges: Int

    /// The full sizes, as the Benchmarks article's table gives them.
    package static let full = BenchSizes(
        insert: 100_000, fetch: 200_000, randomReads: 20_000, batched: 1_000_000, batchSize: 100,
        predicateRows: 500_000, predicateQueries: 100, update: 10_000, singleSaves: 10_000,
        readWriteBatches: 20, readWriteBatchSize: 1_000, readers: 4, idleQueriesPerReader: 250, merge: 10_000,
        batch: 100_000, resultsObjects: 100_000, resultsChanges: 1_000)

    /// Small sizes: every workload runs, in well under a minute.
    package static let quick = BenchSizes(
        insert: 5_000, fetch: 10_000, randomReads: 2_000, batched: 50_000, batchSize: 100,
        predicateRows: 20_000, predicateQueries: 20, update: 1_000, singleSaves: 300,
        readWriteBatches: 4, readWriteBatchSize: 1_000, readers: 4, idleQueriesPerReader: 50, merge: 1_000,
        batch: 5_000, resultsObjects: 10_000, resultsChanges: 100)

    /// The sizes multiplied by `factor`, each at least 1 (the readers' count and the batch size of
    /// `batched` are kept; random reads, single saves and the results' changes stay within the rows
    /// they pick from).
    package func scaled(by factor: Double) -> BenchSizes {
        func scale(_ value: Int) -> Int { max(1, Int((Double(value) * factor).rounded())) }
        var sizes = self
        sizes.insert = scale(insert)
        sizes.fetch = scale(fetch)
        sizes.randomReads = min(scale(randomReads), sizes.fetch)
        sizes.batched = scale(batched)
        sizes.predicateRows = scale(predicateRows)
        sizes.predicateQueries = scale(predicateQueries)
        sizes.update = scale(update)
        sizes.singleSaves = min(scale(singleSaves), sizes.update)
        sizes.readWriteBatches = scale(readWriteBatches)
        sizes.readWriteBatchSize = scale(readWriteBatchSize)
        sizes.idleQueriesPerReader = scale(idleQueriesPerReader)
        sizes.merge = scale(merge)
        sizes.batch = scale(batch)
        sizes.resultsObjects = scale(resultsObjects)
        sizes.resultsChanges = min(scale(resultsChanges), sizes.resultsObjects)
        return sizes
    }
}

/// Everything a run of the benchmark is configured with.
package struct BenchSettings: Codable, Sendable {
    package var sizes: BenchSizes
    package var synchronous: BenchSynchronous
    /// Timed runs of each workload (after one warm-up run); the median is reported.
    package var runs: Int
    /// Whether `sizes` are the quick ones (before scaling).
    package var quick = false
    /// The factor `sizes` were scaled by (1: as given).
    package var scale = 1.0
    /// Whether ObjectGraph's stores record persistent history (`--history`), to measure what it costs.
    package var history = false
    /// Where the stores live: SQLite files (the default) or schemas of a PostgreSQL database.
    package var store = BenchStore.sqlite

    package init(synchronous: BenchSynchronous, runs: Int, quick: Bool = false, scale: Double = 1) {
        self.sizes = (quick ? BenchSizes.quick : .full).scaled(by: scale)
        self.synchronous = synchronous
        self.runs = runs
        self.quick = quick
        self.scale = scale
    }

    /// The sizes as the report's header states them: "full sizes", "--quick sizes", "full sizes × 0.05".
    package var sizesDescription: String {
        (quick ? "--quick sizes" : "full sizes") + (scale == 1 ? "" : " × \(scale)") + (history ? "; ObjectGraph records persistent history" : "")
    }
}

/// Where the benchmark keeps its stores (`--store`).
package enum BenchStore: Codable, Sendable, Equatable {
    /// SQLite files in a temporary folder: ObjectGraph, the raw SQLite C API and GRDB.
    case sqlite
    /// Schemas of the PostgreSQL database at `url`, each named with `prefix` (one per run of the
    /// command, so that runs never share a table, and every schema of the run is dropped at its
    /// end): ObjectGraph's `.postgres` store against PostgresNIO's prepared statements.
    case postgres(url: String, prefix: String)

    /// The ways that run on this store.
    package var variants: [BenchVariant] {
        switch self {
        case .sqlite: BenchVariant.allCases
        case .postgres: [.objectGraph, .raw]
        }
    }

    /// The metrics that run on this store. On PostgreSQL: those whose floor is a statement
    /// sequence PostgresNIO runs as the SQLite C API does; `readwrite`, `merge` and `frc_merge`
    /// time SQLite's connections and files (WAL readers, a re-fetch), and are not run there.
    package func runs(_ metric: Metric) -> Bool {
        switch self {
        case .sqlite: true
        case .postgres: ![.readWrite, .merge, .frcMerge].contains(metric)
        }
    }

    /// The title of a way on this store: "raw SQLite" or "raw PostgresNIO".
    package func title(of variant: BenchVariant) -> String {
        switch (self, variant) {
        case (.postgres, .raw): "raw PostgresNIO"
        default: variant.title
        }
    }
}
