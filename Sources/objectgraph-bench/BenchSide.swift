import Foundation
import ObjectGraphBenchCore

/// One way of running the workloads: ObjectGraph, the raw SQLite C API or GRDB.
///
/// Each method prepares what it needs untimed (stores are seeded once, on first use, and kept in
/// the side's folder), times only the work the Benchmarks article's table names, and returns what it saw.
/// The sides never share a file; each uses the same `synchronous` setting and WAL.
protocol BenchSide: AnyObject {
    var variant: BenchVariant { get }

    /// Seeds (once) the stores `metric` reads, so that seeding is outside every measurement.
    func prepare(_ metric: Metric, sizes: BenchSizes) throws

    /// Inserts `count` items into a new, empty store and saves them. Timed: the inserts and the save.
    /// `access` is how ObjectGraph sets the values; the other sides run the same code for both.
    func insert(count: Int, access: BenchAccess) throws -> BenchSample

    /// Reads every row of the `rows`-item store into objects and reads their ten attributes.
    /// `access` is how ObjectGraph reads the values; the other sides run the same code for both.
    func fetch(rows: Int, access: BenchAccess) throws -> BenchSample

    /// ObjectGraph: fetches the `rows` items as faults, then reads `i0` of the objects at `picks`.
    /// The others: reads the rows `picks` by primary key (the floor the faults are held to).
    func fault(rows: Int, picks: [Int]) throws -> BenchSample

    /// ObjectGraph: a second context materialises the objects at `picks`, whose rows another
    /// context already put in the row cache (untimed), and reads their ten attributes.
    /// The others: reads the rows `picks` by primary key.
    func cacheHit(rows: Int, picks: [Int]) throws -> BenchSample

    /// Iterates the `rows`-item store `batchSize` rows at a time, reading all ten attributes.
    func batched(rows: Int, batchSize: Int) throws -> BenchSample

    /// Runs `name BEGINSWITH prefix` sorted by score (descending), once per prefix, with
    /// `limit` (0: none), reading the name and score of each result.
    func predicate(rows: Int, prefixes: [String], limit: Int) throws -> BenchSample

    /// Changes `i0` of every item of the `rows`-item update store and saves once.
    /// Timed: the changes and the save (the objects are fetched untimed). Each `access` has a
    /// store of its own on every side (`update` and `update_typed`), so that each can be verified.
    func updateInOneSave(rows: Int, access: BenchAccess) throws -> BenchSample

    /// Changes `i0` of `saves` items of the update store, saving after each change.
    func updateInSeparateSaves(rows: Int, saves: Int) throws -> BenchSample

    /// The sum of `i0` over the update store of `access`, read back from the file: checks that the
    /// updates really reached it.
    func updateStoreChecksum(rows: Int, access: BenchAccess) throws -> Int64

    /// The readers and the writer of `readwrite`, on the `rows`-entry store.
    func readWriteParticipants(rows: Int, readers: Int, batchSize: Int) throws -> BenchReadWriteParticipants

    /// Something else changes `rows` items known to the reader; the reader brings them up to date.
    /// nil when the ObjectGraph feature does not exist yet.
    func merge(rows: Int) throws -> BenchSample?

    /// Inserts `count` items into a new, empty store through the side's bulk path (ObjectGraph: one
    /// `BatchInsertRequest`: of dictionaries built before, or, typed, from a handler that sets an
    /// `Item`'s properties). Timed: that request or transaction.
    func batchInsert(count: Int, access: BenchAccess) throws -> BenchSample

    /// Sets `i0` to `BenchData.batchUpdateValue(run:)` on the rows of `BenchData.batchRange(of:)`
    /// of the `rows`-item batch store, set-based (ObjectGraph: one `BatchUpdateRequest`). The
    /// sample's rows are those the request says it updated; its checksum, the rows that hold the
    /// new value, read back.
    func batchUpdate(rows: Int, run: Int) throws -> BenchSample

    /// The sum of `i0` over the batch store, read back from the file after `batch_update`'s runs.
    func batchStoreChecksum(rows: Int) throws -> Int64

    /// Deletes the rows of `BenchData.batchRange(of:)` from a new store of `rows` items (seeded
    /// untimed before each run), set-based (ObjectGraph: one `BatchDeleteRequest`). The sample's
    /// rows are those the request says it deleted; its checksum, the rows left, read back.
    func batchDelete(rows: Int) throws -> BenchSample

