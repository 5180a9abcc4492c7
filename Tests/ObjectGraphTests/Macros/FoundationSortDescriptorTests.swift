import Foundation
import ObjectGraph
import Testing

// Not a testable import: the file sees ObjectGraph's public API and Foundation's, as an app does,
// so `SortDescriptor` here can only be Foundation's.

@Suite("Foundation's SortDescriptor orders typed fetches")
struct FoundationSortDescriptorTests {
    /// Titles of the notes of `PredicateTranslationTests.populate`, largest rank first.
    static let byRankReversed = ["100% done", "Héllo", "Zebra", "Hello", "apple", "hello world", "under_score", "Groceries"]

    @Test(arguments: StoreKind.sqliteInMemoryAndPostgres)
    func anArrayOfFoundationSortDescriptorsOrdersAFetchAsItOrdersAnArray(_ kind: StoreKind) throws {
        let s: [SortDescriptor<Note>] = [SortDescriptor(\.rank, order: .reverse)]
        let stack = try TestStack(kind, model: TestModels.typed())
        let writer = stack.context("writer")
        PredicateTranslationTests.populate(writer)
        #expect(try writer.fetch(FetchDescriptor(sortBy: s)).map(\.title) == Self.byRankReversed, "inserted, unsaved")
        try writer.save()

        let context = stack.context("reader")
        let notes = try context.fetch(FetchDescriptor(sortBy: s))
        #expect(notes.map(\.title) == Self.byRankReversed)
        #expect(notes.map(\.rank) == [9, 8, 7, 5, 4, 3, 2, 1])
        #expect(notes.reversed().sorted(using: s) == notes, "Foundation sorts an array by the same descriptors in the same order")
        var limited = FetchDescriptor<Note>(predicate: #Predicate { $0.folder != nil }, sortBy: s)
        limited.fetchLimit = 2
        #expect(try context.fetch(limited).map(\.title) == ["100% done", "Héllo"])
    }

    @Test func theDescriptorsKeyPathAndOrderBecomeAKeyedDescriptor() throws {
        let s: [SortDescriptor<Note>] = [
            SortDescriptor(\.rank, order: .reverse), SortDescriptor(\.title), SortDescriptor(\.title, comparator: .lexical, order: .reverse),
            SortDescriptor(\.created), SortDescriptor(\.folder?.name),
        ]
        let keyPaths: [PartialKeyPath<Note>?] = [\Note.rank, \Note.title, \Note.title, \Note.created, \Note.folder?.name]
        #expect(s.map(\.keyPath) == keyPaths)
        #expect(try s.map { try $0.fetchSortDescriptor() } == [
            FetchSortDescriptor(key: "rank", ascending: false), FetchSortDescriptor(key: "title"),
            FetchSortDescriptor(key: "title", ascending: false, caseInsensitive: false), FetchSortDescriptor(key: "created"),
            FetchSortDescriptor(key: "folder.name"),
        ])
        #if canImport(Darwin)
        #expect(try SortDescriptor(\Note.title, comparator: .localizedStandard).fetchSortDescriptor().caseInsensitive)
        #expect(try SortDescriptor(\Note.title, comparator: .localized, order: .reverse).fetchSortDescriptor()
            == FetchSortDescriptor(key: "title", ascending: false, caseInsensitive: true))
        #endif
    }

    @Test(arguments: StoreKind.sqliteInMemoryAndPostgres)
    func aToOneRelationshipItselfIsOrderedByItsKey(_ kind: StoreKind) throws {
        let stack = try TestStack(kind, model: TestModels.typed())
        let writer = stack.context("writer")
        PredicateTranslationTests.populate(writer)
        try writer.save()
        let context = stack.context("reader")
        // Foundation cannot name a key path to a relationship (its destination is not Comparable):
        // FetchSortDescriptor(key:) orders by the destination's row, after the typed descriptors.
        var descriptor = FetchDescriptor<Note>(sortBy: [SortDescriptor(\.folder?.name, order: .reverse)])
        descriptor.sortDescriptors = [FetchSortDescriptor(key: "folder"), FetchSortDescriptor(key: "rank")]
        #expect(try context.fetch(descriptor).map(\.title) == ["Zebra", "Héllo", "100% done", "hello world", "apple", "Hello", "Groceries", "under_score"])

        let byFolder = try context.fetch(FetchDescriptor<Note>(sortBy: [FetchSortDescriptor(key: "folder"), FetchSortDescriptor(key: "title")]))
        let folders = byFolder.map { $0.folder?.name }
        #expect(folders.prefix(2) == [nil, nil], "notes without a folder come first")
        #expect(Set(folders.dropFirst(2)) == ["Inbox", "Work"])
        let grouped = folders.dropFirst(2)
        #expect(zip(grouped, grouped.dropFirst()).filter { $0 != $1 }.count == 1, "each folder's notes are together")
        #expect(byFolder.prefix(2).map(\.title) == ["Groceries", "under_score"])
    }
}
