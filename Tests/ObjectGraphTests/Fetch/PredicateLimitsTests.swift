import Foundation
import Testing
import ObjectGraph
@testable import ObjectGraphCore

/// Holds a value that a test hands to one other thread and reads back after joining it.
struct HandedOver<T>: @unchecked Sendable {  // used by one thread at a time, ordered by a semaphore
    var value: T
}

/// Runs `body` on a thread with a 512 KiB stack (a common server thread size) and waits for it:
/// a predicate walk that recursed without bound would overflow it and crash the test run.
func onSmallStack<T>(_ body: @escaping () throws -> T) throws -> T {
    var result: Result<T, any Error>?
    // A thread of its own (not Foundation's `Thread`, which keeps `body` and its captures until the
    // thread's exit, where releasing a database corrupts libdispatch's thread data).
    ThreadOfItsOwn.run(stackSize: 512 * 1024) { result = Result { try body() } }
    return try result!.get()
}

@Suite("Predicate nesting and size limits")
struct PredicateLimitsTests {
    static let maximum = PredicateLimits.maximumDepth

    static func repeated(_ piece: String, _ count: Int) -> String { String(repeating: piece, count: count) }

    /// Hostile formats: far deeper than the limit, each with the offset where parsing must stop.
    static let hostile: [(name: String, format: String)] = [
        ("5,000 nested parentheses", repeated("(", 5000) + "rank == 1" + repeated(")", 5000)),
        ("1,000 NOTs", repeated("NOT ", 1000) + "rank == 1"),
        ("10,000 !s", repeated("!", 10_000) + "rank == 1"),
        ("1,000 nested arithmetic parentheses", "rank == " + repeated("(", 1000) + "1" + repeated(")", 1000)),
        ("10,000 unary minus signs", "rank == " + repeated("-", 10_000) + "rank"),
        ("10,000 unclosed parentheses", repeated("(", 10_000)),
        ("10,000 unclosed parentheses before a comparison", repeated("(", 10_000) + "rank == 1"),
        ("a 10,000-term sum", "rank == " + Array(repeating: "rank", count: 10_000).joined(separator: " + ")),
        ("a 10,000-term quotient", "rank == " + Array(repeating: "rank", count: 10_000).joined(separator: " / ")),
        ("nested SUBQUERYs", repeated("SUBQUERY(tags, $t, ", 200) + "$t.name == 'x'" + repeated(").@count > 0", 200)),
        ("nested modulus:by:", "rank == " + repeated("modulus:by:(", 500) + "rank" + repeated(", 2)", 500)),
        ("nested lists", "rank IN " + repeated("{", 2000) + "1" + repeated("}", 2000)),
        ("nested CASTs", "rank == " + repeated("CAST(", 2000) + "1" + repeated(", \"NSNumber\")", 2000)),
    ]

    @Test(arguments: hostile.indices)
    func aHostilyDeepFormatIsASyntaxErrorAtTheOffsetWhereItGetsTooDeep(index: Int) throws {
        let (name, format) = Self.hostile[index]
        let error = try onSmallStack { FetchPredicate(format: format).syntaxError }
        #expect(error?.code == .predicateSyntax, "\(name)")
        let position = try #require(error?.position, "\(name)")
        #expect((0..<format.count).contains(position), "\(name): \(position)")
        #expect(position < 2000, "\(name): refused only at offset \(position)")
        // Parentheses around a predicate add no level to it: thousands of them are refused by the
        // parser's own bound on parentheses, the rest by the depth limit.
        let limit = format.hasPrefix("((")
            ? "more than the \(PredicateLimits.maximumParentheses) parentheses allowed"
            : "more than the \(Self.maximum) levels allowed"
        #expect(error?.message.contains(limit) == true, "\(name): \(error?.message.prefix(200) ?? "")")
    }

