import Foundation
import Testing
import ObjectGraph
@testable import ObjectGraphCore

/// Every predicate here is run as SQL against SQLite and evaluated in memory over the same graph;
/// the two must select the same objects (and, where stated, the expected ones).
@Suite("SQLite and in-memory evaluation agree")
struct PredicateSQLAgreementTests {
    static let d1000 = PredicateTestGraph.date(1000)
    static let d2000 = PredicateTestGraph.date(2000)
    static let d3000 = PredicateTestGraph.date(3000)
    static let allNotes = Array(1...16).map(Int64.init)
    static func notes(except excluded: Int64...) -> [Int64] { allNotes.filter { !excluded.contains($0) } }

    static let comparisons: [PredicateCase] = [
        PredicateCase("Note", "title == 'apple'", [], [1, 16]),
        PredicateCase("Note", "title = %@", ["Apple"], [2]),
        PredicateCase("Note", "title ==[c] 'APPLE'", [], [1, 2, 16]),
        PredicateCase("Note", "title ==[cd] 'apple pie'", [], [4]),
        PredicateCase("Note", "title ==[d] 'apple pie'", [], []),
        PredicateCase("Note", "title != 'apple'", [], notes(except: 1, 16)),
        PredicateCase("Note", "title <> 'apple'", [], notes(except: 1, 16)),
        PredicateCase("Note", "title == nil", [], [7, 12]),
        PredicateCase("Note", "nil == title", [], [7, 12]),
        PredicateCase("Note", "title != nil", [], notes(except: 7, 12)),
        PredicateCase("Note", "title == %@", [Optional<String>.none as any Sendable], [7, 12]),
        PredicateCase("Note", "rank == 2", [], [2]),
        PredicateCase("Note", "rank == 2.0", [], [2]),
        PredicateCase("Note", "rank == %@", [Decimal(2)], [2]),
        PredicateCase("Note", "rank == %@", [true], [1, 16]),
        PredicateCase("Note", "rank != 2", [], notes(except: 2)),
        PredicateCase("Note", "rank < 3", [], [1, 2, 6, 16]),
        PredicateCase("Note", "rank <= 3", [], [1, 2, 3, 6, 16]),
        PredicateCase("Note", "rank =< 2", [], [1, 2, 6, 16]),
        PredicateCase("Note", "rank > 8", [], [9, 13, 14, 15]),
        PredicateCase("Note", "rank >= 8", [], [8, 9, 13, 14, 15]),
        PredicateCase("Note", "rank => 13", [], [13, 14, 15]),
        PredicateCase("Note", "3 < rank", [], [5, 7, 8, 9, 13, 14, 15]),
        PredicateCase("Note", "rank < nil", [], []),
        PredicateCase("Note", "rank >= nil", [], []),
        PredicateCase("Note", "rank > -1.5", [], [1, 2, 3, 5, 6, 7, 8, 9, 13, 14, 15, 16]),
        PredicateCase("Note", "rank BETWEEN {2, 5}", [], [2, 3, 5]),
        PredicateCase("Note", "rank BETWEEN %@", [[2, 5]], [2, 3, 5]),
        PredicateCase("Note", "score BETWEEN {-1, 1.5}", [], [1, 4, 6, 16]),
        PredicateCase("Note", "rank IN {1, 3, 99}", [], [1, 3, 16]),
        PredicateCase("Note", "rank IN %@", [[1, 3]], [1, 3, 16]),
        PredicateCase("Note", "rank IN %@", [Set([5, 7])], [5, 7]),
        PredicateCase("Note", "rank IN {}", [], []),
        PredicateCase("Note", "title IN {'apple', 'cherry', nil}", [], [1, 5, 16]),
        PredicateCase("Note", "title IN[c] {'APPLE'}", [], [1, 2, 16]),
        PredicateCase("Note", "NOT rank IN {1, 3}", [], notes(except: 1, 3, 16)),
        PredicateCase("Note", "title IN 'an apple and a cherry'", [], [1, 5, 6, 16]),
        PredicateCase("Note", "'apple pie' CONTAINS title", [], [1, 6, 16]),
        PredicateCase("Note", "price > 5", [], [1, 5]),
        PredicateCase("Note", "price == 10.25", [], [1]),
        PredicateCase("Note", "price < %@", [Decimal(1)], [4, 6]),
        PredicateCase("Note", "price BETWEEN {0, 3}", [], [2, 4, 6]),
        PredicateCase("Note", "price == nil", [], [3, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]),
        PredicateCase("Note", "score > 1", [], [1, 3, 5, 16]),
        PredicateCase("Note", "score > rank", [], [1, 16]),
        PredicateCase("Note", "rank == score", [], [5, 6, 10, 11, 12]),
        PredicateCase("Note", "rank != score", []),
        PredicateCase("Note", "title == body", [], [6, 7, 10]),
        PredicateCase("Note", "title ==[d] body", [], [6, 7, 10, 11]),
        PredicateCase("Note", "title != body", []),
        PredicateCase("Note", "title == rank", [], [12]),
        PredicateCase("Note", "title != rank", [], notes(except: 12)),
        PredicateCase("Note", "created > %@", [d1000], [2, 4, 5]),
        PredicateCase("Note", "created == %@", [d2000], [2]),
        PredicateCase("Note", "created BETWEEN %@", [[d2000, d3000]], [2, 4]),
        PredicateCase("Note", "created > 2500", [], [4, 5]),
        PredicateCase("Note", "flag == YES", [], [1, 4]),
        PredicateCase("Note", "flag == true", [], [1, 4]),
        PredicateCase("Note", "flag == 1", [], [1, 4]),
        PredicateCase("Note", "flag == NO", [], [2, 5, 6]),
        PredicateCase("Note", "flag != TRUE", [], notes(except: 1, 4)),
        PredicateCase("Note", "uuid == %@", [PredicateTestGraph.uuid1], [1]),
        PredicateCase("Note", "uuid > %@", [PredicateTestGraph.uuid1], [2]),
        PredicateCase("Note", "uuid != %@", [PredicateTestGraph.uuid1], notes(except: 1)),
        PredicateCase("Note", "link == %@", [URL(string: "https://b.example")!], [2]),
        PredicateCase("Note", "blob == %@", [Data([1, 2, 3])], [1]),
        PredicateCase("Note", "blob < %@", [Data([1, 2, 3])], [2]),
        PredicateCase("Note", "title == 5", [], []),
        PredicateCase("Note", "title != 5", [], allNotes),
        PredicateCase("Note", "rank == 'x'", [], []),
        PredicateCase("Note", "rank < 'x'", [], []),
        PredicateCase("Note", "title == %@", [PredicateTestGraph.uuid1], []),
        PredicateCase("Note", "1 == 1", [], allNotes),
        PredicateCase("Note", "nil == nil", [], allNotes),
        PredicateCase("Note", "1 > 2", [], []),
    ]

