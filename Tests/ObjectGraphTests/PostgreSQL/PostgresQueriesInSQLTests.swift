import Foundation
import Testing
import ObjectGraph
@testable import ObjectGraphCore

/// The queries a server sends most, answered by PostgreSQL itself: each reads from the server only
/// the rows it returns (counted by the store), with the answer memory gives.
@Suite("PostgreSQL answers comparisons of every type, key paths and to-many operators in SQL", .needsPostgreSQL)
struct PostgresQueriesInSQLTests {
    static let model = ManagedObjectModel(entities: [
        EntityDescription(name: "Group", properties: [
            .attribute("name", .string),
            .relationship("items", destination: "Item", toMany: true, inverse: "group"),
        ]),
        EntityDescription(name: "Item", properties: [
            .attribute("uid", .uuid),
            .attribute("amount", .decimal),
            .attribute("updated", .date),
            .attribute("score", .double),
            .attribute("name", .string),
            .attribute("rank", .integer64, defaultValue: Int64(0)),
            .attribute("link", .uri),
            .attribute("blob", .binaryData),
            .relationship("group", destination: "Group", inverse: "items"),
        ]),
    ])

    static let itemCount = 1_200
    static let groupCount = 40

    /// Item `i` has rank `i % 100`, belongs to group `i % 40`, and has a name that begins with
    /// "Item", in capitals or not; its UUID is `uids[i]`.
    private static func fill(_ context: ManagedObjectContext, uids: [UUID]) throws {
        let groups = (0..<groupCount).map { context.insert("Group", ["name": "group \($0)"]) }
        for (i, uid) in uids.enumerated() {
            context.insert("Item", [
                "uid": uid, "amount": Decimal(i) / 4, "updated": Date(timeIntervalSinceReferenceDate: Double((i * 7919) % itemCount)),
                "score": Double((i * 104_729) % itemCount) / 8, "name": (i % 3 == 0 ? "ITEM " : "item ") + String(i),
                "rank": Int64(i % 100), "link": URL(string: "https://example.com/\(i)")!, "blob": Data([UInt8(i % 256), UInt8(i / 256)]),
                "group": groups[i % groupCount],
            ])
        }
        try context.save()
    }

    /// A PostgreSQL store and an in-memory one (for the expected answers), with the same rows.
    private func stacks() throws -> (postgres: TestStack, memory: TestStack, uids: [UUID]) {
        let uids = (0..<Self.itemCount).map { _ in UUID() }
        let postgres = try TestStack(.postgres, model: Self.model)
        let memory = try TestStack(.inMemory, model: Self.model)
        try Self.fill(postgres.context(), uids: uids)
        try Self.fill(memory.context(), uids: uids)
        return (postgres, memory, uids)
    }

