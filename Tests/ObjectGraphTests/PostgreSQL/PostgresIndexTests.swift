import Foundation
import Testing
import ObjectGraph
@testable import ObjectGraphCore

/// Comparisons PostgreSQL can answer from an index are sent so that it can (bare, not wrapped to
/// make them definite), and `BEGINSWITH` is a range of the index: the same answers as memory for
/// prefixes at the edges of Unicode, nil values and negation.
@Suite("PostgreSQL answers indexed comparisons from the index", .needsPostgreSQL)
struct PostgresIndexTests {
    static let model = ManagedObjectModel(entities: [
        EntityDescription(name: "Entry", properties: [
            .attribute("name", .string, isIndexed: true),
            .attribute("score", .integer64, defaultValue: Int64(0)),
        ])
    ])

    /// Names at the edges: the last scalar before the surrogates, the last of the BMP, the last of
    /// all, combining marks, and nil.
    static let names: [String?] = [
        "a", "ab", "abc", "ab\u{FFFF}", "ac", "b", "z\u{D7FF}", "z\u{D7FF}x", "z\u{E000}", "\u{10FFFF}", "\u{10FFFF}\u{10FFFF}",
        "a\u{10FFFF}", "a\u{10FFFF}b", "é", "e\u{301}", "", nil, nil,
    ]

    static let prefixes = ["a", "ab", "ab\u{FFFF}", "z\u{D7FF}", "\u{10FFFF}", "a\u{10FFFF}", "é", "e", "q"]

    /// A store of `kind` holding the edge names and 2,000 filler rows (so that an index is worth
    /// using), and a context on it.
    private func stack(_ kind: StoreKind) throws -> (TestStack, ManagedObjectContext) {
        let stack = try TestStack(kind, model: Self.model)
        let context = stack.context()
        for (i, name) in Self.names.enumerated() {
            var values: [String: Any] = ["score": Int64(i)]
            if let name { values["name"] = name }
            context.insert("Entry", values)
        }
        for i in 0..<2_000 { context.insert("Entry", ["name": "filler \(i)", "score": Int64(i)]) }
        try context.save()
        return (stack, context)
    }

    private func scores(_ context: ManagedObjectContext, _ predicate: FetchPredicate) throws -> [Int64] {
        let request = FetchRequest<ManagedObject>(entityName: "Entry")
        request.predicate = predicate
        request.sortDescriptors = [FetchSortDescriptor(key: "score", ascending: true)]
        return try context.fetch(request).compactMap { $0.value(forKey: "score") as? Int64 }
    }

    @Test func beginsWithAndItsNegationAgreeWithMemoryAtTheEdgesOfUnicode() throws {
        let (postgresStack, postgres) = try stack(.postgres)
        let (memoryStack, memory) = try stack(.inMemory)
        for prefix in Self.prefixes {
            for format in ["name BEGINSWITH %@", "NOT (name BEGINSWITH %@)", "name BEGINSWITH %@ OR score == 1", "name >= %@", "NOT (name < %@)"] {
                let predicate = FetchPredicate(format: format, prefix)
                let expected = try scores(memory, predicate)
                #expect(try scores(postgres, predicate) == expected, "\(format) with \(prefix.unicodeScalars.map { String($0.value, radix: 16) })")
            }
        }
        // The prefixes of the edge names find them (the filler rows are not what is counted).
        #expect(try scores(memory, FetchPredicate(format: "name BEGINSWITH %@", "\u{10FFFF}")) == [9, 10])
        withExtendedLifetime((postgresStack, memoryStack)) {}
    }

    @Test func equalityOrderingInAndPrefixesOfAnIndexedAttributeCanBeAnsweredFromItsIndex() throws {
        let (stack, _) = try stack(.postgres)
        let backend = try #require(stack.store.backend as? PostgresStore)
        let entity = Self.model.entitiesByName["Entry"]!
        func plan(_ format: String, _ arguments: any Sendable...) throws -> String {
            let request = StoreFetchRequest(entity: entity, predicate: FetchPredicate(format: format, argumentArray: arguments))
            return try backend.explain(request, store: stack.store, withoutSequentialScans: true).joined(separator: "\n")
        }
        for (format, argument) in [("name == %@", "ab"), ("name BEGINSWITH %@", "ab"), ("name > %@", "z"), ("name IN %@", ["a", "b"]),
                                   ("name BEGINSWITH %@ AND score > 3", "filler 1")] as [(String, any Sendable)] {
            let text = try plan(format, argument)
            #expect(text.contains("Z_Entry_name"), "\(format) should be answerable from the index:\n\(text)")
        }
        // Under NOT a comparison is made definite (a nil name is not `NOT NULL`): no index then,
        // and the answers stay right (the agreement test above).
        #expect(try !plan("NOT (name == %@)", "ab").contains("Z_Entry_name"))
    }

    @Test func theUpperBoundOfAPrefixIsTheLeastStringAboveEveryStringItBegins() {
        #expect(SQLPredicateCompiler.prefixSuccessor("ab") == "ac")
        #expect(SQLPredicateCompiler.prefixSuccessor("a\u{D7FF}") == "a\u{E000}")
        #expect(SQLPredicateCompiler.prefixSuccessor("a\u{FFFF}") == "a\u{10000}")
        #expect(SQLPredicateCompiler.prefixSuccessor("a\u{10FFFF}") == "b")
        #expect(SQLPredicateCompiler.prefixSuccessor("\u{10FFFF}\u{10FFFF}") == nil)
        #expect(SQLPredicateCompiler.prefixSuccessor("e\u{301}") == "e\u{302}")
    }
}
