import Foundation
import ObjectGraphBenchCore
import Testing

@Suite("Benchmark sizes")
struct BenchSizesTests {
    @Test("a scale of 1 keeps the issue's sizes")
    func identity() throws {
        let settings = BenchSettings(synchronous: .full, runs: 3)
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        #expect(try encoder.encode(settings.sizes) == encoder.encode(BenchSizes.full))
        #expect(settings.sizesDescription == "full sizes")
    }

    @Test("--scale multiplies each size, keeps at least one of each, and keeps picks within their rows")
    func scaled() {
        let sizes = BenchSizes.full.scaled(by: 0.05)
        #expect(sizes.insert == 5_000 && sizes.fetch == 10_000 && sizes.batched == 50_000 && sizes.update == 500)
        #expect(sizes.batchSize == BenchSizes.full.batchSize && sizes.readers == BenchSizes.full.readers)
        let tiny = BenchSizes.full.scaled(by: 0.000_001)
        #expect(tiny.insert == 1 && tiny.readWriteBatches == 1 && tiny.predicateQueries == 1)
        #expect(tiny.randomReads <= tiny.fetch && tiny.singleSaves <= tiny.update)
        #expect(BenchSettings(synchronous: .full, runs: 1, quick: true, scale: 0.5).sizesDescription == "--quick sizes × 0.5")
    }
}