    @Test func parsingTakesTimeLinearInTheLengthOfTheFormat() {
        // Unclosed parentheses used to be scanned again from each one: quadratic.
        func seconds(_ count: Int) -> Double {
            let format = Self.repeated("(a == 1 AND ", count) + "a == 1"
            let start = Date()
            _ = FetchPredicate(format: format)
            return Date().timeIntervalSince(start)
        }
        // Before, 10,000 took over a minute; linear parsing takes well under a second, even loaded.
        let small = seconds(10_000), large = seconds(40_000)
        #expect(large < 5, "40,000 unclosed parentheses took \(large) s")
        #expect(large < max(small, 0.01) * 12, "4x the input took \(large / max(small, 0.001))x the time")
    }

    /// Predicates exactly at the limit, of every shape that nests.
    static func deepestFormats() -> [String] {
        let m = maximum
        var formats: [String] = []
        formats.append(repeated("NOT ", m - 1) + "rank == 1")
        formats.append(repeated("NOT (rank > 1 OR ", (m - 1) / 2) + "rank == 1" + repeated(")", (m - 1) / 2))
        var alternating = "rank == 3"
        for level in 0..<(m - 1) { alternating = "(title == 'x' \(level % 2 == 0 ? "AND" : "OR") \(alternating))" }
        formats.append(alternating)
        var leftDeep = "rank == 3"
        for level in 0..<(m - 1) { leftDeep = "(\(leftDeep) \(level % 2 == 0 ? "AND" : "OR") score < 2)" }
        formats.append(leftDeep)
        formats.append("rank == " + Array(repeating: "rank", count: m - 1).joined(separator: " - "))
        formats.append("rank == " + repeated("1 - (", m - 2) + "rank" + repeated(")", m - 2))
        formats.append("rank == " + repeated("-", m - 1) + "rank")
        formats.append("rank < " + repeated("modulus:by:(", m - 1) + "rank" + repeated(", 3)", m - 1))
        let subqueries = (m - 1) / (PredicateLimits.subqueryDepth + 2)
        formats.append(repeated("SUBQUERY(folder.notes, $n, NOT ", subqueries) + "$n.rank > 1" + repeated(").@count > 0", subqueries))
        formats.append(repeated("SUBQUERY(tags, $t, ANY $t.notes.rank == 2 AND ", subqueries) + "$t.name == 'red'" + repeated(").@count == 1", subqueries))
        var bushy = "rank == 1", depth = 1
        for level in 0..<10 {
            bushy = "(\(bushy) \(level % 2 == 0 ? "OR" : "AND") \(bushy))"
            depth += 1
        }
        while depth + 2 <= m {
            bushy = "(\(bushy) OR NOT \(depth) < rank)"
            depth += 2
        }
        formats.append(bushy)
        return formats
    }

    @Test func predicatesAtTheLimitParseEvaluateCompileAndPrintOnASmallStack() throws {
        let graph = try PredicateTestGraph()
        let checked = try onSmallStack { () -> Int in
            var count = 0
            for format in Self.deepestFormats() {
                let predicate = FetchPredicate(format: format)
                try predicate.validate()
                #expect(predicate.node.depth <= Self.maximum, "\(format)")
                #expect(FetchPredicate(format: predicate.predicateFormat) == predicate, "\(format)")
                try PredicateCase("Note", format).expectSameAnswers(in: graph)
                count += 1
            }
            return count
        }
        #expect(checked == Self.deepestFormats().count)
        // One level more is refused.
        let tooDeep = FetchPredicate(format: Self.repeated("NOT ", Self.maximum) + "rank == 1")
        #expect(tooDeep.syntaxError?.code == .predicateSyntax)
        #expect(tooDeep.syntaxError?.position == 0)  // the NOT that makes it one level too deep
    }

    @Test func compoundsFoldedInCodeStayUsableAtAnyLength() throws {
        let graph = try PredicateTestGraph()
        var all = FetchPredicate(value: true), any = FetchPredicate(value: false)
        for i in 0..<1000 {
            all = .and([all, FetchPredicate(format: "rank != %d", i + 100)])
            any = .or([any, FetchPredicate(format: "rank == %d", i % 5)])
        }
        try all.validate()
        try any.validate()
        #expect(all.node.depth <= Self.maximum && any.node.depth <= Self.maximum)
        try onSmallStack {
            try PredicateCase("Note", all.predicateFormat).expectSameAnswers(in: graph)
            #expect(try graph.sqlKeys("Note", all) == graph.memoryKeys("Note", all))
            #expect(try graph.sqlKeys("Note", any) == [1, 2, 3, 6, 16])
            #expect(try graph.memoryKeys("Note", any) == [1, 2, 3, 6, 16])
            _ = all.description
        }
    }