    static let strings: [PredicateCase] = [
        PredicateCase("Note", "title BEGINSWITH 'a'", [], [1, 13, 14, 16]),
        PredicateCase("Note", "title BEGINSWITH 'A'", [], [2]),
        PredicateCase("Note", "title BEGINSWITH[c] 'a'", [], [1, 2, 13, 14, 16]),
        PredicateCase("Note", "title BEGINSWITH[cd] 'a'", [], [1, 2, 4, 13, 14, 16]),
        PredicateCase("Note", "title BEGINSWITH[d] 'A'", [], [2, 4]),
        PredicateCase("Note", "title BEGINSWITH ''", [], notes(except: 7, 12)),
        PredicateCase("Note", "title BEGINSWITH nil", [], []),
        PredicateCase("Note", "title BEGINSWITH %@", ["a\u{D7FF}"], [13]),
        PredicateCase("Note", "title BEGINSWITH %@", ["zz\u{10FFFF}"], [15]),
        PredicateCase("Note", "title BEGINSWITH %@", ["z\u{10FFFF}"], []),
        PredicateCase("Note", "title BEGINSWITH 'e'", [], [10]),
        PredicateCase("Note", "title BEGINSWITH[d] 'e'", [], [10, 11]),
        PredicateCase("Note", "title BEGINSWITH '日本'", [], [8]),
        PredicateCase("Note", "title BEGINSWITH body", [], [6, 10]),
        PredicateCase("Note", "title ENDSWITH 'e'", [], [1, 2, 4, 9, 16]),
        PredicateCase("Note", "title ENDSWITH[c] 'E'", [], [1, 2, 4, 9, 16]),
        PredicateCase("Note", "title ENDSWITH '%'", [], [3]),
        PredicateCase("Note", "title CONTAINS '50%'", [], [3]),
        PredicateCase("Note", "title CONTAINS '5_%'", [], []),
        PredicateCase("Note", "body CONTAINS '_'", [], [3, 12]),
        PredicateCase("Note", "body CONTAINS '%'", [], [3, 12]),
        PredicateCase("Note", "title CONTAINS 'pp'", [], [1, 2, 4, 16]),
        PredicateCase("Note", "title CONTAINS[c] 'PP'", [], [1, 2, 4, 16]),
        PredicateCase("Note", "title CONTAINS[cd] 'APP'", [], [1, 2, 4, 16]),
        PredicateCase("Note", "body CONTAINS[d] 'creme'", [], []),
        PredicateCase("Note", "body CONTAINS[d] 'Creme'", [], [1]),
        PredicateCase("Note", "body CONTAINS[cd] 'CREME BRULEE'", [], [1]),
        PredicateCase("Note", "body CONTAINS '👍'", [], [8]),
        PredicateCase("Note", "title CONTAINS[c] 'STRASSE'", []),
        PredicateCase("Note", "title CONTAINS ''", [], notes(except: 7, 12)),
        PredicateCase("Note", "title LIKE 'a*'", [], [1, 13, 14, 16]),
        PredicateCase("Note", "title LIKE '?pple'", [], [1, 2, 16]),
        PredicateCase("Note", "title LIKE[c] '?PPLE'", [], [1, 2, 16]),
        PredicateCase("Note", "title LIKE[cd] 'a*e'", [], [1, 2, 4, 16]),
        PredicateCase("Note", "title LIKE '*50%'", [], [3]),
        PredicateCase("Note", "title LIKE '%'", [], []),
        PredicateCase("Note", "title LIKE '*'", [], notes(except: 7, 12)),
        PredicateCase("Note", "title LIKE ''", [], [6]),
        PredicateCase("Note", "title LIKE '?clair'", [], [11]),
        PredicateCase("Note", "title LIKE '??clair'", [], [10]),
        PredicateCase("Note", "body LIKE 'a\\\\*b\\\\?c'", [], [5]),
        PredicateCase("Note", "body LIKE %@", ["a\\*b\\?c"], [5]),
        PredicateCase("Note", "body LIKE 'a\\\\*b'", [], []),
        PredicateCase("Note", "title MATCHES 'a.*'", [], [1, 13, 14, 16]),
        PredicateCase("Note", "title MATCHES '[a-c].*'", [], [1, 3, 5, 13, 14, 16]),
        PredicateCase("Note", "title MATCHES[c] 'APPLE'", [], [1, 2, 16]),
        PredicateCase("Note", "title MATCHES 'appl'", [], []),
        PredicateCase("Note", "title MATCHES 'a|apple'", [], [1, 16]),
        PredicateCase("Note", "title MATCHES[cd] 'a.*'", [], [1, 2, 4, 13, 14, 16]),
        PredicateCase("Note", "body MATCHES '.*\\\\d+%.*'", [], [3]),
        PredicateCase("Note", "rank BEGINSWITH '1'", [], []),
        PredicateCase("Note", "rank CONTAINS '1'", [], []),
        PredicateCase("Note", "title CONTAINS 1", [], []),
    ]

