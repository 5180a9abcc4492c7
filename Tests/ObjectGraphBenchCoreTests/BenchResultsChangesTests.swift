import ObjectGraphBenchCore
import Testing

@Suite("frc_merge's changes, hand-written diff and checksum")
struct BenchResultsChangesTests {
    @Test("a quarter of the changes are deletes, a quarter inserts, the rest updates, each row touched once")
    func mix() {
        let changes = BenchResultsChanges(rows: 100_000, changes: 1_000)
        #expect(changes.deleted.count == 250 && changes.inserted.count == 250 && changes.updated.count == 500)
        #expect(changes.count == 1_000)
        let touched = changes.deleted + changes.updated.map(\.row)
        #expect(Set(touched).count == touched.count)
        #expect(touched.allSatisfy { (0..<100_000).contains($0) })
        #expect(changes.inserted.map(\.row) == Array(100_000..<100_250))
    }

    @Test("every update gives its row a sort key other than its own, and the changes are the same each time")
    func updatesMoveAndAreSeeded() {
        let changes = BenchResultsChanges(rows: 10_000, changes: 100)
        #expect(changes.updated.allSatisfy { $0.key != Int64($0.row) })
        #expect(changes == BenchResultsChanges(rows: 10_000, changes: 100))
        #expect(changes != BenchResultsChanges(rows: 10_001, changes: 100))
    }

    @Test("tiny and oversized sizes stay within the rows")
    func bounds() {
        let one = BenchResultsChanges(rows: 1, changes: 1)
        #expect(one.updated.count == 1 && one.deleted.isEmpty && one.inserted.isEmpty)
        #expect(BenchResultsChanges(rows: 8, changes: 50).count == 8)
        #expect(BenchResultsChanges(rows: 0, changes: 5).count == 0)
    }

    @Test("the results after the save are sorted by key then row, without the deleted rows, with the inserted ones")
    func results() {
        let changes = BenchResultsChanges(rows: 1_000, changes: 40)
        let after = changes.results(afterChanging: 1_000)
        #expect(after.count == 1_000)
        let gone = Set(changes.deleted.map(Int64.init))
        #expect(!after.contains { gone.contains($0) })
        #expect(Set(changes.inserted.map { Int64($0.row) }).isSubset(of: Set(after)))
        var keys: [Int64: Int64] = [:]
        for row in 0..<1_000 { keys[Int64(row)] = Int64(row) }
        for update in changes.updated { keys[Int64(update.row)] = update.key }
        for insert in changes.inserted { keys[Int64(insert.row)] = insert.key }
        let pairs = after.map { (keys[$0]!, $0) }
        #expect(zip(pairs, pairs.dropFirst()).allSatisfy { $0 < $1 })
    }

    @Test("the checksum weighs each row by its place: swapping two rows changes it")
    func checksum() {
        #expect(BenchResultsChanges.checksum([7, 9]) == 1 * 7 + 2 * 9)
        #expect(BenchResultsChanges.checksum([7, 9]) != BenchResultsChanges.checksum([9, 7]))
        #expect(BenchResultsChanges.checksum([Int64]()) == 0)
    }

    @Test("the hand-written diff counts the rows that left, came, and the updated rows still there")
    func diff() {
        let diff = BenchResultsDiff(old: [1, 2, 3, 4], new: [4, 2, 5, 6], updated: [4, 3, 9])
        #expect(diff == BenchResultsDiff(deleted: 2, inserted: 2, updated: 1))
        #expect(diff.total == 5)
        #expect(BenchResultsDiff(old: [1, 2], new: [1, 2], updated: []).total == 0)
    }

    @Test("the hand-written diff of a save reports as many changes as the save made")
    func diffOfTheBenchmarkSave() {
        let rows = 2_000
        let changes = BenchResultsChanges(rows: rows, changes: 200)
        let before = Array(Int64(0)..<Int64(rows))
        let diff = BenchResultsDiff(
            old: before, new: changes.results(afterChanging: rows), updated: changes.updated.map { Int64($0.row) })
        #expect(diff == BenchResultsDiff(deleted: 50, inserted: 50, updated: 100))
        #expect(diff.total == changes.count)
    }
}
