import Foundation
import Testing
import ObjectGraph
@testable import ObjectGraphCore

@Suite("Fetching through a context")
struct FetchThroughContextTests {
    /// Folders Inbox and Work; notes with titles, ranks and dates, some with tags.
    static func populate(_ context: ManagedObjectContext) throws {
        let inbox = context.insert("Folder", ["name": "Inbox"])
        let work = context.insert("Folder", ["name": "Work"])
        let swift = context.insert("Tag", ["name": "swift"])
        let sql = context.insert("Tag", ["name": "sql"])
        let rows: [(String, Int, ManagedObject?, [ManagedObject])] = [
            ("Hello", 5, inbox, [swift]), ("hello world", 3, inbox, [swift, sql]), ("Héllo", 8, work, []),
            ("Groceries", 1, nil, []), ("100% done", 9, work, [sql]), ("under_score", 2, nil, []),
            ("Zebra", 7, work, [swift]), ("apple", 4, inbox, []),
        ]
        for (i, row) in rows.enumerated() {
            let note = context.insert("Note", ["title": row.0, "rank": row.1, "created": Date(timeIntervalSinceReferenceDate: Double(i * 100))])
            if let folder = row.2 { note.setValue(folder, forKey: "folder") }
            note.setValue(Set(row.3), forKey: "tags")
        }
    }

    static let cases: [(String, [any Sendable], [String])] = [
        ("title == %@", ["Hello"], ["Hello"]),
        ("title ==[c] %@", ["HELLO"], ["Hello"]),
        ("title ==[cd] %@", ["hello"], ["Hello", "Héllo"]),
        ("title BEGINSWITH %@", ["He"], ["Hello"]),
        ("title BEGINSWITH[d] %@", ["He"], ["Hello", "Héllo"]),
        ("title BEGINSWITH[c] %@", ["he"], ["Hello", "hello world"]),
        ("title ENDSWITH %@", ["lo"], ["Hello", "Héllo"]),
        ("title CONTAINS %@", ["%"], ["100% done"]),
        ("title CONTAINS %@", ["_"], ["under_score"]),
        ("title LIKE %@", ["?ello"], ["Hello"]),
        ("title LIKE[c] %@", ["*O*"], ["Hello", "hello world", "Héllo", "Groceries", "100% done", "under_score"]),
        ("title MATCHES %@", ["[A-Z][a-z]+"], ["Hello", "Groceries", "Zebra"]),
        ("rank > %d AND rank <= %d", [3, 7], ["Hello", "Zebra", "apple"]),
        ("rank BETWEEN {2, 4}", [], ["hello world", "under_score", "apple"]),
        ("rank IN %@", [[1, 9]], ["Groceries", "100% done"]),
        ("NOT (rank < %d) OR title == %@", [8, "apple"], ["Héllo", "100% done", "apple"]),
        ("folder == nil", [], ["Groceries", "under_score"]),
        ("folder.name == %@", ["Work"], ["Héllo", "100% done", "Zebra"]),
        ("folder.name != %@", ["Work"], ["Hello", "hello world", "Groceries", "under_score", "apple"]),
        ("ANY tags.name == %@", ["sql"], ["hello world", "100% done"]),
        ("tags.@count >= 1", [], ["Hello", "hello world", "100% done", "Zebra"]),
        ("NONE tags.name == %@", ["swift"], ["Héllo", "Groceries", "100% done", "under_score", "apple"]),
        ("ALL tags.name == %@", ["swift"], ["Hello", "Héllo", "Groceries", "under_score", "Zebra", "apple"]),
        ("created >= %@", [Date(timeIntervalSinceReferenceDate: 500)], ["under_score", "Zebra", "apple"]),
        ("TRUEPREDICATE", [], ["Hello", "hello world", "Héllo", "Groceries", "100% done", "under_score", "Zebra", "apple"]),
        ("FALSEPREDICATE", [], []),
    ]

    @Test(arguments: StoreKind.everyStore)
    func everyOperatorGivesTheSameAnswerOnEveryStoreAndForPendingChanges(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        let pending = stack.context("pending")
        try Self.populate(pending)
        let saved = stack.context("saved")
        try Self.populate(saved)
        try saved.save()
        for (format, arguments, expected) in Self.cases {
            let request = FetchRequest<ManagedObject>(entityName: "Note")
            request.predicate = FetchPredicate(format: format, argumentArray: arguments)
            let fromStore = try stack.context("reader").fetch(request).compactMap { $0.value(forKey: "title") as? String }
            #expect(fromStore.sorted() == expected.sorted(), "\(format) from the \(kind) store")
            // The same predicate over unsaved objects: evaluated in memory.
            let inMemory = try pending.fetch(request).compactMap { $0.value(forKey: "title") as? String }
            let mine = inMemory.filter { title in expected.contains(title) || !fromStore.contains(title) }
            #expect(Set(mine) == Set(expected), "\(format) on pending changes")
        }
    }

