import Foundation
import Testing
import ObjectGraph
@testable import ObjectGraphCore

/// Arithmetic and `SUBQUERY(…).@count` in the format language: parsed, written back, run as SQL
/// against SQLite and evaluated in memory over the same graph (``PredicateTestGraph``), which must
/// select the same objects — the expected ones.
@Suite("Arithmetic and SUBQUERY")
struct PredicateArithmeticSubqueryTests {
    static let allNotes = Array(1...16).map(Int64.init)
    static let rankedNotes: [Int64] = [1, 2, 3, 5, 6, 7, 8, 9, 13, 14, 15, 16]

    static let arithmetic: [PredicateCase] = [
        PredicateCase("Note", "rank + 1 > 5", [], [5, 7, 8, 9, 13, 14, 15]),
        PredicateCase("Note", "rank * 2 == 10", [], [5]),
        PredicateCase("Note", "rank - 1 == 0", [], [1, 16]),
        // Integer division truncates; a real operand makes it real division.
        PredicateCase("Note", "rank / 2 == 2", [], [5]),
        PredicateCase("Note", "rank / 2.0 == 2.5", [], [5]),
        PredicateCase("Note", "-rank / 2 == -2", [], [5]),
        PredicateCase("Note", "score / 2 == 0.75", [], [1, 16]),
        PredicateCase("Note", "modulus:by:(rank, 3) == 1", [], [1, 7, 13, 16]),
        PredicateCase("Note", "modulus:by:(-rank, 3) == -1", [], [1, 7, 13, 16]),
        PredicateCase("Note", "modulus:by:(score, 2) == 1", [], [1, 5, 16]),
        // Division and remainder by zero give nil.
        PredicateCase("Note", "rank / 0 == nil", [], allNotes),
        PredicateCase("Note", "score / 0 == nil", [], allNotes),
        PredicateCase("Note", "modulus:by:(rank, 0) == nil", [], allNotes),
        PredicateCase("Note", "rank / 0 > -1", [], []),
        // nil operands give nil.
        PredicateCase("Note", "rank + 1 == nil", [], [4, 10, 11, 12]),
        PredicateCase("Note", "rank + nil == nil", [], allNotes),
        PredicateCase("Note", "-rank < -10", [], [13, 14, 15]),
        PredicateCase("Note", "rank - -3 == 4", [], [1, 16]),
        PredicateCase("Note", "(rank + 1) * 2 == 6", [], [2]),
        PredicateCase("Note", "rank + 1 * 2 == 3", [], [1, 16]),
        PredicateCase("Note", "rank - 1 - 1 == 0", [], [2]),
        PredicateCase("Note", "rank - (1 - 1) == 0", [], [6]),
        PredicateCase("Note", "rank * 2 > rank + 6", [], [7, 8, 9, 13, 14, 15]),
        PredicateCase("Note", "rank + serial == 2 * serial", [], [1, 2, 3, 5, 7, 8, 9, 13, 14, 15]),
        PredicateCase("Note", "price * 2 > 10", [], [1, 5]),
        PredicateCase("Note", "score + rank > 6", [], [5]),
        PredicateCase("Note", "created + 500 > 3400", [], [4, 5]),
        PredicateCase("Note", "created - %@ > 0", [PredicateTestGraph.date(2000)], [4, 5]),
        PredicateCase("Note", "flag + 1 == 2", [], [1, 4]),
        PredicateCase("Note", "tags.@count * 10 >= 20", [], [1, 4]),
        PredicateCase("Note", "folder.rank * 10 == 20", [], [3, 5, 8]),
        PredicateCase("Note", "rank + 1.5 == 2.5", [], [1, 16]),
        PredicateCase("Note", "rank + %d > %d", [10, 22], [13, 14, 15]),
        // Integer overflow gives a real, as in SQLite, rather than wrapping around.
        PredicateCase("Note", "rank + 9223372036854775807 > 0", [], rankedNotes),
        PredicateCase("Note", "rank * 4611686018427387904 < 0", [], []),
        PredicateCase("Note", "(rank - 1) * -9223372036854775808 > 0", [], [6]),
        PredicateCase("Note", "-9223372036854775808 / -1 > 0", [], allNotes),
        PredicateCase("Note", "ANY tags.name == 'red' AND rank * rank > 3", [], [2, 8]),
        PredicateCase("Folder", "ANY notes.rank > rank * 3", [], [1, 2]),
        PredicateCase("Folder", "notes.@count - 1 == rank", [], [2]),
    ]