    @Test func eachQueryReadsOnlyItsResultRows() throws {
        let (postgres, memory, uids) = try stacks()
        let backend = try #require(postgres.store.backend as? PostgresStore)
        let context = postgres.context()
        let memoryContext = memory.context()
        let cases: [(String, FetchRequest<ManagedObject>, expected: Int)] = [
            ("UUID equality", Self.request("Item", "uid == %@", [uids[17]]), 1),
            ("decimal equality", Self.request("Item", "amount == %@", [Decimal(string: "12.5")!]), 1),
            ("URL equality", Self.request("Item", "link == %@", [URL(string: "https://example.com/5")!]), 1),
            ("binary data equality", Self.request("Item", "blob == %@", [Data([7, 0])]), 1),
            ("a date sort with a limit", Self.request("Item", nil, [], sort: "updated", limit: 20), 20),
            ("a double sort with a limit", Self.request("Item", nil, [], sort: "score", ascending: false, limit: 20), 20),
            ("a decimal sort with a limit and an offset", Self.request("Item", nil, [], sort: "amount", limit: 5, offset: 10), 5),
            ("a UUID sort with a limit", Self.request("Item", nil, [], sort: "uid", limit: 3), 3),
            ("a key path through a to-one", Self.request("Item", "group.name == %@", ["group 3"]), Self.itemCount / Self.groupCount),
            ("a to-one's attribute in a sort", Self.request("Item", "rank == 5", [], sort: "group.name", limit: 4), 4),
            ("ANY over a to-many", Self.request("Group", "ANY items.rank == %@", [Int64(42)]), 2),
            ("ALL over a to-many", Self.request("Group", "ALL items.rank < %@", [Int64(100)]), Self.groupCount),
            ("@count of a to-many", Self.request("Group", "items.@count == %@", [Int64(Self.itemCount / Self.groupCount)]), Self.groupCount),
            ("SUBQUERY", Self.request("Group", "SUBQUERY(items, $i, $i.rank == 1).@count > 0", []), 2),
            ("LIKE", Self.request("Item", "name LIKE %@", ["item 1?"]), 7),
            ("a case-insensitive prefix", Self.request("Item", "name BEGINSWITH[c] %@", ["item 1"]), 1 + 10 + 100 + 200),
            ("case- and diacritic-insensitive equality", Self.request("Item", "name ==[cd] %@", ["ITEM 3"]), 1),
            ("[c] LIKE through a to-one", Self.request("Item", "group.name LIKE[c] %@", ["GROUP 1?"]), 10 * Self.itemCount / Self.groupCount),
            ("a case-insensitive sort with a limit", Self.request("Item", nil, [], sort: "name", caseInsensitive: true, limit: 6), 6),
            ("a case-insensitive sort with a limit and an offset",
             Self.request("Item", "rank > 3", [], sort: "name", caseInsensitive: true, ascending: false, limit: 4, offset: 3), 4),
        ]
        for (what, request, expected) in cases {
            let before = backend.rowsRead.value
            let found = try context.fetch(request)
            #expect(backend.rowsRead.value - before == found.count, "\(what): \(backend.rowsRead.value - before) rows read for \(found.count)")
            #expect(found.count == expected, "\(what)")
            let inMemory = try memoryContext.fetch(request)
            #expect(found.map { $0.value(forKey: "name") as? String } == inMemory.map { $0.value(forKey: "name") as? String }, "\(what): not memory's answer")
        }
        // A count with a UUID reads one row: the count.
        let before = backend.rowsRead.value
        let counted = try context.count(for: Self.request("Item", "uid == %@", [uids[3]]))
        #expect(counted == 1)
        #expect(backend.rowsRead.value - before == 1)
        // So does a count with a case-insensitive prefix.
        let beforeFolded = backend.rowsRead.value
        #expect(try context.count(for: Self.request("Item", "name BEGINSWITH[c] %@", ["ITEM 2"])) == 1 + 10 + 100)
        #expect(backend.rowsRead.value - beforeFolded == 1)
        withExtendedLifetime(memory) {}
    }