    @Test(arguments: StoreKind.everyStore)
    func sortingLimitAndOffsetAgreeOnEveryStore(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        let context = stack.context()
        try Self.populate(context)
        try context.save()
        let request = FetchRequest<ManagedObject>(entityName: "Note")
        request.sortDescriptors = [FetchSortDescriptor(key: "folder.name", ascending: false), FetchSortDescriptor(key: "rank")]
        request.fetchOffset = 1
        request.fetchLimit = 4
        let titles = try stack.context("reader").fetch(request).compactMap { $0.value(forKey: "title") as? String }
        #expect(titles == ["Héllo", "100% done", "hello world", "apple"])
        // Pending changes are merged into a sorted, paged fetch.
        let changed = try context.all("Note").first { $0.value(forKey: "title") as? String == "Zebra" }!
        changed.setValue(10, forKey: "rank")
        let again = try context.fetch(request).compactMap { $0.value(forKey: "title") as? String }
        #expect(again == ["100% done", "Zebra", "hello world", "apple"])
    }

    /// A predicate or sort that reads a related object (`folder.name`) sees that object's unsaved
    /// changes, though the fetched objects themselves did not change (Core Data's store answers
    /// from the saved related rows here).
    @Test(arguments: StoreKind.everyStore)
    func predicatesAndSortsThroughARelationshipSeeUnsavedChangesOfTheRelatedObjects(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        let context = stack.context()
        try Self.populate(context)
        try context.save()
        func titles(_ format: String, _ arguments: [any Sendable] = [], sortedBy sorts: [FetchSortDescriptor] = [FetchSortDescriptor(key: "title")],
                    limit: Int = 0, in context: ManagedObjectContext) throws -> [String] {
            let request = FetchRequest<ManagedObject>(entityName: "Note")
            request.predicate = FetchPredicate(format: format, argumentArray: arguments)
            request.sortDescriptors = sorts
            request.fetchLimit = limit
            return try context.fetch(request).compactMap { $0.value(forKey: "title") as? String }
        }
        let work = try context.all("Folder").first { $0.value(forKey: "name") as? String == "Work" }!
        let sql = try context.all("Tag").first { $0.value(forKey: "name") as? String == "sql" }!
        // Refetched, so that no note is registered with changes: only the folder and the tag change.
        context.reset()
        let renamed = context.object(with: work.objectID)
        renamed.setValue("Archive", forKey: "name")
        context.object(with: sql.objectID).setValue("sqlite", forKey: "name")
        #expect(context.updatedObjects.allSatisfy { $0.entity.name != "Note" })

        #expect(try titles("folder.name == %@", ["Archive"], in: context) == ["100% done", "Héllo", "Zebra"])
        #expect(try titles("folder.name == %@", ["Work"], in: context) == [])
        #expect(try titles("ANY tags.name == %@", ["sqlite"], in: context) == ["100% done", "hello world"])
        #expect(try titles("SUBQUERY(tags, $t, $t.name == %@).@count > 0", ["sql"], in: context) == [])
        // The store would order by the saved name ("Work" after "Inbox"); "Archive" comes first.
        let byFolder = try titles(
            "folder != nil", sortedBy: [FetchSortDescriptor(key: "folder.name"), FetchSortDescriptor(key: "rank")], limit: 3, in: context)
        #expect(byFolder == ["Zebra", "Héllo", "100% done"])
        let count = FetchRequest<ManagedObject>(entityName: "Note")
        count.predicate = FetchPredicate(format: "folder.name == %@", argumentArray: ["Archive"])
        #expect(try context.count(for: count) == 3)

        // A child sees its parent's unsaved rename the same way.
        let child = ManagedObjectContext(concurrencyType: .confinement)
        child.parent = context
        #expect(try titles("folder.name == %@", ["Archive"], in: child) == ["100% done", "Héllo", "Zebra"])
        // A comparison of the relationship itself reads nothing of the folder: the store answers it.
        #expect(try titles("folder == %@", [renamed.objectID], in: context) == ["100% done", "Héllo", "Zebra"])
        // Another context, without the changes, still sees the saved names.
        #expect(try titles("folder.name == %@", ["Work"], in: stack.context("other")) == ["100% done", "Héllo", "Zebra"])
    }

    @Test func aMalformedPredicateThrowsAtTheFetchWithThePosition() throws {
        let stack = try TestStack(.sqlite)
        let request = FetchRequest<ManagedObject>(entityName: "Note")
        request.predicate = FetchPredicate(format: "title == 'a' AND rank >")
        let error = try #require(throws: ObjectGraphError.self) { try stack.context().fetch(request) }
        #expect(error.code == .predicateSyntax)
        #expect(error.position == 23)
        #expect(throws: ObjectGraphError.predicateSyntax) { try FetchPredicate.parse(format: "title ==") }
        request.predicate = FetchPredicate(format: "nope == 1")
        #expect(throws: ObjectGraphError.invalidFetchRequest) { try stack.context().fetch(request) }
    }

    @Test func predicatesEvaluateAgainstObjects() throws {
        let stack = try TestStack(.inMemory)
        let context = stack.context()
        let note = context.insert("Note", ["title": "Hello", "rank": 3])
        #expect(try FetchPredicate(format: "rank == 3 AND title BEGINSWITH 'H'").evaluate(with: note))
        #expect(try !note.matches(FetchPredicate(format: "rank > 3")))
    }
}