    static let relationships: [PredicateCase] = [
        PredicateCase("Note", "folder.name == 'Inbox'", [], [1, 2, 7, 16]),
        PredicateCase("Note", "folder.name != 'Inbox'", [], notes(except: 1, 2, 7, 16)),
        PredicateCase("Note", "folder.name == nil", [], [4, 6, 9, 10, 11, 12, 13, 14, 15]),
        PredicateCase("Note", "folder == nil", [], [4, 9, 10, 11, 12, 13, 14, 15]),
        PredicateCase("Note", "folder != nil", [], [1, 2, 3, 5, 6, 7, 8, 16]),
        PredicateCase("Note", "folder.rank > 1", [], [3, 5, 8]),
        PredicateCase("Note", "folder.name BEGINSWITH[c] 'in' AND folder.rank == 1", [], [1, 2, 7, 16]),
        PredicateCase("Note", "folder.name == title", [], [12]),
        PredicateCase("Note", "ANY tags.name == 'red'", [], [1, 2, 8]),
        PredicateCase("Note", "SOME tags.name == 'red'", [], [1, 2, 8]),
        PredicateCase("Note", "any tags.name in {'red', 'blue'}", [], [1, 2, 4, 5, 8]),
        PredicateCase("Note", "ALL tags.name == 'red'", [], notes(except: 1, 4, 5)),
        PredicateCase("Note", "NONE tags.name == 'red'", [], notes(except: 1, 2, 8)),
        PredicateCase("Note", "NOT ANY tags.name == 'red'", [], notes(except: 1, 2, 8)),
        PredicateCase("Note", "ALL tags.name BEGINSWITH 'g' AND tags.@count > 0", []),
        PredicateCase("Note", "ALL tags.name != nil", [], allNotes),
        PredicateCase("Note", "ANY tags.name ==[c] 'RED'", [], [1, 2, 8]),
        PredicateCase("Note", "tags.@count == 0", [], [3, 6, 7, 9, 10, 11, 12, 13, 14, 15, 16]),
        PredicateCase("Note", "tags.@count > 1", [], [1, 4]),
        PredicateCase("Note", "tags.@count >= 1 AND rank > 1", [], [2, 5, 8]),
        PredicateCase("Note", "tags.@count BETWEEN {1, 1}", [], [2, 5, 8]),
        PredicateCase("Note", "'red' IN tags.name", [], [1, 2, 8]),
        PredicateCase("Note", "tags.name CONTAINS 'red'", [], [1, 2, 8]),
        PredicateCase("Note", "tags.name CONTAINS[c] 'RED'", [], [1, 2, 8]),
        PredicateCase("Note", "tags.name CONTAINS nil", [], []),
        PredicateCase("Note", "title IN tags.name", []),
        PredicateCase("Note", "folder.notes.@count > 3", [], [1, 2, 7, 16]),
        PredicateCase("Note", "ANY folder.notes.title == 'cherry'", [], [3, 5, 8]),
        PredicateCase("Note", "ALL folder.notes.rank > 2", []),
        PredicateCase("Folder", "notes.@count == 0", [], [4]),
        PredicateCase("Folder", "ANY notes.rank > 5", [], [1, 2]),
        PredicateCase("Folder", "ALL notes.rank >= 1", [], [1, 2, 4]),
        PredicateCase("Folder", "ALL notes.score > 0", [], [4]),
        PredicateCase("Folder", "NONE notes.title BEGINSWITH 'a'", [], [2, 3, 4]),
        PredicateCase("Folder", "ANY notes.folder.name == 'Inbox'", [], [1]),
        PredicateCase("Folder", "ANY notes.rank > rank", [], [1, 2]),
        PredicateCase("Folder", "ALL notes.title != nil", [], [2, 3, 4]),
        PredicateCase("Tag", "ANY notes.folder.name == 'Work'", [], [1, 3]),
        PredicateCase("Tag", "notes.@count == 2", [], [2, 3]),
        PredicateCase("Tag", "ALL notes.flag == YES", [], [2, 4]),
    ]

