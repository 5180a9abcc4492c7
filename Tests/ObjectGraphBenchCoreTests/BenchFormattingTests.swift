import ObjectGraphBenchCore
import Testing

@Suite("Benchmark formatting and data")
struct BenchFormattingTests {
    @Test("numbers print with thousands separators, ratios with two decimals, times with four significant digits")
    func formatting() {
        #expect(100_000.grouped == "100,000")
        #expect((-1_234).grouped == "-1,234")
        #expect(999.grouped == "999")
        #expect(1.5.compact == "1.5" && 64.0.compact == "64" && 0.25.compact == "0.25")
        #expect(1.234.ratio == "1.23×")
        #expect(BenchReport.seconds(1.23456) == "1.235")
        #expect(BenchReport.seconds(0.0123456) == "0.01235")
    }

    @Test("the random picks are distinct rows, the same on every call")
    func picks() {
        let picks = BenchData.picks(1_000, of: 5_000)
        #expect(picks.count == 1_000 && Set(picks).count == 1_000)
        #expect(picks.allSatisfy { (0..<5_000).contains($0) })
        #expect(picks == BenchData.picks(1_000, of: 5_000))
    }

    @Test("a prefix's upper bound is above every string that starts with it; entries are the same on every call")
    func prefixUpperBound() {
        #expect(BenchData.prefixUpperBound("ab") == "ac")
        #expect("abzzzz" < BenchData.prefixUpperBound("ab"))
        #expect(BenchData.entry(7).name == BenchData.entry(7).name && BenchData.entry(7).score == BenchData.entry(7).score)
        #expect(BenchData.entry(7).name.hasSuffix("-7"))
    }
}