    static let subqueries: [PredicateCase] = [
        PredicateCase("Folder", "SUBQUERY(notes, $n, $n.rank > 2).@count >= 1", [], [1, 2]),
        PredicateCase("Folder", "SUBQUERY(notes, $n, $n.rank > 2).@count == 3", [], [2]),
        PredicateCase("Folder", "SUBQUERY(notes, $n, $n.rank > 2).@count == 0", [], [3, 4]),
        // One element must satisfy both, unlike two ANYs.
        PredicateCase("Folder", "SUBQUERY(notes, $n, $n.rank > 5 AND $n.title BEGINSWITH 'a').@count > 0", [], []),
        PredicateCase("Folder", "ANY notes.rank > 5 AND ANY notes.title BEGINSWITH 'a'", [], [1]),
        PredicateCase("Folder", "SUBQUERY(notes, $n, $n.rank > 1 AND $n.title BEGINSWITH[c] 'a').@count > 0", [], [1]),
        PredicateCase("Note", "SUBQUERY(tags, $t, $t.name == 'red' OR $t.name == 'blue').@count == 1", [], [1, 2, 4, 5, 8]),
        PredicateCase("Note", "NOT (SUBQUERY(tags, $t, $t.name == 'red').@count > 0)", [], [3, 4, 5, 6, 7, 9, 10, 11, 12, 13, 14, 15, 16]),
        // Plain key paths inside still read the evaluated object.
        PredicateCase("Folder", "SUBQUERY(notes, $n, $n.rank > rank).@count > 0", [], [1, 2]),
        PredicateCase("Note", "SUBQUERY(folder.notes, $n, $n != SELF AND $n.rank == rank).@count > 0", [], [1, 16]),
        PredicateCase("Note", "SUBQUERY(folder.notes, $n, $n.rank > 6).@count > 0", [], [1, 2, 3, 5, 7, 8, 16]),
        PredicateCase("Folder", "SUBQUERY(notes, $n, SUBQUERY($n.tags, $t, $t.name == 'red').@count > 0).@count >= 2", [], [1]),
        PredicateCase("Folder", "SUBQUERY(notes, $n, $n.tags.@count >= 2).@count > 0", [], [1]),
        PredicateCase("Folder", "SUBQUERY(notes, $n, ANY $n.tags.name == 'blue').@count > 0", [], [2]),
        PredicateCase("Folder", "SUBQUERY(notes, $n, $n.rank * 2 >= 10).@count == 2", [], [2]),
        PredicateCase("Tag", "SUBQUERY(notes, $n, $n.folder.name == 'Inbox' AND $n.rank == 2).@count == 1", [], [1]),
        PredicateCase("Tag", "SUBQUERY(notes, $n, $n.folder == nil).@count > 0", [], [2, 3]),
        PredicateCase("Tag", "SUBQUERY(notes, $n, $n.flag == YES).@count * 2 > notes.@count", [], [2]),
        PredicateCase("Note", "SUBQUERY(tags, $t, SUBQUERY($t.notes, $n, $n.rank > 7).@count > 0).@count > 0", [], [1, 2, 8]),
        // A variable may shadow an outer one of the same name.
        PredicateCase("Note", "SUBQUERY(tags, $x, SUBQUERY($x.notes, $x, $x.rank == 8).@count > 0).@count > 0", [], [1, 2, 8]),
    ]

    @Test("arithmetic", arguments: arithmetic)
    func arithmeticAgrees(_ testCase: PredicateCase) throws {
        try check(testCase)
    }

    @Test("SUBQUERY", arguments: subqueries)
    func subqueriesAgree(_ testCase: PredicateCase) throws {
        try check(testCase)
    }

