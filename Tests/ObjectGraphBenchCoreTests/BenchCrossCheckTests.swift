import ObjectGraphBenchCore
import Testing

@Suite("Benchmark cross-checks")
struct BenchCrossCheckTests {
    private func samples(_ checksums: [Int64], rows: Int = 10) -> [BenchSample] {
        checksums.map { BenchSample(seconds: 1, rows: rows, checksum: $0) }
    }

    @Test("sides that saw the same rows and values agree")
    func agreement() {
        let problems = BenchCrossCheck.mismatches([.objectGraph: samples([1, 2]), .raw: samples([1, 2]), .grdb: samples([1, 2])])
        #expect(problems.isEmpty)
    }

    @Test("a side whose checksum differs in one run is reported with the run and both sides")
    func checksumMismatch() {
        let problems = BenchCrossCheck.mismatches([.objectGraph: samples([1, 2]), .raw: samples([1, 3])])
        #expect(problems.count == 1)
        #expect(problems[0].contains("run 1"))
        #expect(problems[0].contains("ObjectGraph saw 10 rows (checksum 2)"))
        #expect(problems[0].contains("raw SQLite saw 10 rows (checksum 3)"))
    }

    @Test("a side that saw a different number of rows, or ran a different number of times, is reported")
    func rowsAndRunsMismatch() {
        #expect(BenchCrossCheck.mismatches([.objectGraph: samples([1]), .grdb: samples([1], rows: 9)]).count == 1)
        let problems = BenchCrossCheck.mismatches([.objectGraph: samples([1, 2]), .grdb: samples([1])])
        #expect(problems == ["ObjectGraph ran 2 times, GRDB 1"])
    }

    @Test("stores read back after the runs must hold the same figure")
    func storesReadBack() {
        #expect(BenchCrossCheck.disagreement([(.objectGraph, 5), (.raw, 5), (.grdb, 5)]) == nil)
        let message = BenchCrossCheck.disagreement([(.objectGraph, 5), (.raw, 6)])
        #expect(message == "the stores disagree after the runs: ObjectGraph 5, raw SQLite 6")
    }
}
