import Foundation
import Testing
import ObjectGraph
@testable import ObjectGraphCore

/// ``PredicateTestGraph``'s objects, written to a PostgreSQL store with the same keys, so that a
/// fetch from PostgreSQL can be checked against evaluation in memory.
final class PostgresPredicateGraph: @unchecked Sendable {  // immutable after init; read by tests only
    let memory: PredicateTestGraph
    let coordinator: PersistentStoreCoordinator
    let store: PersistentStore
    var backend: PostgresStore { store.backend as! PostgresStore }

    /// One graph for every test (they only read it).
    static let shared = Result { try PostgresPredicateGraph() }

    private init() throws {
        memory = try PredicateTestGraph()
        coordinator = PersistentStoreCoordinator(managedObjectModel: PredicateTestGraph.model)
        store = try coordinator.addPersistentStore(type: .postgres, at: try PostgresTestServer.shared.get().makeDatabase())
        var request = StoreSaveRequest()
        for object in memory.folders + memory.tags + memory.notes {
            var values = [Value](repeating: .null, count: object.entity.properties.count)
            for (key, value) in object.values { values[object.entity.propertiesByName[key]!.index] = value }
            for (key, destination) in object.toOne { values[object.entity.propertiesByName[key]!.index] = .objectID(id(of: destination)) }
            request.inserted.append(SavedObject(id: id(of: object), entity: object.entity, values: values, changedIndices: [], expectedVersion: nil))
        }
        let tags = PredicateTestGraph.model.entitiesByName["Note"]!.relationshipsByName["tags"]!
        for note in memory.notes {
            for tag in note.toMany["tags"] ?? [] {
                request.joinInserts.append(JoinChange(relationship: tags, source: id(of: note), destination: id(of: tag)))
            }
        }
        _ = try store.backend.save(request, store: store)
    }

    /// The ID in the PostgreSQL store of an object of the graph in memory.
    func id(of object: FakeObject) -> ManagedObjectID {
        ManagedObjectID(entity: object.entity, store: store, primaryKey: object.primaryKey)
    }

    /// The keys of the rows a fetch from PostgreSQL returns, in its order.
    func keys(
        _ entityName: String, _ predicate: FetchPredicate?, sortedBy descriptors: [FetchSortDescriptor] = [],
        limit: Int = 0, offset: Int = 0, values: Bool = false
    ) throws -> [Int64] {
        let request = StoreFetchRequest(
            entity: PredicateTestGraph.model.entitiesByName[entityName]!, predicate: predicate, sortDescriptors: descriptors,
            fetchLimit: limit, fetchOffset: offset, includesPropertyValues: values)
        return try backend.fetch(request, store: store).map { $0.id.primaryKey ?? -1 }
    }

    /// How many rows a count on PostgreSQL finds.
    func count(_ entityName: String, _ predicate: FetchPredicate?) throws -> Int {
        try backend.count(StoreFetchRequest(entity: PredicateTestGraph.model.entitiesByName[entityName]!, predicate: predicate), store: store)
    }
}

/// The predicates of the SQLite agreement suite, fetched from PostgreSQL: the same answers as in
/// memory, whether PostgreSQL answers a predicate whole, in part, or leaves it to memory.
@Suite("PostgreSQL and in-memory evaluation agree", .needsPostgreSQL)
struct PostgresPredicateAgreementTests {
    static let all = PredicateSQLAgreementTests.comparisons + PredicateSQLAgreementTests.strings
        + PredicateSQLAgreementTests.relationships + PredicateSQLAgreementTests.compounds