    static let compounds: [PredicateCase] = [
        PredicateCase("Note", "title BEGINSWITH 'a' OR rank > 8", [], [1, 9, 13, 14, 15, 16]),
        PredicateCase("Note", "title BEGINSWITH 'a' && rank > 1", [], [13, 14]),
        PredicateCase("Note", "title BEGINSWITH 'a' || rank > 8", [], [1, 9, 13, 14, 15, 16]),
        PredicateCase("Note", "NOT (rank > 3)", [], [1, 2, 3, 4, 6, 10, 11, 12, 16]),
        PredicateCase("Note", "NOT title CONTAINS 'p'", [], notes(except: 1, 2, 4, 16)),
        PredicateCase("Note", "!(title == nil) && rank < 5", [], [1, 2, 3, 6, 16]),
        PredicateCase("Note", "NOT (rank > 3 OR title == nil)", [], [1, 2, 3, 4, 6, 10, 11, 16]),
        PredicateCase("Note", "NOT NOT rank > 3", [], [5, 7, 8, 9, 13, 14, 15]),
        PredicateCase("Note", "NOT (title MATCHES 'a.*' AND rank < 14)", [], notes(except: 1, 13, 16)),
        PredicateCase("Note", "NOT price > 5", [], notes(except: 1, 5)),
        PredicateCase("Note", "NOT folder.name == 'Inbox'", [], notes(except: 1, 2, 7, 16)),
        PredicateCase("Note", "NOT uuid > %@", [PredicateTestGraph.uuid1], notes(except: 2)),
        PredicateCase("Note", "TRUEPREDICATE", [], allNotes),
        PredicateCase("Note", "FALSEPREDICATE", [], []),
        PredicateCase("Note", "NOT TRUEPREDICATE", [], []),
        PredicateCase("Note", "(rank > 1 AND rank < 4) OR (title ENDSWITH 'e' AND NOT flag == YES)", [], [2, 3, 9, 16]),
    ]

