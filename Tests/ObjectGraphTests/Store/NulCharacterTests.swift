import Foundation
import Testing
import ObjectGraph
@testable import ObjectGraphCore

/// A string that holds U+0000 is a string like any other: it is stored, compared, matched, batch
/// updated, deleted, kept in history and given as a migration default whole. (GRDB binds and
/// reads text as C strings, which end at U+0000: "a\0b" was bound as "a", so a fetch, a count
/// and a batch delete for "a\0b" took the row "a".)
@Suite("Strings holding U+0000 are compared and kept whole")
struct NulCharacterTests {
    static let titles = ["", "a", "a\0b", "a\0", "\0", "ab", "A\0B"]

    /// One note per title, ranked by its position; their IDs by title.
    private func seed(_ stack: TestStack) throws -> [String: ManagedObjectID] {
        let context = stack.context("seed")
        let notes = Self.titles.enumerated().map { context.insert("Note", ["title": $0.element, "rank": Int64($0.offset)]) }
        try context.save()
        return Dictionary(uniqueKeysWithValues: zip(Self.titles, notes.map(\.objectID)))
    }

    private func titles(_ format: String, _ arguments: [any Sendable], _ stack: TestStack) throws -> [String] {
        let request = FetchRequest<ManagedObject>(entityName: "Note")
        request.predicate = FetchPredicate(format: format, argumentArray: arguments)
        request.sortDescriptors = [FetchSortDescriptor(key: "rank")]
        let fetched = try stack.context("reader").fetch(request).map { $0.value(forKey: "title") as? String ?? "?" }
        #expect(try stack.context("counter").count(for: request) == fetched.count, "count of \(format)")
        // In memory the predicate selects the same notes.
        let all = try stack.context("memory").all("Note", sortedBy: "rank")
        #expect(try all.filter { try request.predicate!.evaluate(with: $0) }.map { $0.value(forKey: "title") as? String ?? "?" } == fetched, "\(format)")
        return fetched
    }

    @Test(arguments: StoreKind.allCases)
    func fetchesAndCountsCompareTheWholeString(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        _ = try seed(stack)
        #expect(try stack.context().all("Note", sortedBy: "rank").map { $0.value(forKey: "title") as? String } == Self.titles)
        #expect(try titles("title == %@", ["a\0b"], stack) == ["a\0b"])
        #expect(try titles("title == %@", ["\0"], stack) == ["\0"])
        #expect(try titles("title != %@", ["a\0b"], stack) == Self.titles.filter { $0 != "a\0b" })
        #expect(try titles("title IN %@", [["\0%", "a\0"]], stack) == ["a\0"])
        #expect(try titles("title IN {'\\0', 'zz'}", [], stack) == ["\0"])
        #expect(try titles("title ==[c] %@", ["a\0B"], stack) == ["a\0b", "A\0B"])
        #expect(try titles("title BEGINSWITH %@", ["a\0"], stack) == ["a\0b", "a\0"])
        #expect(try titles("title BEGINSWITH[c] %@", ["a\0"], stack) == ["a\0b", "a\0", "A\0B"])
        #expect(try titles("title ENDSWITH %@", ["\0b"], stack) == ["a\0b"])
        #expect(try titles("title CONTAINS[c] %@", ["\0b"], stack) == ["a\0b", "A\0B"])
        #expect(try titles("title LIKE %@", ["a?b"], stack) == ["a\0b"])
        #expect(try titles("title > %@", ["a\0"], stack) == ["a\0b", "ab"])
        // A list long enough to be bound as one JSON array (compared by hexadecimal spelling).
        let long = (0..<40).map { "x\($0)" } + ["a\0b"]
        #expect(try titles("title IN %@", [long], stack) == ["a\0b"])
    }

    @Test(arguments: StoreKind.allCases)
    func aBatchDeleteTakesOnlyTheRowsWhoseWholeStringMatches(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        let ids = try seed(stack)
        let delete = BatchDeleteRequest(fetchRequest: FetchRequest<ManagedObject>(entityName: "Note"))
        delete.fetchRequest.predicate = FetchPredicate(format: "title == %@", "a\0b")
        delete.resultType = .objectIDs
        let deleted = try #require((try stack.context().execute(delete) as? BatchDeleteResult)?.result as? [ManagedObjectID])
        #expect(deleted == [ids["a\0b"]!])
        #expect(try stack.context("check").all("Note", sortedBy: "rank").map { $0.value(forKey: "title") as? String } == Self.titles.filter { $0 != "a\0b" })
    }

    @Test(arguments: StoreKind.allCases)
    func aBatchUpdateMatchesAndWritesTheWholeString(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        let ids = try seed(stack)
        let update = BatchUpdateRequest(entityName: "Note")
        update.predicate = FetchPredicate(format: "title == %@", "\0")
        update.propertiesToUpdate = ["title": "x\0y\0"]
        update.resultType = .updatedObjectIDs
        let updated = try #require((try stack.context().execute(update) as? BatchUpdateResult)?.result as? [ManagedObjectID])
        #expect(updated == [ids["\0"]!])
        #expect(try stack.context("check").existingObject(with: ids["\0"]!).value(forKey: "title") as? String == "x\0y\0")
        #expect(try stack.context("check").existingObject(with: ids[""]!).value(forKey: "title") as? String == "")
    }

    @Test func aDeletedObjectsTombstoneKeepsTheWholeString() throws {
        let stack = try HistoryStack()
        let context = stack.context()
        let note = context.insert("Note", ["title": "keep\0this", "rank": Int64(1)])
        try context.save()
        let token = stack.coordinator.currentPersistentHistoryToken(fromStores: nil)
        context.delete(note)
        try context.save()
        let delete = try #require(try stack.transactions(after: token).first?.changes?.first)
        #expect(delete.changeType == .delete)
        #expect(delete.tombstone?["title"] as? String == "keep\0this")
    }

    @Test(arguments: Migrating.fileTypes)
    func aMigrationDefaultKeepsTheWholeString(_ type: StoreType) throws {
        let directory = TemporaryDirectory()
        let url = directory.file("items")
        let v1 = ManagedObjectModel(entities: [EntityDescription(name: "Item", properties: [.attribute("size", .integer64)])])
        try Migrating.with(v1, type, at: url) { (context: ManagedObjectContext) throws in
            context.insertNewObject(forEntityName: "Item").setValue(Int64(1), forKey: "size")
        }
        let v2 = ManagedObjectModel(entities: [EntityDescription(name: "Item", properties: [
            .attribute("size", .integer64), .attribute("label", .string, isOptional: false, defaultValue: "a\0b"),
        ])])
        try Migrating.with(v2, type, at: url, options: Migrating.from(v1)) { (context: ManagedObjectContext) throws in
            #expect(try Migrating.fetch("Item", in: context).map { $0.value(forKey: "label") as? String } == ["a\0b"])
        }
    }
}
