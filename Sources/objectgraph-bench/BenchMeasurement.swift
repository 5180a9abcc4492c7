import Foundation
import ObjectGraphBenchCore

/// One row of the table, as something to run: its metric, its target, and what one run of it
/// does on one side.
struct BenchMeasurement {
    let metric: Metric
    /// What is timed, as the Benchmarks article's table says it.
    let summary: String
    let target: BenchTarget
    /// Whether each side runs it in a child process of its own, so that its memory peak is its own.
    var inChildProcess = false
    /// One run on one side; `run` is 0 for the warm-up, then 1...runs. nil when the side cannot run
    /// it yet (the ObjectGraph feature does not exist).
    let run: (any BenchSide, _ run: Int) throws -> BenchSample?
    /// After the runs, a figure read back from each side's store, which must be equal on all sides.
    var verify: ((any BenchSide) throws -> Int64)?

    /// The row's name in the table, the JSON file and for `--only`.
    var name: String { metric.rawValue }

    /// The measurement of a metric at the given sizes.
    static func of(_ metric: Metric, sizes: BenchSizes) -> BenchMeasurement {
        let access = metric.access
        let typed = access == .typed ? ", through a @Managed class's properties" : ", through value(forKey:) / setValue(_:forKey:)"
        switch metric {
        case .insert, .insertTyped:
            return BenchMeasurement(
                metric: metric, summary: "insert \(sizes.insert.grouped) objects and save\(typed)",
                target: .ratios(grdb: 1.0)) { side, _ in
                try side.insert(count: sizes.insert, access: access)
            }
        case .fetch, .fetchTyped:
            return BenchMeasurement(
                metric: metric,
                summary: "fetch \(sizes.fetch.grouped) objects fully materialised, read all ten attributes\(typed)",
                target: .ratios(grdb: 1.5)) { side, _ in
                try side.fetch(rows: sizes.fetch, access: access)
            }
        case .fault:
            let picks = BenchData.picks(sizes.randomReads, of: sizes.fetch)
            return BenchMeasurement(
                metric: metric,
                summary: "fetch \(sizes.fetch.grouped) as faults, then read one attribute of \(sizes.randomReads.grouped) random ones (raw, GRDB: those rows by primary key)",
                target: .ratios(raw: 4, grdb: 1.0, rawName: "raw point lookups")) { side, _ in
                try side.fault(rows: sizes.fetch, picks: picks)
            }
        case .cacheHit:
            let picks = BenchData.picks(sizes.randomReads, of: sizes.fetch)
            return BenchMeasurement(
                metric: metric,
                summary: "a second context materialises \(sizes.randomReads.grouped) objects already in the row cache (raw, GRDB: those rows by primary key)",
                target: .ratios(raw: 1.0, rawName: "raw point lookups")) { side, _ in
                try side.cacheHit(rows: sizes.fetch, picks: picks)
            }
        case .batched:
            return BenchMeasurement(
                metric: metric,
                summary: "iterate \(sizes.batched.grouped) rows with fetchBatchSize = \(sizes.batchSize), reading all ten attributes (raw, GRDB: one statement, a cursor)",
                target: .batched(maximumMiB: 64, perRowRatio: 1.5), inChildProcess: true
            ) { side, _ in
                try side.batched(rows: sizes.batched, batchSize: sizes.batchSize)
            }
        case .predicateLimit7, .predicateNoLimit:
            let prefixes = BenchData.prefixes(sizes.predicateQueries)
            if metric == .predicateLimit7 {
                return BenchMeasurement(
                    metric: metric,
                    summary: "\(sizes.predicateRows.grouped) rows (name TEXT indexed, score INT): name BEGINSWITH %@ sorted by score, limit 7; \(sizes.predicateQueries) prefixes",
                    target: .ratios(raw: 1.5)) { side, _ in
                    try side.predicate(rows: sizes.predicateRows, prefixes: prefixes, limit: 7)
                }
            }
            return BenchMeasurement(
                metric: metric,
                summary: "the same with no limit (about \(sizes.predicateRows / 676) rows a query)",
                target: .ratios(raw: 2.0)) { side, _ in
                try side.predicate(rows: sizes.predicateRows, prefixes: prefixes, limit: 0)
            }
        case .updateOneSave, .updateTyped:
            return BenchMeasurement(
                metric: metric, summary: "\(sizes.update.grouped) objects changed in one save\(typed)",
                target: .ratios(grdb: 1.0),
                run: { side, _ in try side.updateInOneSave(rows: sizes.update, access: access) },
                verify: { side in try side.updateStoreChecksum(rows: sizes.update, access: access) })
        case .updateSeparateSaves:
            return BenchMeasurement(
                metric: metric, summary: "\(sizes.singleSaves.grouped) saves of one change each", target: .ratios(raw: 1.2),
                run: { side, _ in try side.updateInSeparateSaves(rows: sizes.update, saves: sizes.singleSaves) },
                verify: { side in try side.updateStoreChecksum(rows: sizes.update, access: .keyValue) })
        case .readWrite:
            let prefixes = BenchData.prefixes(64, variant: 1)
            return BenchMeasurement(
                metric: metric,
                summary: "a writer saves \(sizes.readWriteBatches) batches of \(sizes.readWriteBatchSize.grouped) objects while \(sizes.readers) readers run predicate_limit7 (time: reader p99)",
                target: .readWrite) { side, run in
                let participants = try side.readWriteParticipants(
                    rows: sizes.predicateRows, readers: sizes.readers, batchSize: sizes.readWriteBatchSize)
                return try BenchReadWrite.run(
                    participants, batches: sizes.readWriteBatches, batchSize: sizes.readWriteBatchSize,
                    firstBatch: run * 2 * sizes.readWriteBatches, idleQueriesPerReader: sizes.idleQueriesPerReader,
                    prefixes: prefixes)
            }
        case .merge:
            return BenchMeasurement(
                metric: metric,
                summary: "a background context changes \(sizes.merge.grouped) objects registered in the main context; time mergeChanges (raw, GRDB: re-fetch the changed rows)",
                target: .merge(raw: 1.5, objects: sizes.merge)) { side, _ in
                try side.merge(rows: sizes.merge)
            }
        case .batchInsert, .batchInsertTyped:
            let form = access == .typed
                ? "a BatchInsertRequest whose handler sets the ten properties of a @Managed Item"
                : "a BatchInsertRequest of dictionaries built untimed"
            return BenchMeasurement(
                metric: metric,
                summary: "insert \(sizes.batch.grouped) items into an empty store in one batch (ObjectGraph: \(form); raw: a prepared INSERT stepped per row, one transaction; GRDB: a cached statement, one write)",
                target: .ratios(raw: 1.3)) { side, _ in
                try side.batchInsert(count: sizes.batch, access: access)
            }
        case .batchUpdate:
            return BenchMeasurement(
                metric: metric,
                summary: "set i0 of the \(BenchData.batchRange(of: sizes.batch).count.grouped) of \(sizes.batch.grouped) items whose i1 is in a range (ObjectGraph: a BatchUpdateRequest; raw: one UPDATE … WHERE; GRDB: updateAll)",
                target: .ratios(raw: 1.3),
                run: { side, run in try side.batchUpdate(rows: sizes.batch, run: run) },
                verify: { side in try side.batchStoreChecksum(rows: sizes.batch) })
        case .batchDelete:
            return BenchMeasurement(
                metric: metric,
                summary: "delete the \(BenchData.batchRange(of: sizes.batch).count.grouped) of \(sizes.batch.grouped) items whose i1 is in a range, from a store seeded anew before each run (ObjectGraph: a BatchDeleteRequest; raw: one DELETE … WHERE; GRDB: deleteAll)",
                target: .ratios(raw: 1.3)) { side, _ in
                try side.batchDelete(rows: sizes.batch)
            }
        case .frcMerge:
            let changes = BenchResultsChanges(rows: sizes.resultsObjects, changes: sizes.resultsChanges)
            return BenchMeasurement(
                metric: metric,
                summary: "a FetchedResultsController over \(sizes.resultsObjects.grouped) objects in a main-queue context merges another context's save of \(changes.count.grouped) changes (\(changes.updated.count.grouped) moves, \(changes.inserted.count.grouped) inserts, \(changes.deleted.count.grouped) deletes); time: from the merge to controllerDidChangeContent (raw, GRDB: the sorted IDs queried again and diffed)",
                target: .frame(milliseconds: 16)) { side, _ in
                try side.resultsMerge(rows: sizes.resultsObjects, changes: changes)
            }
        }
    }

    /// One run on one side, under a fresh memory baseline: the sample and the peak resident memory
    /// above the baseline; nil when the side cannot run it yet.
    func runOnce(on side: any BenchSide, index: Int) throws -> (sample: BenchSample, peakBytes: Int?)? {
        let baseline = BenchMemory.startMeasurement()
        guard let sample = try run(side, index) else { return nil }
        return (sample, BenchMemory.peakAbove(baseline))
    }

    /// The warm-up and the timed runs on one side: the samples (warm-up first) and the highest
    /// peak above baseline of any run. No samples: not yet.
    func runs(on side: any BenchSide, settings: BenchSettings) throws -> (samples: [BenchSample], peakBytes: Int?) {
        try side.prepare(metric, sizes: settings.sizes)
        var samples: [BenchSample] = []
        var peak: Int?
        for index in 0...settings.runs {
            guard let (sample, bytes) = try runOnce(on: side, index: index) else { return ([], nil) }
            samples.append(sample)
            peak = max(peak ?? 0, bytes ?? 0)
        }
        return (samples, peak)
    }
}