    @Test("comparison operators, nil and values of every type", arguments: comparisons)
    func comparisonsAgree(_ testCase: PredicateCase) throws {
        try check(testCase)
    }

    @Test("string operators and their [c] and [d] options", arguments: strings)
    func stringOperatorsAgree(_ testCase: PredicateCase) throws {
        try check(testCase)
    }

    @Test("key paths through to-one and to-many relationships", arguments: relationships)
    func relationshipsAgree(_ testCase: PredicateCase) throws {
        try check(testCase)
    }

    @Test("AND, OR and NOT", arguments: compounds)
    func compoundsAgree(_ testCase: PredicateCase) throws {
        try check(testCase)
    }

    private func check(_ testCase: PredicateCase, graph: PredicateTestGraph? = nil) throws {
        try testCase.expectSameAnswers(in: graph ?? PredicateTestGraph())
    }

    @Test func objectConstantsCompareByObjectID() throws {
        let graph = try PredicateTestGraph()
        let inbox = graph.folders[0], note2 = graph.notes[1], red = graph.tags[0]
        let temporary = ManagedObjectID.temporary(for: graph.model.entitiesByName["Folder"]!)
        let cases = [
            PredicateCase("Note", "folder == %@", [inbox.id], [1, 2, 7, 16]),
            PredicateCase("Note", "folder != %@", [inbox.id], Self.notes(except: 1, 2, 7, 16)),
            PredicateCase("Note", "folder IN %@", [[inbox.id, graph.folders[2].id]], [1, 2, 6, 7, 16]),
            PredicateCase("Note", "folder == %@", [temporary], []),
            PredicateCase("Note", "folder != %@", [temporary], Self.allNotes),
            PredicateCase("Note", "folder == %@", [note2.id], []),
            PredicateCase("Note", "folder < %@", [inbox.id], []),
            PredicateCase("Note", "SELF == %@", [note2.id], [2]),
            PredicateCase("Note", "SELF != %@", [note2.id], Self.notes(except: 2)),
            PredicateCase("Note", "SELF IN %@", [[note2.id, graph.notes[4].id, inbox.id]], [2, 5]),
            PredicateCase("Note", "%@ IN tags", [red.id], [1, 2, 8]),
            PredicateCase("Note", "tags CONTAINS %@", [red.id], [1, 2, 8]),
            PredicateCase("Note", "ANY tags == %@", [red.id], [1, 2, 8]),
            PredicateCase("Note", "NONE tags == %@", [red.id], Self.notes(except: 1, 2, 8)),
            PredicateCase("Note", "ANY tags IN %@", [[red.id, graph.tags[2].id]], [1, 2, 4, 5, 8]),
            PredicateCase("Note", "tags CONTAINS %@", [temporary], []),
            PredicateCase("Folder", "notes CONTAINS %@", [note2.id], [1]),
            PredicateCase("Folder", "%@ IN notes", [graph.notes[2].id], [2]),
            PredicateCase("Folder", "ANY notes == %@", [graph.notes[2].id], [2]),
            PredicateCase("Tag", "ANY notes.folder == %@", [inbox.id], [1, 2]),
        ]
        for testCase in cases { try check(testCase, graph: graph) }
    }

