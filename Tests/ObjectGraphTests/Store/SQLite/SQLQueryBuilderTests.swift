import Foundation
import Testing
import ObjectGraph
@testable import ObjectGraphCore

@Suite("SQL generated for predicates and sort descriptors")
struct SQLQueryBuilderTests {
    let graph: PredicateTestGraph

    init() throws {
        graph = try PredicateTestGraph()
    }

    private func builder(_ entityName: String = "Note") -> SQLQueryBuilder {
        SQLQueryBuilder(schema: graph.schema, entity: graph.model.entitiesByName[entityName]!)
    }

    @Test func userValuesAreBoundNeverPastedIntoTheSQL() throws {
        var builder = builder()
        let hostile = "'); DROP TABLE \"Note\"; --"
        let sql = try builder.whereClause(for: FetchPredicate(format: "title == %@ OR body CONTAINS[c] %@ OR rank IN {1, 2}", hostile, "x"))
        #expect(!sql.contains("DROP"))
        #expect(!sql.contains("'"))
        #expect(builder.arguments == [.string(hostile), .string("%x%"), .string("x"), .int(1), .int(2)])
        #expect(try graph.sqlKeys("Note", FetchPredicate(format: "title == %@", hostile)) == [])
        #expect(try graph.sqlKeys("Note", FetchPredicate(value: true)).count == 16)
    }

    @Test func toOneKeyPathsBecomeOneLeftJoinPerPath() throws {
        var builder = builder()
        let sql = try builder.whereClause(for: FetchPredicate(format: "folder.name == 'Inbox' AND folder.rank > 0 OR folder == nil"))
        #expect(builder.joins == [#"LEFT JOIN "ZFOLDER" AS t1 ON t1.Z_PK = t0."ZFOLDER""#])
        #expect(sql == #"((t1."ZNAME" = ?) AND (t1."ZRANK" > ?)) OR (t0."ZFOLDER" IS NULL)"#)
        let order = try builder.orderByClause(for: [FetchSortDescriptor(key: "folder.name"), FetchSortDescriptor(key: "rank", ascending: false)])
        #expect(order == #"t1."ZNAME" ASC, t0."ZRANK" DESC"#)
        #expect(builder.joins.count == 1)
        #expect(builder.joinClause() == builder.joins[0])
    }

    @Test func toManyKeyPathsBecomeSubqueries() throws {
        // ANY: the sources of the destinations that pass, in one pass; @count and ALL: correlated.
        var builder = builder()
        let sql = try builder.whereClause(for: FetchPredicate(format: "ANY tags.name == 'red' AND tags.@count > 1"))
        #expect(sql == #"(t0.Z_PK IN (SELECT t1."Z_2NOTES" FROM "Z_2TAGS" AS t1 JOIN "ZTAG" AS t2 ON t2.Z_PK = t1."Z_3TAGS" WHERE (t2."ZNAME" = ?))) AND ((SELECT COUNT(*) FROM "Z_2TAGS" AS t3 WHERE t3."Z_2NOTES" = t0.Z_PK) > ?)"#)
        #expect(builder.arguments == [.string("red"), .int(1)])
        #expect(builder.joins.isEmpty)
        var folders = self.builder("Folder")
        let all = try folders.whereClause(for: FetchPredicate(format: "ALL notes.rank > 1"))
        #expect(all == #"NOT EXISTS (SELECT 1 FROM "ZNOTE" AS t1 WHERE t1."ZFOLDER" = t0.Z_PK AND (t1."ZRANK" > ?) IS NOT 1)"#)
    }

