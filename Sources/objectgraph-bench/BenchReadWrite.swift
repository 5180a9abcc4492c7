import Foundation
import Synchronization
import ObjectGraph
import ObjectGraphBenchCore

/// What `readwrite` needs from one way of using the database.
struct BenchReadWriteParticipants: Sendable {
    /// One query per reader: runs the `predicate` query (limit 7) for a prefix and returns the
    /// number of results. Each is called from one thread only, its own.
    var readers: [@Sendable (String) throws -> Int]
    /// Saves one batch of new entries; the batch number is unique over the whole benchmark. Returns
    /// the sum of the scores written.
    var writeBatch: @Sendable (Int) throws -> Int64
}

/// The `readwrite` schedule, the same for the three ways: the readers alone (idle latency), the
/// writer alone (solo throughput), then both at once. Each reader and the writer run on threads of
/// their own.
///
/// The sample's time is the readers' p99 latency under load; its figures give the idle p99,
/// the writer's times, and the numbers of queries.
enum BenchReadWrite {
    /// The row numbers of the entries batch `batch` writes (after the `seeded` rows).
    static func rows(ofBatch batch: Int, size: Int, after seeded: Int) -> Range<Int> {
        let first = seeded + batch * size
        return first..<(first + size)
    }

    /// Runs the three phases; `firstBatch` numbers this run's batches (two phases of `batches` each).
    static func run(
        _ participants: BenchReadWriteParticipants, batches: Int, batchSize: Int, firstBatch: Int,
        idleQueriesPerReader: Int, prefixes: [String]
    ) throws -> BenchSample {
        // 1. Readers alone.
        let idle = try readConcurrently(participants.readers, prefixes: prefixes, queries: idleQueriesPerReader, until: nil)
        // 2. The writer alone.
        var checksum: Int64 = 0
        let solo = try BenchClock.seconds {
            for batch in firstBatch..<(firstBatch + batches) { checksum &+= try participants.writeBatch(batch) }
        }
        // 3. Both: the readers query until the writer is done.
        let done = BenchFlag()
        let writerResult = Mutex<Result<(Double, Int64), BenchError>?>(nil)
        // Threads of their own (not Foundation's `Thread`, which keeps its block, and the stores it
        // captured, until the thread's exit: see `ThreadOfItsOwn`).
        let writer: @Sendable () -> Void = {
            let result = Result { () throws(BenchError) -> (Double, Int64) in
                do {
                    var sum: Int64 = 0
                    let seconds = try BenchClock.seconds {
                        for batch in (firstBatch + batches)..<(firstBatch + 2 * batches) { sum &+= try participants.writeBatch(batch) }
                    }
                    return (seconds, sum)
                } catch {
                    throw BenchError("readwrite writer: \(error)")
                }
            }
            writerResult.withLock { $0 = result }
            done.set()
        }
        let loaded = try readConcurrently(participants.readers, prefixes: prefixes, queries: nil, until: done) {
            ThreadOfItsOwn.start(writer)
        }
        guard let result = writerResult.withLock({ $0 }) else { throw BenchError("readwrite: the writer did not finish") }
        let (loadedWriter, loadedSum) = try result.get()
        checksum &+= loadedSum
        let idleP99 = BenchStatistics.percentile(99, of: idle) ?? 0
        let loadedP99 = BenchStatistics.percentile(99, of: loaded) ?? 0
        return BenchSample(
            seconds: loadedP99, rows: 2 * batches * batchSize, checksum: checksum,
            figures: [
                .readerP99IdleSeconds: idleP99,
                .readerP99LoadedSeconds: loadedP99,
                .writerSoloSeconds: solo,
                .writerLoadedSeconds: loadedWriter,
                .readerQueriesIdle: Double(idle.count),
                .readerQueriesLoaded: Double(loaded.count),
            ])
    }

    /// Runs every reader on a thread of its own, each for `queries` queries or until `flag` is set;
    /// `started` runs once the readers are started. Returns every query's latency in seconds.
    private static func readConcurrently(
        _ readers: [@Sendable (String) throws -> Int], prefixes: [String], queries: Int?, until flag: BenchFlag?,
        started: () -> Void = {}
    ) throws -> [Double] {
        let latencies = Mutex<[Double]>([])
        let failures = Mutex<[String]>([])
        let group = DispatchGroup()
        for (index, query) in readers.enumerated() {
            group.enter()
            ThreadOfItsOwn.start {
                var own: [Double] = []
                var n = 0
                do {
                    while queries.map({ n < $0 }) ?? !(flag?.isSet ?? true) {
                        let prefix = prefixes[(index * 7 + n) % prefixes.count]
                        let seconds = try BenchClock.seconds { _ = try query(prefix) }
                        own.append(seconds)
                        n += 1
                    }
                } catch {
                    failures.withLock { $0.append("readwrite reader \(index): \(error)") }
                }
                latencies.withLock { $0 += own }
                group.leave()
            }
        }
        started()
        group.wait()
        if let failure = failures.withLock({ $0.first }) { throw BenchError(failure) }
        return latencies.withLock { $0 }
    }
}

/// A flag set once by one thread and read by others.
final class BenchFlag: Sendable {
    private let value = Atomic<Bool>(false)
    var isSet: Bool { value.load(ordering: .acquiring) }
    func set() { value.store(true, ordering: .releasing) }
}