    @Test func negationsNestedInCodeBeyondTheLimitAreRefusedOnEveryStore() throws {
        let graph = try PredicateTestGraph()
        var predicate = FetchPredicate(format: "rank == 1")
        for _ in 0..<10_000 { predicate = .not(predicate) }
        #expect(throws: ObjectGraphError.invalidFetchRequest) { try predicate.validate() }
        #expect(throws: ObjectGraphError.invalidFetchRequest) { try graph.memoryKeys("Note", predicate) }
        #expect(throws: ObjectGraphError.invalidFetchRequest) { try graph.sqlKeys("Note", predicate) }
        let message = try #require(predicate.syntaxError?.message)
        #expect(message.contains("more than the \(Self.maximum) levels allowed"))
        _ = try onSmallStack { predicate.description }
    }
}

@Suite("Long predicates run in SQLite as in memory")
struct PredicateLengthTests {
    static func chain(_ term: (Int) -> String, _ count: Int, _ separator: String) -> String {
        (0..<count).map(term).joined(separator: separator)
    }

    /// Each over SQLite's old limits (1,000 terms of AND or OR, 1,000 NOTs).
    static let chains: [(name: String, format: String)] = [
        ("3,000 ANDs", chain({ "rank != \($0 + 100)" }, 3000, " AND ")),
        ("1,500 ORs of ordering", chain({ "rank > \($0 + 14)" }, 1500, " OR ")),
        ("1,500 NOTs in a chain", chain({ "NOT rank == \($0 + 100)" }, 1500, " AND ")),
        ("1,500 ORs of two keys", chain({ $0 % 2 == 0 ? "rank == \($0 % 9)" : "title == 'apple\($0 % 3)'" }, 1500, " OR ")),
        ("1,500 BEGINSWITHs", chain({ "title BEGINSWITH 'q\($0)'" }, 1500, " OR ") + " OR title BEGINSWITH 'ch'"),
        ("1,500 ANYs", chain({ "ANY tags.name == 'n\($0)'" }, 1500, " OR ") + " OR ANY tags.name == 'blue'"),
    ]

    @Test(arguments: chains.indices)
    func longChainsOfAndOrAndNotAgree(index: Int) throws {
        let format = Self.chains[index].format
        let graph = try PredicateTestGraph()
        let predicate = FetchPredicate(format: format)
        try predicate.validate()
        try PredicateCase("Note", format).expectSameAnswers(in: graph)
    }

    @Test func fortyThousandArgumentsJoinedByOrAgree() throws {
        let graph = try PredicateTestGraph()
        let ranks: [Any] = (0..<40_000).map { (i: Int) -> Any in i % 3 == 0 ? Int64(i / 3 % 10) : Int64(1000 + i) }
        let format = Array(repeating: "rank == %@", count: ranks.count).joined(separator: " OR ")
        let predicate = FetchPredicate(format: format, argumentArray: ranks)
        try predicate.validate()
        #expect(try graph.sqlKeys("Note", predicate) == graph.memoryKeys("Note", predicate))
        #expect(try graph.memoryKeys("Note", predicate) == [1, 2, 3, 5, 6, 7, 8, 9, 16])
    }