    @Test func caseSensitiveBeginsWithIsAnIndexFriendlyRange() throws {
        var builder = builder()
        let sql = try builder.whereClause(for: FetchPredicate(format: "title BEGINSWITH 'ab'"))
        #expect(sql == #"(t0."ZTITLE" >= ? AND t0."ZTITLE" < ?)"#)
        #expect(builder.arguments == [.string("ab"), .string("ac")])
        try graph.database.execute(#"CREATE INDEX "Note_title" ON "ZNOTE" ("ZTITLE")"#)
        let statement = try SQLQueryBuilder.selectStatement(
            schema: graph.schema, entity: graph.model.entitiesByName["Note"]!,
            predicate: FetchPredicate(format: "title BEGINSWITH 'ab'"), columns: "t0.Z_PK")
        let plan = try graph.database.queryPlan(statement.sql, statement.arguments).joined(separator: "\n")
        #expect(plan.contains("USING INDEX Note_title") || plan.contains("USING COVERING INDEX Note_title"), "\(plan)")
    }

    @Test func otherStringOperatorsCallTheRegisteredFunctions() throws {
        var builder = builder()
        #expect(try builder.whereClause(for: FetchPredicate(format: "title BEGINSWITH[c] 'é'")) == #"og_beginswith(t0."ZTITLE", ?, 1)"#)
        #expect(try builder.whereClause(for: FetchPredicate(format: "title LIKE[cd] 'é*'")) == #"og_like(t0."ZTITLE", ?, 3)"#)
        #expect(try builder.whereClause(for: FetchPredicate(format: "title LIKE[d] 'a*'")) == #"og_like(t0."ZTITLE", ?, 2)"#)
        #expect(try builder.whereClause(for: FetchPredicate(format: "title MATCHES[c] 'a.*'")) == #"og_matches(t0."ZTITLE", ?, 1)"#)
        #expect(try builder.whereClause(for: FetchPredicate(format: "title ==[d] 'a'")) == #"og_fold(t0."ZTITLE", 2) = ?"#)
        #expect(try builder.whereClause(for: FetchPredicate(format: "price > 1")) == #"CAST(t0."ZPRICE" AS REAL) > ?"#)
        #expect(try builder.whereClause(for: FetchPredicate(format: "title != 'a'")) == #"t0."ZTITLE" IS NOT ?"#)
        #expect(try builder.whereClause(for: FetchPredicate(format: "NOT rank > 1")) == #"(t0."ZRANK" > ?) IS NOT 1"#)
    }

    @Test func caseInsensitiveOperatorsWithAnASCIIPatternUseSQLitesLikeForASCIIText() throws {
        var builder = builder()
        let sql = try builder.whereClause(for: FetchPredicate(format: "title BEGINSWITH[c] 'a_b'"))
        #expect(sql == #"(CASE WHEN length(CAST(t0."ZTITLE" AS BLOB)) = length(t0."ZTITLE") THEN t0."ZTITLE" LIKE ? ESCAPE '\' ELSE og_beginswith(t0."ZTITLE", ?, 1) END)"#)
        #expect(builder.arguments == [.string(#"a\_b%"#), .string("a_b")])
        var contains = self.builder()
        _ = try contains.whereClause(for: FetchPredicate(format: "title CONTAINS[cd] 'x*'"))
        #expect(contains.arguments == [.string(#"%x*%"#), .string("x*")])
        var like = self.builder()
        _ = try like.whereClause(for: FetchPredicate(format: "title LIKE[c] 'x*y?'"))
        #expect(like.arguments == [.string("x%y_"), .string("x*y?")])
        // Text that is not ASCII, and the agreement with memory, in the SQLite agreement suite.
        for format in ["title BEGINSWITH[c] 'A'", "title ENDSWITH[c] 'E'", "title CONTAINS[cd] 'P'", "title LIKE[c] '*A*'"] {
            let predicate = FetchPredicate(format: format)
            #expect(try graph.sqlKeys("Note", predicate) == (try graph.memoryKeys("Note", predicate)), "\(format)")
        }
    }

    @Test func equalitiesOfOneKeyJoinedByOrBecomeOneListAndLongListsOneJSONArgument() throws {
        var builder = builder()
        let sql = try builder.whereClause(for: FetchPredicate(format: "rank == 1 OR title == 'a' OR 2 == rank OR rank > 5"))
        #expect(sql == #"(t0."ZRANK" IN (?, ?)) OR (t0."ZTITLE" = ?) OR (t0."ZRANK" > ?)"#)
        #expect(builder.arguments == [.int(1), .int(2), .string("a"), .int(5)])
        var long = self.builder()
        let list = try long.whereClause(for: FetchPredicate(format: "rank IN %@", Array(0..<1000)))
        #expect(list == #"t0."ZRANK" IN (SELECT value FROM json_each(?))"#)
        #expect(long.arguments == [.string("[" + (0..<1000).map(String.init).joined(separator: ",") + "]")])
    }

    @Test func longAndChainsAreGroupedSoSQLiteKeepsThemShallow() throws {
        var builder = builder()
        let format = (0..<40).map { "rank != \($0)" }.joined(separator: " AND ")
        let sql = try builder.whereClause(for: FetchPredicate(format: format))
        #expect(sql.hasPrefix(#"((t0."ZRANK" IS NOT ?) AND (t0."ZRANK" IS NOT ?)"#))
        #expect(sql.components(separatedBy: ") AND ((").count == 3)  // three runs of at most 16
        #expect(builder.arguments.count == 40)
    }

    @Test func aSelectStatementRestrictsOrdersAndLimits() throws {
        let statement = try SQLQueryBuilder.selectStatement(
            schema: graph.schema, entity: graph.model.entitiesByName["Note"]!, predicate: FetchPredicate(format: "rank > 1"),
            sortDescriptors: [FetchSortDescriptor(key: "rank")], columns: "t0.Z_PK", limit: 3, offset: 2)
        #expect(try graph.database.integers(statement.sql, statement.arguments) == [5, 7, 8])
    }

    // MARK: Sorting

    private func sqlOrder(_ entity: String, _ descriptors: [FetchSortDescriptor]) throws -> [Int64] {
        try graph.database.fetchPrimaryKeys(entity, predicate: nil, sortDescriptors: descriptors)
    }

    private func memoryOrder(_ entity: String, _ descriptors: [FetchSortDescriptor]) throws -> [Int64] {
        try FetchSortDescriptor.sorted(graph.objects(of: entity), by: descriptors) { $0 }.map(\.primaryKey)
    }

    @Test(arguments: [
        [FetchSortDescriptor(key: "rank")],
        [FetchSortDescriptor(key: "rank", ascending: false)],
        [FetchSortDescriptor(key: "title")],
        [FetchSortDescriptor(key: "title", ascending: false)],
        [FetchSortDescriptor(key: "title", ascending: true, caseInsensitive: true)],
        [FetchSortDescriptor(key: "price")],
        [FetchSortDescriptor(key: "price", ascending: false)],
        [FetchSortDescriptor(key: "score")],
        [FetchSortDescriptor(key: "created", ascending: false)],
        [FetchSortDescriptor(key: "flag")],
        [FetchSortDescriptor(key: "uuid")],
        [FetchSortDescriptor(key: "blob")],
        [FetchSortDescriptor(key: "link")],
        [FetchSortDescriptor(key: "folder")],
        [FetchSortDescriptor(key: "folder.name"), FetchSortDescriptor(key: "title", ascending: false)],
        [FetchSortDescriptor(key: "folder.rank", ascending: false), FetchSortDescriptor(key: "rank")],
    ].map { $0 + [FetchSortDescriptor(key: "serial")] })
    func sqlAndMemorySortTheSameWay(_ descriptors: [FetchSortDescriptor]) throws {
        #expect(try sqlOrder("Note", descriptors) == memoryOrder("Note", descriptors))
    }

    @Test func nilSortsFirstAscendingAndLastDescending() throws {
        let ascending = try memoryOrder("Note", [FetchSortDescriptor(key: "rank"), FetchSortDescriptor(key: "serial")])
        #expect(Array(ascending.prefix(4)) == [4, 10, 11, 12])
        let descending = try memoryOrder("Note", [FetchSortDescriptor(key: "rank", ascending: false), FetchSortDescriptor(key: "serial")])
        #expect(Array(descending.suffix(4)) == [4, 10, 11, 12])
    }

    @Test func decimalsSortNumericallyNotAsText() throws {
        let order = try sqlOrder("Note", [FetchSortDescriptor(key: "price", ascending: false), FetchSortDescriptor(key: "serial")])
        #expect(Array(order.prefix(5)) == [5, 1, 2, 4, 6])  // 100, 10.25, 3, 0.5, 0
    }

    @Test func stringsSortByCodePointOrCaseFolded() throws {
        let binary = try sqlOrder("Folder", [FetchSortDescriptor(key: "name")])
        #expect(binary == [3, 4, 1, 2])  // nil, Archive, Inbox, Work
        let titles = try sqlOrder("Note", [FetchSortDescriptor(key: "title", ascending: true, caseInsensitive: true), FetchSortDescriptor(key: "serial")])
        #expect(Array(titles.prefix(5)) == [7, 12, 6, 1, 2])  // nil, nil, "", apple, Apple
    }

    @Test func reversedSortDescriptorFlipsOnlyTheDirection() {
        let descriptor = FetchSortDescriptor(key: "title", ascending: true, caseInsensitive: true)
        #expect(descriptor.reversedSortDescriptor == FetchSortDescriptor(key: "title", ascending: false, caseInsensitive: true))
        #expect(descriptor.reversedSortDescriptor.reversedSortDescriptor == descriptor)
        #expect(FetchSortDescriptor(key: "rank").ascending)
    }

    @Test func sortingByAToManyOrUnknownKeyThrows() throws {
        for key in ["tags.name", "tags", "colour", "folder.colour", "", "folder..name"] {
            var builder = builder()
            #expect(throws: ObjectGraphError.invalidFetchRequest, "\(key)") {
                try builder.orderByClause(for: [FetchSortDescriptor(key: key)])
            }
            #expect(throws: ObjectGraphError.invalidFetchRequest, "\(key)") {
                try memoryOrder("Note", [FetchSortDescriptor(key: key)])
            }
        }
    }

    @Test func compareTellsSubjectsApartByTheFirstDescriptorThatDiffers() throws {
        let a = graph.notes[0], b = graph.notes[15]  // same title, rank and score; serial 1 and 16
        let byTitle = [FetchSortDescriptor(key: "title"), FetchSortDescriptor(key: "rank")]
        #expect(try FetchSortDescriptor.compare(a, b, by: byTitle) == .orderedSame)
        #expect(try FetchSortDescriptor.compare(a, b, by: byTitle + [FetchSortDescriptor(key: "serial", ascending: false)]) == .orderedDescending)
    }
}