    /// `[c]`, `[d]` and case-insensitive sorts are exact in SQL for ASCII text; the rows whose text
    /// is not ASCII are read and evaluated in memory, with Foundation's folding (`ſ` is `s` under
    /// `[c]`, `É` is `e` under `[cd]`), and merged with the others in memory's order.
    @Test func foldedComparisonsAndSortsReadTheResultAndTheTextThatIsNotASCII() throws {
        let (postgres, memory, _) = try stacks()
        let names = ["Émile", "émile", "ÉMILE 2", "ſtem 1", "Straße", "STRASSE", "ıtem 1", "İTEM 1", "日本 item", "item 1 ✓", "ITEM Ǆ"]
        for stack in [postgres, memory] {
            let context = stack.context()
            for (i, name) in names.enumerated() { context.insert("Item", ["name": name, "rank": Int64(i)]) }
            try context.save()
        }
        let backend = try #require(postgres.store.backend as? PostgresStore)
        let nonASCII = names.filter { !$0.unicodeScalars.allSatisfy(\.isASCII) }.count
        let formats = [
            "name BEGINSWITH[c] 'item 1'", "name BEGINSWITH[cd] 'EMILE'", "name ==[c] 'émile'", "name ==[cd] 'EMILE'",
            "name ENDSWITH[c] ' 1'", "name CONTAINS[c] 'STEM'", "name CONTAINS[cd] 'e'", "name LIKE[c] 'stra*'",
            "name LIKE[cd] '*E 2'", "NOT (name BEGINSWITH[c] 'item')", "name BEGINSWITH[c] 'ITEM 1' OR name ==[d] 'Emile'",
            "name BEGINSWITH[c] 'item 1' AND rank < 5", "rank < 3 OR name ENDSWITH[d] 'e'",
        ]
        for format in formats {
            for (limit, offset) in [(0, 0), (5, 0), (3, 2)] {
                let request = Self.request("Item", format, [], sort: "name", caseInsensitive: true, limit: limit, offset: offset)
                let expected = try memory.context().fetch(request).map { $0.value(forKey: "name") as? String }
                let before = backend.rowsRead.value
                let found = try postgres.context().fetch(request).map { $0.value(forKey: "name") as? String }
                #expect(found == expected, "\(format), limit \(limit), offset \(offset)")
                // At most the limit plus the offset of ASCII rows, and the rows whose text is not ASCII
                // (for `==[c] 'émile'` too: folded ASCII text never equals it).
                let ascii = limit > 0 ? limit + offset : try memory.context().count(for: Self.request("Item", format, []))
                #expect(backend.rowsRead.value - before <= ascii + nonASCII, "\(format): \(backend.rowsRead.value - before) rows read")
                #expect(try postgres.context().count(for: request) == memory.context().count(for: request), "count: \(format)")
            }
        }
        // A sort alone: the first names in memory's order, with the text that is not ASCII among them.
        let sorted = Self.request("Item", nil, [], sort: "name", caseInsensitive: true, ascending: false, limit: 8)
        #expect(try postgres.context().fetch(sorted).map { $0.value(forKey: "name") as? String }
            == memory.context().fetch(sorted).map { $0.value(forKey: "name") as? String })
        let request = StoreFetchRequest(
            entity: Self.model.entitiesByName["Item"]!, predicate: FetchPredicate(format: "name BEGINSWITH[c] 'item 1'"))
        #expect(try backend.plan(request, columns: "1", store: postgres.store).split != nil)
    }

    @Test func whatPostgreSQLCannotFoldIsStillAnsweredAsInMemory() throws {
        let (postgres, memory, _) = try stacks()
        for format in ["name BEGINSWITH[c] 'item 1'", "name ==[cd] 'ITEM 3'", "rank + 1 == 5", "name MATCHES 'item 1.'"] {
            let request = Self.request("Item", format, [], sort: "rank", limit: 7)
            let expected = try memory.context().fetch(request).map { $0.value(forKey: "name") as? String }
            #expect(try postgres.context().fetch(request).map { $0.value(forKey: "name") as? String } == expected, "\(format)")
        }
    }

    private static func request(
        _ entity: String, _ format: String?, _ arguments: [any Sendable], sort: String? = nil, caseInsensitive: Bool = false,
        ascending: Bool = true, limit: Int = 0, offset: Int = 0
    ) -> FetchRequest<ManagedObject> {
        let request = FetchRequest<ManagedObject>(entityName: entity)
        if let format { request.predicate = FetchPredicate(format: format, argumentArray: arguments) }
        request.sortDescriptors = (sort.map { [FetchSortDescriptor(key: $0, ascending: ascending, caseInsensitive: caseInsensitive)] } ?? [])
            + [FetchSortDescriptor(key: "name")]
        request.fetchLimit = limit
        request.fetchOffset = offset
        return request
    }
}