    private func check(_ testCase: PredicateCase) throws {
        try testCase.expectSameAnswers(in: PredicateTestGraph())
        // What predicateFormat writes parses back to the same predicate.
        #expect(FetchPredicate(format: testCase.predicate.predicateFormat) == testCase.predicate, "\(testCase.predicate.predicateFormat)")
    }

    @Test func operandsThatAreNotNumbersFailTheSameWayInBoth() throws {
        let graph = try PredicateTestGraph()
        let cases: [(String, String, String)] = [
            ("Note", "title + 1 > 0", "'title' of entity 'Note', a string attribute,"),
            ("Note", "folder * 2 > 0", "'folder' of entity 'Note', a relationship,"),
            ("Note", "tags.rank + 1 > 0", "no attribute or relationship named 'rank'"),
            ("Note", "tags.name + 1 > 0", "a to-many key path"),
            ("Note", "rank + 'a' > 0", "the value \"a\""),
            ("Note", "uuid - 1 > 0", "a uuid attribute"),
            ("Note", "rank + {1, 2} > 0", "the list {1, 2}"),
            ("Note", "SUBQUERY(title, $x, $x == 1).@count > 0", "ending with a to-many relationship, not 'title'"),
            ("Note", "SUBQUERY(folder, $x, $x.rank == 1).@count > 0", "not 'folder'"),
            ("Folder", "SUBQUERY(notes, $n, $n.title * 2 > 1).@count > 0", "'title' of entity 'Note'"),
        ]
        for (entity, format, fragment) in cases {
            let predicate = FetchPredicate(format: format)
            let memoryError = #expect(throws: ObjectGraphError.self, "\(format)") { try graph.memoryKeys(entity, predicate) }
            let sqlError = #expect(throws: ObjectGraphError.self, "\(format)") { try graph.sqlKeys(entity, predicate) }
            #expect(memoryError?.code == .invalidFetchRequest, "\(format)")
            #expect(memoryError?.message.contains(fragment) == true, "\(format): \(memoryError?.message ?? "")")
            #expect(sqlError?.message == memoryError?.message, "\(format)")
        }
    }

    @Test func aVariableOutsideItsSubqueryIsRefusedByBoth() throws {
        // The parser refuses it; a node built by hand (as a translation could) is refused by both paths.
        let graph = try PredicateTestGraph()
        let node = PredicateNode.comparison(PredicateComparison(
            modifier: .direct, lhs: .variable("n", ["rank"]), op: .equalTo, options: [], rhs: .constant(.int(1))))
        let predicate = FetchPredicate(node: node)
        let memoryError = #expect(throws: ObjectGraphError.self) { try graph.memoryKeys("Note", predicate) }
        let sqlError = #expect(throws: ObjectGraphError.self) { try graph.sqlKeys("Note", predicate) }
        #expect(memoryError?.message.contains("'$n' is not defined") == true)
        #expect(sqlError?.message == memoryError?.message)
    }

    @Test(arguments: [
        ("rank+1>5", "rank + 1 > 5"),
        ("rank - 1 - 1 == 0", "rank - 1 - 1 == 0"),
        ("rank - (1 - 1) == 0", "rank - (1 - 1) == 0"),
        ("(rank + 1) * 2 == 6", "(rank + 1) * 2 == 6"),
        ("rank * (2 / score) == 6", "rank * (2 / score) == 6"),
        ("rank * 2 / score == 6", "rank * 2 / score == 6"),
        ("-rank < -3", "0 - rank < -3"),
        ("+3 < rank", "3 < rank"),
        ("rank > -1.5e3", "rank > -1500.0"),
        ("modulus:by:(rank * 2, 3 + 1) == 1", "modulus:by:(rank * 2, 3 + 1) == 1"),
        ("((rank > 1))", "rank > 1"),
        ("(rank) > 1", "rank > 1"),
        ("(rank > 1) AND ((rank + 1) > 2)", "rank > 1 AND rank + 1 > 2"),
        ("subquery(tags, $t, $t.name == 'a' and $t == %@).@COUNT > 0", "SUBQUERY(tags, $t, $t.name == \"a\" AND $t == nil).@count > 0"),
        ("SUBQUERY(tags, $t, TRUEPREDICATE).@count == tags.@count", "SUBQUERY(tags, $t, TRUEPREDICATE).@count == tags.@count"),
    ])
    func formatsParseAndAreWrittenBack(written: String, canonical: String) throws {
        let predicate = FetchPredicate(format: written, argumentArray: written.contains("%@") ? [Optional<Int>.none as any Sendable] : [])
        try predicate.validate()
        #expect(predicate.predicateFormat == canonical)
        #expect(FetchPredicate(format: canonical) == predicate)
    }

