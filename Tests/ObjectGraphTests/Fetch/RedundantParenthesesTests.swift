import Foundation
import Testing
import ObjectGraph
@testable import ObjectGraphCore

/// Parentheses that only enclose other parentheses add no depth to a predicate: the nesting limit
/// counts the parsed tree, as NSPredicate's parser reads the format.
@Suite("Redundant parentheses are not nesting")
struct RedundantParenthesesTests {
    static func wrapped(_ format: String, in levels: Int) -> String {
        String(repeating: "(", count: levels) + format + String(repeating: ")", count: levels)
    }

    /// `(title == 'x' AND (title == 'x' OR (… rank == 3)))`: each group is an AND or OR inside
    /// another, `levels` deep in all.
    static func alternating(levels: Int) -> String {
        var format = "rank == 3"
        for level in 0..<(levels - 1) { format = "(title == 'x' \(level % 2 == 0 ? "AND" : "OR") \(format))" }
        return format
    }

    @Test("200 parentheses around one comparison parse, and fetch what the comparison selects", arguments: StoreKind.everyStore)
    func twoHundredRedundantParenthesesParseAndFetchTheRightObjects(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        let context = stack.context()
        for rank in 0..<5 { context.insert("Note", ["title": "n\(rank)", "rank": Int64(rank)]) }
        try context.save()
        let predicate = FetchPredicate(format: Self.wrapped("rank > 1", in: 200))
        #expect(predicate.syntaxError == nil, "\(predicate.syntaxError?.message ?? "")")
        #expect(predicate == FetchPredicate(format: "rank > 1"))
        #expect(predicate.node.depth == 1)
        let request = FetchRequest<ManagedObject>(entityName: "Note")
        request.predicate = predicate
        request.sortDescriptors = [FetchSortDescriptor(key: "rank")]
        let ranks = try stack.context("reader").fetch(request).compactMap { $0.value(forKey: "rank") as? Int64 }
        #expect(ranks == [2, 3, 4])
        // Around a compound, and around each of its operands, the same.
        let compound = FetchPredicate(format: Self.wrapped("\(Self.wrapped("rank > 1", in: 50)) AND \(Self.wrapped("title != 'n3'", in: 50))", in: 200))
        request.predicate = compound
        #expect(try stack.context("compound").fetch(request).compactMap { $0.value(forKey: "rank") as? Int64 } == [2, 4])
    }

    @Test func theDepthOfAParenthesizedCompoundIsItsTreesDepth() throws {
        let predicate = FetchPredicate(format: "((rank > 1) AND ((title < 'b')))")
        #expect(predicate.syntaxError == nil)
        #expect(predicate.node.depth == 2)
        #expect(predicate == FetchPredicate(format: "rank > 1 AND title < 'b'"))
        // An OR continuing a parenthesized AND, inside more parentheses: AND inside OR.
        let mixed = FetchPredicate(format: "(((rank > 1 AND rank < 4)) OR ((title == 'x')))")
        #expect(mixed.node.depth == 3)
        #expect(mixed == FetchPredicate(format: "(rank > 1 AND rank < 4) OR title == 'x'"))
    }

    @Test func aPredicateAtTheDepthLimitParsesInsideHundredsOfParentheses() throws {
        let format = Self.wrapped(Self.alternating(levels: PredicateLimits.maximumDepth), in: 300)
        let predicate = try onSmallStack { FetchPredicate(format: format) }
        #expect(predicate.syntaxError == nil, "\(predicate.syntaxError?.message ?? "")")
        #expect(predicate.node.depth == PredicateLimits.maximumDepth)
    }

    @Test(arguments: [
        alternating(levels: PredicateLimits.maximumDepth + 1),
        wrapped(alternating(levels: PredicateLimits.maximumDepth + 1), in: 200),
        String(repeating: "NOT ", count: PredicateLimits.maximumDepth) + "rank == 1",
        wrapped(String(repeating: "NOT (", count: PredicateLimits.maximumDepth) + "rank == 1" + String(repeating: ")", count: PredicateLimits.maximumDepth), in: 100),
    ])
    func twentyFiveLevelsOfRealNestingAreStillRefused(_ format: String) throws {
        let error = try #require(try onSmallStack { FetchPredicate(format: format).syntaxError })
        #expect(error.code == .predicateSyntax)
        #expect(error.message.contains("more than the \(PredicateLimits.maximumDepth) levels allowed"), "\(error.message)")
    }

    @Test func tooManyParenthesesAreRefusedByTheParsersBoundWithoutOverflowingTheStack() throws {
        let allowed = FetchPredicate(format: Self.wrapped("rank > 1", in: PredicateLimits.maximumParentheses))
        #expect(allowed.syntaxError == nil)
        for count in [PredicateLimits.maximumParentheses + 1, 100_000] {
            let error = try #require(try onSmallStack { FetchPredicate(format: Self.wrapped("rank > 1", in: count)).syntaxError })
            #expect(error.code == .predicateSyntax)
            #expect(error.position == PredicateLimits.maximumParentheses, "the parenthesis one too many")
            #expect(error.message.contains("more than the \(PredicateLimits.maximumParentheses) parentheses allowed"), "\(error.message)")
        }
    }

    @Test func anUnclosedParenthesisInARunIsNamed() throws {
        let error = try #require(FetchPredicate(format: "(((rank > 1) AND (title == 'x')").syntaxError)
        #expect(error.code == .predicateSyntax)
        #expect(error.message.contains("expected ')' to close the '(' at offset 1"), "\(error.message)")
    }
}
