import Foundation
import Testing
import ObjectGraph
@testable import ObjectGraphCore

/// Random predicate formats (``PredicateFormatGenerator``) on ``PredicateTestGraph``'s notes, copied
/// into a PostgreSQL store: the store's answer (SQL where it translates, memory for the rest) must
/// be the in-memory evaluation's, or fail with the same code. 10,000 cases by default, in four
/// shards that run side by side, each on its own database (one shard alone was the last test of
/// the run by a minute); `OBJECTGRAPH_POSTGRES_PREDICATE_CASES=N` runs N, and
/// `OBJECTGRAPH_PREDICATE_SEED` replays a seed, as for ``PredicateFuzzTests``.
@Suite("Random predicate formats agree on PostgreSQL and in memory", .needsPostgreSQL)
struct PostgresPredicateFuzzTests {
    static let caseCount = Int(ProcessInfo.processInfo.environment["OBJECTGRAPH_POSTGRES_PREDICATE_CASES"] ?? "") ?? 10_000
    static let shards = 4

    @Test(.timeLimit(.minutes(10)), arguments: 0..<shards)
    func randomFormatsAgreeWithMemory(shard: Int) throws {
        let seed = PredicateFuzzTests.seed(forShard: shard) &+ 0x5EED
        print("PostgresPredicateFuzzTests shard \(shard): OBJECTGRAPH_PREDICATE_SEED=\(PredicateFuzzTests.seed)")
        let graph = try PredicateTestGraph()
        let stack = try TestStack(.postgres, model: PredicateTestGraph.model)
        try copy(graph, into: stack)
        let context = stack.context("fuzz")
        // An in-memory copy, for the order of every tenth case: sorted by title, case-insensitively.
        let memoryStack = try TestStack(.inMemory, model: PredicateTestGraph.model)
        try copy(graph, into: memoryStack)
        let memoryContext = memoryStack.context("fuzz")
        var generator = PredicateFormatGenerator(seed: seed)
        var compared = 0
        let caseCount = Self.caseCount / Self.shards + (shard < Self.caseCount % Self.shards ? 1 : 0)
        for index in 0..<caseCount {
            generator.resetArguments()
            generator.deep = false
            let piece = generator.predicate(1 + generator.int(6))
            let predicate = FetchPredicate(format: piece.text, argumentArray: generator.arguments)
            guard predicate.syntaxError == nil else { continue }
            compared += 1
            let described = "seed \(PredicateFuzzTests.seed) shard \(shard) case \(index): \(piece.text.prefix(300))"
            let memory = Result { try graph.memoryKeys("Note", predicate) }
            let stored = Result { try serials(predicate, in: context) }
            switch (memory, stored) {
            case (.success(let m), .success(let s)):
                #expect(m == s, "PostgreSQL \(s) and memory \(m) disagree — \(described)")
                if index % 10 == 0 {
                    let sorted = try serials(predicate, in: context, sortedByTitleWithLimit: 1 + index % 7, offset: index % 3)
                    #expect(try sorted == serials(predicate, in: memoryContext, sortedByTitleWithLimit: 1 + index % 7, offset: index % 3),
                            "sorted by title[c] — \(described)")
                }
            case (.failure(let m), .failure(let s)):
                #expect((m as? ObjectGraphError)?.code == (s as? ObjectGraphError)?.code, "memory: \(m), PostgreSQL: \(s) — \(described)")
            case (.success, .failure(let s)):
                #expect((s as? ObjectGraphError)?.code == .invalidFetchRequest, "only PostgreSQL failed: \(s) — \(described)")
            case (.failure(let m), .success):
                #expect((m as? ObjectGraphError)?.code == .invalidFetchRequest, "only memory failed: \(m) — \(described)")
            }
        }
        #expect(compared > caseCount / 2)
    }

    /// The serials (the graph's primary keys) of the notes a fetch with the predicate returns.
    private func serials(_ predicate: FetchPredicate, in context: ManagedObjectContext) throws -> [Int64] {
        let request = FetchRequest<[String: Any]>(entityName: "Note")
        request.predicate = predicate
        request.propertiesToFetch = ["serial"]
        return try context.fetch(request).compactMap { $0["serial"] as? Int64 }.sorted()
    }

    /// The serials of the notes a fetch with the predicate returns, sorted by title
    /// case-insensitively (then by serial), with a limit and an offset.
    private func serials(_ predicate: FetchPredicate, in context: ManagedObjectContext, sortedByTitleWithLimit limit: Int, offset: Int) throws -> [Int64] {
        let request = FetchRequest<[String: Any]>(entityName: "Note")
        request.predicate = predicate
        request.propertiesToFetch = ["serial"]
        request.sortDescriptors = [FetchSortDescriptor(key: "title", ascending: limit % 2 == 0, caseInsensitive: true), FetchSortDescriptor(key: "serial")]
        request.fetchLimit = limit
        request.fetchOffset = offset
        return try context.fetch(request).compactMap { $0["serial"] as? Int64 }
    }

    /// Inserts the graph's folders, tags and notes, with their relationships, and saves.
    private func copy(_ graph: PredicateTestGraph, into stack: TestStack) throws {
        let context = stack.context("copy")
        var copies: [ObjectIdentifier: ManagedObject] = [:]
        for entity in ["Folder", "Tag", "Note"] {
            for object in graph.objects(of: entity) {
                var values: [String: Any] = [:]
                for (key, value) in object.values {
                    guard let attribute = object.entity.attributesByName[key], !attribute.isTransient else { continue }
                    if let converted = value.publicValue(for: attribute.attributeType) { values[key] = converted }
                }
                copies[ObjectIdentifier(object)] = context.insert(entity, values)
            }
        }
        for note in graph.objects(of: "Note") {
            let copy = copies[ObjectIdentifier(note)]!
            if let folder = note.toOne["folder"] { copy.setValue(copies[ObjectIdentifier(folder)], forKey: "folder") }
            let tags = (note.toMany["tags"] ?? []).map { copies[ObjectIdentifier($0)]! }
            if !tags.isEmpty { copy.setValue(Set(tags), forKey: "tags") }
        }
        try context.save()
    }
}
