import ObjectGraphBenchCore
import Testing

@Suite("Benchmark statistics")
struct BenchStatisticsTests {
    @Test("the median of an odd count is the middle value, of an even count the mean of the two middle values")
    func median() {
        #expect(BenchStatistics.median([3, 1, 2]) == 2)
        #expect(BenchStatistics.median([4, 1, 3, 2]) == 2.5)
        #expect(BenchStatistics.median([]) == nil)
    }

    @Test("a percentile is the nearest-rank value")
    func percentile() {
        let values = (1...100).map(Double.init).shuffled()
        #expect(BenchStatistics.percentile(99, of: values) == 99)
        #expect(BenchStatistics.percentile(100, of: values) == 100)
        #expect(BenchStatistics.percentile(0, of: values) == 1)
        #expect(BenchStatistics.percentile(50, of: []) == nil)
    }
}