    @Test func longListsKeepTheExactValuesOfEveryType() throws {
        let graph = try PredicateTestGraph()
        var filler = 40_000  // more than SQLite binds in one statement
        func list<T>(_ wanted: [T], _ make: (Int) -> T) -> [T] { wanted + (0..<filler).map(make) }
        let ints = list([Int64(3), 8], { Int64(100 + $0) })
        filler = 2_000  // long enough to be bound as JSON
        let cases: [(String, Any, [Int64])] = [
            ("rank IN %@", ints, [3, 8]),
            ("score IN %@", list([1.5, -1.0], { 1.5 + Double($0 + 1) * 1e-15 }), [1, 4, 16]),
            ("score IN %@", list([2.0], { Double($0) + 2.5 }), [3]),
            ("price IN %@", list([Decimal(string: "10.25")!], { Decimal($0) + Decimal(string: "0.01")! }), [1]),
            ("title IN %@", list(["apple", "日本語テキスト", "e\u{301}clair"], { "apple\($0)" }), [1, 8, 10, 16]),
            ("title IN[c] %@", list(["APPLE"], { "x\u{0}\($0)" }), [1, 2, 16]),
            ("created IN %@", list([PredicateTestGraph.date(2000)], { PredicateTestGraph.date(2000 + Double($0 + 1) * 1e-6) }), [2]),
            ("blob IN %@", list([Data([1, 2])], { Data([1, 2, UInt8($0 % 256), UInt8($0 / 256 % 256)]) }), [2]),
            ("uuid IN %@", list([PredicateTestGraph.uuid2], { _ in UUID() }), [2]),
            ("link IN %@", list([URL(string: "https://a.example/x")!], { URL(string: "https://a.example/x\($0)")! }), [1]),
            ("NOT rank IN %@", list([Int64(1)], { Int64(200 + $0) }), [2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]),
            ("ANY tags.name IN %@", list(["green"], { "tag\($0)" }), [1, 4]),
        ]
        for (format, argument, expected) in cases {
            let predicate = FetchPredicate(format: format, argumentArray: [argument])
            try predicate.validate()
            let memory = try graph.memoryKeys("Note", predicate)
            #expect(try graph.sqlKeys("Note", predicate) == memory, "\(format)")
            #expect(memory == expected, "\(format)")
        }
    }

    @Test func aPredicateComparingWithTooManySeparateValuesIsRefusedOnEveryStore() throws {
        let graph = try PredicateTestGraph()
        let format = Array(repeating: "rank > %@", count: 33_000).joined(separator: " OR ")
        let predicate = FetchPredicate(format: format, argumentArray: Array(repeating: 1, count: 33_000))
        #expect(throws: ObjectGraphError.invalidFetchRequest) { try predicate.validate() }
        #expect(throws: ObjectGraphError.invalidFetchRequest) { try graph.memoryKeys("Note", predicate) }
        #expect(throws: ObjectGraphError.invalidFetchRequest) { try graph.sqlKeys("Note", predicate) }
        #expect(predicate.syntaxError?.message.contains("32766") == true)
        // Just under the limit, both answer.
        let fits = FetchPredicate(
            format: Array(repeating: "rank > %@", count: 30_000).joined(separator: " OR "),
            argumentArray: (0..<30_000).map { $0 + 8 })
        #expect(try graph.sqlKeys("Note", fits) == [9, 13, 14, 15])
        #expect(try graph.memoryKeys("Note", fits) == [9, 13, 14, 15])
    }
}

@Suite("NaN in predicates")
struct PredicateNaNTests {
    @Test(arguments: [
        ("score == %@", [Int64]()),
        ("score != %@", PredicateSQLAgreementTests.allNotes),
        ("score < %@", []), ("score >= %@", []),
        ("score BETWEEN {%@, 10}", []),
        ("score IN {1.5, %@}", [1, 16]),
        ("rank + %@ == rank", [4, 10, 11, 12]),  // nil == nil where rank is nil
        ("rank + %@ == nil", PredicateSQLAgreementTests.allNotes),
        ("modulus:by:(%@, 3) == 0", []),
        ("%@ == %@", []),
    ])
    func nanEqualsNothingAndOrdersNowhereInMemoryAsInSQLite(format: String, expected: [Int64]) throws {
        let graph = try PredicateTestGraph()
        let predicate = FetchPredicate(format: format, argumentArray: [Double.nan, Double.nan])
        let memory = try graph.memoryKeys("Note", predicate)
        #expect(memory == expected, "\(format)")
        #expect(try graph.sqlKeys("Note", predicate) == memory, "\(format)")
    }
}