    /// ObjectGraph: a fetched results controller over the `rows` items of a new store, in a
    /// main-queue context, merges another context's save of `changes`; timed from the merge to the
    /// delegate's `controllerDidChangeContent`. The others: what a hand-written list does, the
    /// sorted IDs queried again and diffed. The sample's rows are the object changes reported, its
    /// checksum that of the results after the merge (`BenchResultsChanges.checksum`).
    func resultsMerge(rows: Int, changes: BenchResultsChanges) throws -> BenchSample?
}

/// A side that reads rows into structs, with no object graph (the raw SQLite and GRDB sides): its
/// seeded databases are kept by kind, and its `fault` and `cachehit` read the rows at `picks` by
/// primary key, in one transaction, the floor ObjectGraph's faults and row cache are held to.
protocol RowSide: BenchSide {
    associatedtype Store
    associatedtype ItemRow: BenchItemRow

    /// The seeded database `kind` (`items`, `update`, `merge`, `batch` or `entries`) of `rows` rows.
    func database(_ kind: String, rows: Int) throws -> Store

    /// A new database of its own, with the item table, and a function that removes it.
    func newDatabase(_ name: String) throws -> (Store, remove: () -> Void)

    /// Inserts items 0..<count into an empty database, saved in one transaction: what `insert` times.
    func insertItems(into store: Store, count: Int) throws

    /// Every item, and the checksum of their ten values.
    func readAllItems(_ store: Store) throws -> (Int, Int64)

    /// The rows `picks` (row numbers), each read by primary key, in one transaction.
    func pointLookups(_ store: Store, picks: [Int]) throws -> [ItemRow]
}

/// An item row, read into a struct.
protocol BenchItemRow {
    var i0: Int64 { get }
    /// The checksum of the ten values.
    var checksum: Int64 { get }
}

extension RowSide {
    func prepare(_ metric: Metric, sizes: BenchSizes) throws {
        if let store = BenchStores.kept(by: metric, sizes: sizes) { _ = try database(store.kind, rows: store.rows) }
    }

    func insert(count: Int, access: BenchAccess) throws -> BenchSample {
        let (store, remove) = try newDatabase("insert")
        defer { remove() }
        let seconds = try BenchClock.seconds { try insertItems(into: store, count: count) }
        let (rows, checksum) = try readAllItems(store)
        return BenchSample(seconds: seconds, rows: rows, checksum: checksum)
    }

    func fetch(rows: Int, access: BenchAccess) throws -> BenchSample {
        let store = try database("items", rows: rows)
        let (seconds, (count, checksum)) = try BenchClock.measure { try readAllItems(store) }
        return BenchSample(seconds: seconds, rows: count, checksum: checksum)
    }

    func fault(rows: Int, picks: [Int]) throws -> BenchSample {
        try timedPointLookups(rows: rows, picks: picks) { $0.i0 }
    }

    func cacheHit(rows: Int, picks: [Int]) throws -> BenchSample {
        try timedPointLookups(rows: rows, picks: picks) { $0.checksum }
    }

    /// Reads the rows `picks` of the `rows`-item store by primary key. Timed: the lookups and the
    /// sum of what `figure` reads from each row.
    @inline(__always)
    private func timedPointLookups(rows: Int, picks: [Int], _ figure: (ItemRow) -> Int64) throws -> BenchSample {
        let store = try database("items", rows: rows)
        let (seconds, checksum) = try BenchClock.measure {
            try pointLookups(store, picks: picks).reduce(Int64(0)) { $0 &+ figure($1) }
        }
        return BenchSample(seconds: seconds, rows: picks.count, checksum: checksum)
    }
}

extension BenchData {
    /// Runs `query` once per prefix (`predicate`'s queries): the results it counted, and the sum of
    /// their checksums.
    static func sum(over prefixes: [String], _ query: (String) throws -> (Int, Int64)) rethrows -> (Int, Int64) {
        var count = 0
        var checksum: Int64 = 0
        for prefix in prefixes {
            let (n, sum) = try query(prefix)
            count += n
            checksum &+= sum
        }
        return (count, checksum)
    }
}