    @Test func arithmeticBindsTighterThanComparisonAndProductsTighterThanSums() throws {
        let predicate = FetchPredicate(format: "rank + 2 * 3 - 1 > 4 / 2")
        let expected = PredicateNode.comparison(PredicateComparison(
            modifier: .direct,
            lhs: .arithmetic(.subtract, .arithmetic(.add, .keyPath(["rank"]), .arithmetic(.multiply, .constant(.int(2)), .constant(.int(3)))), .constant(.int(1))),
            op: .greaterThan, options: [],
            rhs: .arithmetic(.divide, .constant(.int(4)), .constant(.int(2)))))
        #expect(predicate.node == expected)
    }

    @Test func sqliteAndMemoryComputeTheSameValues() throws {
        // The in-memory operators against SQLite's own, value by value, including the edges.
        let graph = try PredicateTestGraph()
        let values: [Value] = [
            .int(0), .int(1), .int(-1), .int(7), .int(-7), .int(3), .int(.max), .int(.min), .double(2.5), .double(-0.5),
            .double(0), .double(1e30), .bool(true), .null,
        ]
        let ops: [(PredicateArithmetic, String)] = [(.add, "+"), (.subtract, "-"), (.multiply, "*"), (.divide, "/"), (.remainder, "%")]
        for (op, symbol) in ops {
            for x in values {
                for y in values {
                    let fromSQLite = try graph.database.scalar("SELECT ? \(symbol) ?", [x, y])
                    let fromMemory = op.apply(x, y)
                    let sameKind = switch (fromMemory, fromSQLite) {
                    case (.int, .int), (.double, .double), (.null, .null): true
                    default: false
                    }
                    #expect(
                        sameKind && (fromMemory.isNull || PredicateEvaluator.isEqual(fromMemory, fromSQLite, options: [])),
                        "\(x.predicateLiteral) \(symbol) \(y.predicateLiteral): memory \(fromMemory), SQLite \(fromSQLite)")
                }
            }
        }
    }
}

extension PredicateArithmeticSubqueryTests {
    @Test(arguments: [
        ("SUBQUERY(notes, $n, $n.rank > 2).@count > 0", "EXISTS (SELECT 1 FROM"),
        ("SUBQUERY(notes, $n, $n.rank > 2).@count != 0", "EXISTS (SELECT 1 FROM"),
        ("SUBQUERY(notes, $n, $n.rank > 2).@count >= 1", "EXISTS (SELECT 1 FROM"),
        ("SUBQUERY(notes, $n, $n.rank > 2).@count == 0", "NOT EXISTS (SELECT 1 FROM"),
        ("SUBQUERY(notes, $n, $n.rank > 2).@count < 1", "NOT EXISTS (SELECT 1 FROM"),
        ("SUBQUERY(notes, $n, $n.rank > 2).@count == 3", "(SELECT COUNT(*) FROM"),
        ("SUBQUERY(notes, $n, $n.rank > 2).@count > 1", "(SELECT COUNT(*) FROM"),
    ])
    func aSubqueryTestedForAnyElementStopsAtTheFirst(format: String, sql: String) throws {
        let graph = try PredicateTestGraph()
        let statement = try SQLQueryBuilder.selectStatement(
            schema: graph.schema, entity: graph.model.entitiesByName["Folder"]!, predicate: FetchPredicate(format: format))
        #expect(statement.sql.contains(sql), "\(statement.sql)")
        #expect(statement.sql.contains("NOT EXISTS") == sql.hasPrefix("NOT"), "\(statement.sql)")
        try PredicateCase("Folder", format).expectSameAnswers(in: graph)
    }
}
