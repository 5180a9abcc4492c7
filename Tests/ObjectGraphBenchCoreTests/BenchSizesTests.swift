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
        #expect(tiny.batch == 1 && tiny.resultsObjects == 1 && tiny.resultsChanges == 1)
        let few = BenchSizes.full.scaled(by: 0.001)
        #expect(few.resultsObjects == 100 && few.resultsChanges == 1 && few.batch == 100)
        #expect(BenchSettings(synchronous: .full, runs: 1, quick: true, scale: 0.5).sizesDescription == "--quick sizes × 0.5")
    }

    @Test("the batch rows change the middle half of their rows, at least one, with a new negative value each run")
    func batchRange() {
        #expect(BenchData.batchRange(of: 100_000) == 25_000..<75_000)
        #expect(BenchData.batchRange(of: 1) == 0..<1)
        #expect(BenchData.batchRange(of: 3) == 0..<1)
        #expect(BenchData.batchUpdateValue(run: 0) == -1 && BenchData.batchUpdateValue(run: 3) == -4)
    }
}