    @Test("every predicate of the SQLite agreement suite", arguments: all)
    func samePredicateSameRows(_ testCase: PredicateCase) throws {
        let graph = try PostgresPredicateGraph.shared.get()
        let memory = try graph.memory.memoryKeys(testCase.entity, testCase.predicate)
        #expect(try graph.keys(testCase.entity, testCase.predicate).sorted() == memory, "\(testCase.predicate.predicateFormat)")
        #expect(try graph.keys(testCase.entity, testCase.predicate, values: true).sorted() == memory, "\(testCase.predicate.predicateFormat) (rows)")
        #expect(try graph.count(testCase.entity, testCase.predicate) == memory.count, "\(testCase.predicate.predicateFormat) (count)")
        if let expected = testCase.expected { #expect(memory == expected.sorted()) }
    }

    @Test func objectConstantsCompareByObjectID() throws {
        let graph = try PostgresPredicateGraph.shared.get()
        let m = graph.memory
        let inbox = m.folders[0], note2 = m.notes[1], red = m.tags[0]
        let temporary = ManagedObjectID.temporary(for: m.model.entitiesByName["Folder"]!)
        // (entity, format, the arguments' objects, expected)
        let cases: [(String, String, [FakeObject?], [Int64])] = [
            ("Note", "folder == %@", [inbox], [1, 2, 7, 16]),
            ("Note", "folder != %@", [inbox], PredicateSQLAgreementTests.notes(except: 1, 2, 7, 16)),
            ("Note", "folder == %@", [nil], [4, 9, 10, 11, 12, 13, 14, 15]),
            ("Note", "folder == %@", [note2], []),
            ("Note", "SELF == %@", [note2], [2]),
            ("Note", "SELF != %@", [note2], PredicateSQLAgreementTests.notes(except: 2)),
            ("Note", "%@ IN tags", [red], [1, 2, 8]),
            ("Note", "NONE tags == %@", [red], PredicateSQLAgreementTests.notes(except: 1, 2, 8)),
            ("Folder", "notes CONTAINS %@", [note2], [1]),
            ("Tag", "ANY notes.folder == %@", [inbox], [1, 2]),
        ]
        for (entity, format, objects, expected) in cases {
            let inMemory = FetchPredicate(format: format, argumentArray: objects.map { $0.map { $0.id as any Sendable } ?? Optional<Int>.none as any Sendable })
            let inPostgres = FetchPredicate(format: format, argumentArray: objects.map { $0.map { graph.id(of: $0) as any Sendable } ?? Optional<Int>.none as any Sendable })
            #expect(try m.memoryKeys(entity, inMemory) == expected, "\(format) in memory")
            #expect(try graph.keys(entity, inPostgres).sorted() == expected, "\(format) on PostgreSQL")
        }
        // An ID of another store, or a temporary one, is no object of the store.
        #expect(try graph.keys("Note", FetchPredicate(format: "folder == %@", argumentArray: [inbox.id])) == [])
        #expect(try graph.keys("Note", FetchPredicate(format: "folder == %@", argumentArray: [temporary])) == [])
        #expect(try graph.keys("Note", FetchPredicate(format: "folder != %@", argumentArray: [temporary])).count == 16)
    }

    @Test("sorts, limits and offsets", arguments: [
        [FetchSortDescriptor(key: "rank")],
        [FetchSortDescriptor(key: "rank", ascending: false)],
        [FetchSortDescriptor(key: "title")],
        [FetchSortDescriptor(key: "title", ascending: false), FetchSortDescriptor(key: "rank")],
        [FetchSortDescriptor(key: "title", ascending: true, caseInsensitive: true)],
        [FetchSortDescriptor(key: "created", ascending: false)],
        [FetchSortDescriptor(key: "score")],
        [FetchSortDescriptor(key: "flag"), FetchSortDescriptor(key: "serial", ascending: false)],
        [FetchSortDescriptor(key: "folder.name"), FetchSortDescriptor(key: "rank")],
        [FetchSortDescriptor(key: "price")],
    ])
    func sortsAgree(_ descriptors: [FetchSortDescriptor]) throws {
        let graph = try PostgresPredicateGraph.shared.get()
        let notes = graph.memory.notes
        for predicate in [nil, FetchPredicate(format: "rank > 1"), FetchPredicate(format: "title BEGINSWITH[c] 'a'")] {
            let matching = try notes.filter { try predicate?.evaluate(with: $0) ?? true }
            let memory = try FetchSortDescriptor.sorted(matching, by: descriptors, subject: { $0 }).map(\.primaryKey)
            let what = "\(descriptors) where \(predicate?.predicateFormat ?? "-")"
            #expect(try graph.keys("Note", predicate, sortedBy: descriptors) == memory, "\(what)")
            #expect(try graph.keys("Note", predicate, sortedBy: descriptors, values: true) == memory, "\(what) (rows)")
            #expect(try graph.keys("Note", predicate, sortedBy: descriptors, limit: 3, offset: 2) == Array(memory.dropFirst(2).prefix(3)), "\(what), 3 from 2")
            #expect(try graph.keys("Note", predicate, sortedBy: descriptors, offset: 5) == Array(memory.dropFirst(5)), "\(what), from 5")
        }
    }

    @Test func badPredicatesFailAsOnSQLite() throws {
        let graph = try PostgresPredicateGraph.shared.get()
        for format in ["nonsense == 1", "folder.nonsense == 1", "tags.name == 'red'", "rank == {1, 2}", "secret == 'x'", "title MATCHES '(unclosed'"] {
            let predicate = FetchPredicate(format: format)
            let sqlite = #expect(throws: ObjectGraphError.self) { try graph.memory.sqlKeys("Note", predicate) }
            let postgres = #expect(throws: ObjectGraphError.self) { try graph.keys("Note", predicate) }
            #expect(postgres?.code == sqlite?.code, "\(format)")
            #expect(postgres?.message == sqlite?.message, "\(format)")
        }
        #expect(throws: ObjectGraphError.predicateSyntax) { try graph.keys("Note", FetchPredicate(format: "rank >")) }
    }
}

/// What PostgreSQL is asked to answer itself, and what is left to memory.
@Suite("PostgreSQL predicate compilation", .needsPostgreSQL)
struct PostgresPredicateSQLTests {
    @Test func everythingButFoldingMatchesAndArithmeticCompilesAndTheRestIsLeftToMemory() throws {
        let graph = try PostgresPredicateGraph.shared.get()
        let note = PredicateTestGraph.model.entitiesByName["Note"]!
        func plan(_ format: String, _ arguments: [any Sendable] = []) throws -> PostgresStore.Plan {
            let request = StoreFetchRequest(entity: note, predicate: FetchPredicate(format: format, argumentArray: arguments))
            return try graph.backend.plan(request, columns: "t0.\"Z_PK\"", store: graph.store)
        }
        func compiled(_ format: String, _ arguments: [any Sendable] = []) throws -> Bool { try plan(format, arguments).residual.isEmpty }
        for format in ["rank > 1", "title == 'a'", "title != nil", "rank IN {1, 2}", "title BEGINSWITH 'a'", "title CONTAINS 'p'",
                       "title ENDSWITH 'e'", "flag == YES", "score <= 2.5", "NOT (rank < 3 OR title == 'x')", "TRUEPREDICATE",
                       "title LIKE 'a*'", "folder.name == 'Inbox'", "ANY tags.name == 'red'", "ALL tags.name != 'red'", "tags.@count > 1",
                       "SUBQUERY(tags, $t, $t.name BEGINSWITH 'r').@count > 0", "rank == 2.0", "price > 5", "title BEGINSWITH ''",
                       "title BEGINSWITH folder.name", "score == rank"] {
            #expect(try compiled(format), "\(format) should compile")
        }
        #expect(try compiled("created > %@", [PredicateTestGraph.date(5)]))
        #expect(try compiled("folder == %@", [graph.id(of: graph.memory.folders[0])]))
        #expect(try compiled("SELF == %@", [graph.id(of: graph.memory.notes[0])]))
        for format in ["title ==[c] 'a'", "title MATCHES 'a.*'", "rank + 1 > 2", "title LIKE folder.name", "ANY tags.name ==[c] 'RED'"] {
            #expect(try !compiled(format), "\(format) should be left to memory")
        }
        // An AND is split: what compiles goes to PostgreSQL, the rest is evaluated in memory.
        let split = try plan("rank > 1 AND (title ==[c] 'x' AND flag == NO)")
        #expect(split.residual.count == 1)
        #expect(split.conditions.count == 2)
        // Compiled conditions bind every value, numbered in order across conjuncts.
        let bound = try plan("(title == %@ OR rank IN {4, 5}) AND title ==[c] 'x' AND folder.name == %@", ["it's", "Inbox"])
        #expect(!bound.sql.contains("it's"))
        #expect(bound.parameters == [.text("it's"), .int(4), .int(5), .text("Inbox")])
        #expect(bound.sql.contains("$4") && !bound.sql.contains("?"))
    }

    @Test func placeholdersAreNumberedOutsideQuotedNamesAndStrings() {
        #expect(SQLDialect.postgres.numbered(#"t0."a?" = ? AND x = '?' AND y IN (?, ?)"#, from: 3) == #"t0."a?" = $3 AND x = '?' AND y IN ($4, $5)"#)
        #expect(SQLDialect.sqlite.numbered("x = ?") == "x = ?")
    }

    @Test func likePatternsBecomeSQLPatterns() {
        #expect(SQLPredicateCompiler.sqlLikePattern("a*b?c") == "a%b_c")
        #expect(SQLPredicateCompiler.sqlLikePattern("50%_off") == #"50\%\_off"#)
        #expect(SQLPredicateCompiler.sqlLikePattern(#"\*\?\\x\"#) == #"*?\\x\\"#)
    }
}
