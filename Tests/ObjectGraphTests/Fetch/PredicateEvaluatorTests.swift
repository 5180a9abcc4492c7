import Foundation
import Testing
import ObjectGraph
@testable import ObjectGraphCore

@Suite("Predicates evaluated in memory")
struct PredicateEvaluatorTests {
    let graph: PredicateTestGraph

    init() throws {
        graph = try PredicateTestGraph()
    }

    private func evaluate(_ format: String, _ arguments: Any..., on object: FakeObject) throws -> Bool {
        try FetchPredicate(format: format, argumentArray: arguments).evaluate(with: object)
    }

    @Test func nilEqualsOnlyNilAndIsUnequalToEverythingElse() throws {
        let untitled = graph.notes[6]  // title nil, rank 7
        #expect(try evaluate("title == nil", on: untitled))
        #expect(try evaluate("title != 'x'", on: untitled))
        #expect(try !evaluate("title == 'x'", on: untitled))
        #expect(try !evaluate("title < 'x'", on: untitled))
        #expect(try !evaluate("title >= 'x'", on: untitled))
        #expect(try !evaluate("title BEGINSWITH ''", on: untitled))
        #expect(try !evaluate("title IN {nil}", on: untitled))
        #expect(try !evaluate("title BETWEEN {nil, 'z'}", on: untitled))
        #expect(try !evaluate("rank > nil", on: untitled))
    }

    @Test func numbersCompareNumericallyAcrossIntegerDoubleDecimalAndBoolean() throws {
        let apple = graph.notes[0]  // rank 1, score 1.5, price 10.25, flag true
        #expect(try evaluate("rank == 1.0", on: apple))
        #expect(try evaluate("rank == %@", Decimal(1), on: apple))
        #expect(try evaluate("rank == TRUE", on: apple))
        #expect(try evaluate("score > rank", on: apple))
        #expect(try evaluate("price > 10.2 AND price < %@", Decimal(string: "10.3")!, on: apple))
        #expect(try evaluate("flag == 1", on: apple))
        #expect(try !evaluate("rank == '1'", on: apple))
        #expect(try !evaluate("rank < '2'", on: apple))
    }

    @Test func datesCompareByTime() throws {
        let apple = graph.notes[0]  // created 1000 s after 2001
        #expect(try evaluate("created == %@", PredicateTestGraph.date(1000), on: apple))
        #expect(try evaluate("created < %@", PredicateTestGraph.date(1000.5), on: apple))
        #expect(try evaluate("created BETWEEN %@", [PredicateTestGraph.date(999), PredicateTestGraph.date(1000)], on: apple))
        #expect(try evaluate("created == 1000", on: apple))
    }

    @Test func stringsCompareByCodePointUnlessFolded() throws {
        let apple = graph.notes[0], upper = graph.notes[1]  // "apple", "Apple"
        #expect(try evaluate("title > 'Apple'", on: apple))  // 'a' (0x61) > 'A' (0x41)
        #expect(try evaluate("title < 'apple'", on: upper))
        #expect(try evaluate("title ==[c] 'APPLE'", on: upper))
        #expect(try evaluate("title <[c] 'b'", on: upper))
        #expect(try !evaluate("title == 'APPLE'", on: upper))
    }

    @Test func stringOperatorsWorkOnUnicodeScalarsNotCharacters() throws {
        let decomposed = graph.notes[9]  // "e\u{301}clair"
        #expect(try evaluate("title BEGINSWITH 'e'", on: decomposed))  // Swift's hasPrefix would say no
        #expect(try evaluate("title LIKE '??clair'", on: decomposed))
        #expect(try !evaluate("title LIKE '?clair'", on: decomposed))
        #expect(try evaluate("title BEGINSWITH[d] %@", "\u{E9}", on: graph.notes[10]))  // both fold to "e"
        #expect(try !evaluate("title BEGINSWITH %@", "e", on: graph.notes[10]))
        #expect(try evaluate("title ==[d] 'eclair'", on: decomposed))
    }

    @Test func percentAndUnderscoreAreOrdinaryCharacters() throws {
        let banana = graph.notes[2]  // "banana 50%", body "100% pure_cotton"
        #expect(try evaluate("title ENDSWITH '%'", on: banana))
        #expect(try evaluate("body CONTAINS 'e_c'", on: banana))
        #expect(try !evaluate("body CONTAINS 'e%c'", on: banana))
        #expect(try !evaluate("title LIKE 'banana 5_%'", on: banana))
        #expect(try evaluate("title LIKE 'banana ?0%'", on: banana))
    }

