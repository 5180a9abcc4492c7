import Foundation
import Testing
import ObjectGraph
@testable import ObjectGraphCore

/// Each input that used to crash or hang ObjectGraph, fed to it in a child process on a 512 KiB
/// thread: the process survives and reports the right error (or the right answer).
@Suite("Hostile inputs, each in a process of its own")
struct HostileInputTests {
    static let expected: [(String, String)] = [
        ("nested-parentheses", "error predicateSyntax"),
        ("many-nots", "error predicateSyntax"),
        ("many-bangs", "error predicateSyntax"),
        ("nested-arithmetic", "error predicateSyntax"),
        ("unary-minuses", "error predicateSyntax"),
        ("unclosed-parentheses", "error predicateSyntax"),
        ("long-chain", "fetched 0"),
        ("many-arguments", "fetched 3"),  // 40,000 OR-ed equalities become one IN list
        ("nested-xml", "error notADatabase"),
        ("nan-date", "error validation"),
    ]

    @Test(arguments: expected.map(\.0))
    func theProcessSurvivesAndReportsTheRightOutcome(_ kind: String) throws {
        let started = Date()
        let result = try runTool(["_hostile", kind])
        let outcome = try #require(Self.expected.first { $0.0 == kind }?.1)
        #expect(result.status == 0, "\(kind): \(result.output.suffix(600))")
        #expect(result.output.contains("survived \(kind): \(outcome)"), "\(kind): \(result.output.suffix(600))")
        // Linear-time parsing: even 10,000 levels are refused at once, not after a minute.
        #expect(Date().timeIntervalSince(started) < 60, "\(kind) took too long")
    }
}