    @Test func unknownKeysAndMisusedToManyKeyPathsFailTheSameWayInBoth() throws {
        let graph = try PredicateTestGraph()
        let cases: [(String, String, String)] = [
            ("Note", "nonsense == 1", "nonsense"),
            ("Note", "folder.nonsense == 1", "nonsense"),
            ("Note", "title.length == 1", "title.length"),
            ("Note", "tags.name == 'red'", "to-many"),
            ("Note", "ANY rank == 1", "ANY"),
            ("Note", "ANY tags.notes.title == 'x'", "more than one to-many"),
            ("Note", "rank.@count == 1", "@count"),
            ("Folder", "ANY notes.tags.@count > 1", "more than one to-many"),
            ("Note", "tags == %@", "to-many"),
            ("Note", "title BEGINSWITH tags.name", "needs IN"),
            ("Note", "rank == {1, 2}", "IN or BETWEEN"),
            ("Note", "{1, 2} == rank", "CONTAINS"),
        ]
        for (entity, format, fragment) in cases {
            let predicate = FetchPredicate(format: format, argumentArray: format.contains("%@") ? [graph.tags[0].id] : [])
            let memoryError = #expect(throws: ObjectGraphError.self) { try graph.memoryKeys(entity, predicate) }
            let sqlError = #expect(throws: ObjectGraphError.self) { try graph.sqlKeys(entity, predicate) }
            #expect(memoryError?.code == .invalidFetchRequest, "\(format)")
            #expect(sqlError?.code == .invalidFetchRequest, "\(format)")
            #expect(memoryError?.message.contains(fragment) == true, "\(format): \(memoryError?.message ?? "")")
            #expect(sqlError?.message == memoryError?.message, "\(format)")
        }
    }

    @Test func anUnknownKeyErrorNamesTheEntityAndTheKey() throws {
        let graph = try PredicateTestGraph()
        let error = #expect(throws: ObjectGraphError.self) {
            try graph.sqlKeys("Note", FetchPredicate(format: "folder.colour == 'red'"))
        }
        #expect(error?.entityName == "Folder")
        #expect(error?.key == "colour")
        #expect(error?.message.contains("'Folder'") == true)
        #expect(error?.message.contains("folder.colour") == true)
    }

    @Test func aTransientAttributeCannotBeFetchedFromSQLite() throws {
        let graph = try PredicateTestGraph()
        let error = #expect(throws: ObjectGraphError.self) {
            try graph.sqlKeys("Note", FetchPredicate(format: "secret == 'x'"))
        }
        #expect(error?.code == .invalidFetchRequest)
        #expect(error?.key == "secret")
        #expect(try graph.memoryKeys("Note", FetchPredicate(format: "secret == nil")) == Self.allNotes)
    }

    @Test func anInvalidRegularExpressionIsReportedBeforeSQLiteRuns() throws {
        let graph = try PredicateTestGraph()
        let predicate = FetchPredicate(format: "title MATCHES '(unclosed'")
        let sqlError = #expect(throws: ObjectGraphError.self) { try graph.sqlKeys("Note", predicate) }
        let memoryError = #expect(throws: ObjectGraphError.self) { try graph.memoryKeys("Note", predicate) }
        #expect(sqlError?.code == .invalidFetchRequest)
        #expect(memoryError?.code == .invalidFetchRequest)
    }

    @Test func aMalformedPredicateThrowsItsSyntaxErrorFromAFetch() throws {
        let graph = try PredicateTestGraph()
        let predicate = FetchPredicate(format: "rank >")
        #expect(throws: ObjectGraphError.predicateSyntax) { try graph.sqlKeys("Note", predicate) }
        #expect(throws: ObjectGraphError.predicateSyntax) { try graph.memoryKeys("Note", predicate) }
    }
}
