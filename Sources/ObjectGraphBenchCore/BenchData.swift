import Foundation

/// SplitMix64: a small, seeded generator, so that every run and every way of the benchmark sees
/// the same data and the same random choices.
package struct BenchRandom: RandomNumberGenerator {
    private var state: UInt64

    package init(seed: UInt64) { state = seed }

    package mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// The benchmark's data, the same for the three ways.
///
/// - `Item`: ten Integer 64 attributes `i0`…`i9`, each equal to the row number (0-based; the
///   row's primary key is the row number + 1).
/// - `Entry` (for `predicate` and `readwrite`): `name` TEXT, indexed, and `score` INT. A name is
///   four random lowercase letters, a dash and the row number (so names are unique); a score is
///   random in 0..<1,000,000.
package enum BenchData {
    package static let seed: UInt64 = 0x0B1E_C7C0_FFEE

    /// The names of the ten attributes of `Item`.
    package static let itemKeys = (0..<10).map { "i\($0)" }

    /// The checksum of reading all ten attributes of one item: each value weighted by its
    /// attribute's position, so that a column read twice or skipped changes the sum.
    package static func itemChecksum(_ values: (Int) -> Int64) -> Int64 {
        var sum: Int64 = 0
        for k in 0..<10 { sum &+= values(k) &* Int64(k + 1) }
        return sum
    }

    /// An item's ten values, `i0` first.
    package typealias ItemValues = (Int64, Int64, Int64, Int64, Int64, Int64, Int64, Int64, Int64, Int64)

    /// ``itemChecksum(_:)`` of an item's ten values.
    package static func itemChecksum(of values: ItemValues) -> Int64 {
        itemChecksum { k in
            switch k {
            case 0: values.0
            case 1: values.1
            case 2: values.2
            case 3: values.3
            case 4: values.4
            case 5: values.5
            case 6: values.6
            case 7: values.7
            case 8: values.8
            default: values.9
            }
        }
    }

    /// The row numbers `fault` and `cachehit` read: `count` distinct rows of `rows`, in random order.
    package static func picks(_ count: Int, of rows: Int) -> [Int] {
        var random = BenchRandom(seed: seed ^ 0xF1C5)
        return Array(Array(0..<rows).shuffled(using: &random).prefix(count))
    }

    /// The name and score of `Entry` row `row`.
    package static func entry(_ row: Int) -> (name: String, score: Int64) {
        var random = BenchRandom(seed: seed ^ UInt64(row) &* 0x2545_F491_4F6C_DD1D)
        let letters = (0..<4).map { _ in Character(Unicode.Scalar(UInt8(97 + random.next() % 26))) }
        return (String(letters) + "-\(row)", Int64(random.next() % 1_000_000))
    }

    /// The rows `batch_update` and `batch_delete` change, by `i1` (the row number): the middle half
    /// of `rows` (at least one row).
    package static func batchRange(of rows: Int) -> Range<Int> {
        let start = rows / 4
        return start..<min(rows, start + max(1, rows / 2))
    }

    /// The value `batch_update` gives `i0` in run `run` (0 is the warm-up): negative, unlike every
    /// seeded value, and new in each run, so that every run changes every row it matches.
    package static func batchUpdateValue(run: Int) -> Int64 { -Int64(run + 1) }

    /// The two-letter prefixes the `predicate` queries look for, one per query.
    package static func prefixes(_ count: Int, variant: Int = 0) -> [String] {
        var random = BenchRandom(seed: seed ^ 0x9EF1 &+ UInt64(variant))
        return (0..<count).map { _ in
            String((0..<2).map { _ in Character(Unicode.Scalar(UInt8(97 + random.next() % 26))) })
        }
    }

    /// The least string above every string that starts with `prefix` (an ASCII prefix here): the
    /// upper bound of the index range that serves `name BEGINSWITH prefix`.
    package static func prefixUpperBound(_ prefix: String) -> String {
        var bytes = Array(prefix.utf8)
        bytes[bytes.count - 1] += 1
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// Keeps values the workloads read but do not sum from being optimised away.
package enum BenchSink {
    @inline(never)
    package static func consume<T>(_ value: T) {
        withExtendedLifetime(value) {}
    }
}

/// The names of the seeded stores the sides share by convention (each side keeps its own files).
package enum BenchStores {
    /// The update store of `access`: `update_one_save` and `update_separate_saves` change one,
    /// `update_typed` another, so that each can be read back and compared across the sides.
    package static func update(_ access: BenchAccess) -> String {
        access == .typed ? "update_typed" : "update"
    }

    /// The kept store `metric` reads, which each side seeds once before the runs: its kind
    /// (`items`, `update`, `update_typed`, `merge`, `batch` or `entries`) and its rows. nil when
    /// each run makes a store of its own.
    package static func kept(by metric: Metric, sizes: BenchSizes) -> (kind: String, rows: Int)? {
        switch metric.workload {
        case .insert, .frcMerge: nil
        case .fetch, .fault, .cachehit: ("items", sizes.fetch)
        case .batched: ("items", sizes.batched)
        case .predicate, .readwrite: ("entries", sizes.predicateRows)
        case .update: (update(metric.access), sizes.update)
        case .merge: ("merge", sizes.merge)
        case .batch: metric == .batchUpdate ? ("batch", sizes.batch) : nil
        }
    }
}