    @Test func matchesNeedsTheWholeStringToMatch() throws {
        let apple = graph.notes[0]
        #expect(try evaluate("title MATCHES 'app'", on: apple) == false)
        #expect(try evaluate("title MATCHES 'app.*'", on: apple))
        #expect(try evaluate("title MATCHES 'x|apple'", on: apple))
        #expect(try evaluate("title MATCHES[c] 'APPLE'", on: apple))
        #expect(throws: ObjectGraphError.invalidFetchRequest) { try evaluate("title MATCHES '['", on: apple) }
    }

    @Test func quantifiersOverAnEmptyToManyRelationship() throws {
        let untagged = graph.notes[2]
        #expect(try !evaluate("ANY tags.name == 'red'", on: untagged))
        #expect(try evaluate("ALL tags.name == 'red'", on: untagged))
        #expect(try evaluate("NONE tags.name == 'red'", on: untagged))
        #expect(try evaluate("tags.@count == 0", on: untagged))
    }

    @Test func quantifiersOverDestinations() throws {
        let apple = graph.notes[0]  // tags red, green
        #expect(try evaluate("ANY tags.name == 'green'", on: apple))
        #expect(try !evaluate("ALL tags.name == 'green'", on: apple))
        #expect(try evaluate("ALL tags.name IN {'red', 'green'}", on: apple))
        #expect(try !evaluate("NONE tags.name BEGINSWITH 'r'", on: apple))
        #expect(try evaluate("tags.@count == 2", on: apple))
        #expect(try evaluate("%@ IN tags", graph.tags[1].id, on: apple))
        #expect(try !evaluate("%@ IN tags", graph.tags[2].id, on: apple))
    }

    @Test func keyPathsFollowToOneRelationshipsAndNilGivesNil() throws {
        #expect(try evaluate("folder.name == 'Inbox'", on: graph.notes[0]))
        #expect(try evaluate("folder.name == nil", on: graph.notes[3]))  // no folder
        #expect(try evaluate("folder.name != 'Inbox'", on: graph.notes[3]))
        #expect(try evaluate("folder.notes.@count == 0", on: graph.notes[3]))
    }

    @Test func relationshipsAndSelfCompareByObjectID() throws {
        let apple = graph.notes[0], inbox = graph.folders[0]
        #expect(try evaluate("folder == %@", inbox.id, on: apple))
        #expect(try evaluate("SELF == %@", apple.id, on: apple))
        #expect(try evaluate("SELF IN %@", [graph.notes[1].id, apple.id], on: apple))
        #expect(try !evaluate("folder == %@", ManagedObjectID.temporary(for: inbox.entity), on: apple))
        #expect(try !evaluate("folder > %@", inbox.id, on: apple))
    }

    @Test func anUnknownKeyThrowsNamingTheEntityAndKey() throws {
        let error = #expect(throws: ObjectGraphError.self) { try evaluate("colour == 'red'", on: graph.notes[0]) }
        #expect(error?.code == .invalidFetchRequest)
        #expect(error?.entityName == "Note")
        #expect(error?.key == "colour")
    }

    @Test func likeMatchesWildcardsWithoutExponentialBacktracking() {
        let text = String(repeating: "a", count: 2000) + "b"
        let pattern = String(repeating: "*a", count: 50) + "c"
        #expect(!PredicateStrings.like(text, pattern, options: []))
        #expect(PredicateStrings.like("abcabd", "*ab?", options: []))
        #expect(PredicateStrings.like("", "*", options: []))
        #expect(!PredicateStrings.like("", "?", options: []))
        #expect(PredicateStrings.like("a\\", "a\\", options: []))
        #expect(PredicateStrings.like("x*y", "x\\*y", options: []))
        #expect(!PredicateStrings.like("xzy", "x\\*y", options: []))
    }

    @Test func containsIsLinear() {
        let text = String(repeating: "a", count: 100_000) + "b"
        let needle = String(repeating: "a", count: 5000) + "b"
        #expect(PredicateStrings.contains(text, needle, options: []))
        #expect(!PredicateStrings.contains(text, needle + "a", options: []))
        #expect(PredicateStrings.contains("abc", "", options: []))
    }

    @Test func thePrefixSuccessorIsTheLeastStringAfterEveryExtension() {
        #expect(SQLPredicateCompiler.prefixSuccessor("abc") == "abd")
        #expect(SQLPredicateCompiler.prefixSuccessor("a\u{D7FF}") == "a\u{E000}")
        #expect(SQLPredicateCompiler.prefixSuccessor("a\u{10FFFF}") == "b")
        #expect(SQLPredicateCompiler.prefixSuccessor("a\u{10FFFF}\u{10FFFF}") == "b")
        #expect(SQLPredicateCompiler.prefixSuccessor("\u{10FFFF}") == nil)
        #expect(SQLPredicateCompiler.prefixSuccessor("é") == "ê")
        #expect(SQLPredicateCompiler.prefixSuccessor("\u{7F}") == "\u{80}")
    }
}
