import Foundation
import Testing
import ObjectGraph
@testable import ObjectGraphCore

@Suite("#Predicate translation")
struct PredicateTranslationTests {
    static let cutoff = Date(timeIntervalSinceReferenceDate: 350)

    /// Folders Inbox and Work; tags swift and sql; notes with titles, ranks, some dates and tags.
    static func populate(_ context: ManagedObjectContext) {
        let inbox = Folder(context: context)
        inbox.name = "Inbox"
        let work = Folder(context: context)
        work.name = "Work"
        let swift = Tag(context: context)
        swift.name = "swift"
        let sql = Tag(context: context)
        sql.name = "sql"
        let rows: [(String, Int64, Folder?, Set<Tag>, Bool)] = [
            ("Hello", 5, inbox, [swift], true), ("hello world", 3, inbox, [swift, sql], false), ("Héllo", 8, work, [], true),
            ("Groceries", 1, nil, [], true), ("100% done", 9, work, [sql], false), ("under_score", 2, nil, [], true),
            ("Zebra", 7, work, [swift], true), ("apple", 4, inbox, [], false),
        ]
        for (i, row) in rows.enumerated() {
            let note = Note(context: context)
            note.title = row.0
            note.rank = row.1
            note.slug = "n\(i)"
            note.folder = row.2
            note.tags = row.3
            note.created = row.4 ? Date(timeIntervalSinceReferenceDate: Double(i * 100)) : nil
        }
    }

    /// One predicate per supported node (and a few combinations), named for the failure message.
    static func predicates() -> [(String, Predicate<Note>)] {
        let cutoff = Self.cutoff
        let limit: Int64 = 2
        let never = Date.distantFuture
        let (same, ascending, descending) = (ComparisonResult.orderedSame, ComparisonResult.orderedAscending, ComparisonResult.orderedDescending)
        let wanted = ["Zebra", "apple"]
        return [
            ("comparison", #Predicate<Note> { $0.rank > 3 }),
            ("conjunction", #Predicate<Note> { $0.rank >= 3 && $0.rank < 8 }),
            ("disjunction and equality", #Predicate<Note> { $0.rank == 1 || $0.title == "Zebra" }),
            ("negation", #Predicate<Note> { !($0.rank < 5) }),
            ("inequality", #Predicate<Note> { $0.title != "Hello" }),
            ("key path through to-one", #Predicate<Note> { $0.rank > 3 && $0.folder?.name == "Inbox" }),
            ("optional chaining is nil-inclusive for !=", #Predicate<Note> { $0.folder?.name != "Work" }),
            ("nil check on a relationship", #Predicate<Note> { $0.folder == nil }),
            ("nil check on an attribute", #Predicate<Note> { $0.created != nil }),
            ("nil coalescing", #Predicate<Note> { ($0.created ?? never) > cutoff }),
            ("flatMap", #Predicate<Note> { $0.created.flatMap { $0 < cutoff } ?? false }),
            ("flatMap compared with true", #Predicate<Note> { $0.folder.flatMap { $0.name == "Work" } == true }),
            ("flatMap defaulting to true", #Predicate<Note> { $0.created.flatMap { $0 < cutoff } ?? true }),
            ("contains is case-sensitive", #Predicate<Note> { $0.title.contains("ello") }),
            ("% is literal", #Predicate<Note> { $0.title.contains("%") }),
            ("_ is literal", #Predicate<Note> { $0.title.contains("_") }),
            ("starts(with:)", #Predicate<Note> { $0.title.starts(with: "He") }),
            ("localizedStandardContains", #Predicate<Note> { $0.title.localizedStandardContains("HELLO") }),
            ("caseInsensitiveCompare same", #Predicate<Note> { $0.title.caseInsensitiveCompare("hello") == same }),
            ("caseInsensitiveCompare ascending", #Predicate<Note> { $0.title.caseInsensitiveCompare("m") == ascending }),
            ("caseInsensitiveCompare not descending", #Predicate<Note> { $0.title.caseInsensitiveCompare("h") != descending }),
            ("constant collection contains", #Predicate<Note> { wanted.contains($0.title) }),
            ("literal collection contains", #Predicate<Note> { [1, 9].contains($0.rank) }),
            ("closed range", #Predicate<Note> { (2...4).contains($0.rank) }),
            ("half-open range", #Predicate<Note> { (2..<4).contains($0.rank) }),
            ("contains(where:)", #Predicate<Note> { $0.tags.contains { $0.name == "sql" } }),
            ("contains(where:) with ||", #Predicate<Note> { $0.tags.contains { $0.name == "sql" || $0.name.starts(with: "sw") } }),
            ("contains(where:) with !", #Predicate<Note> { $0.tags.contains { !($0.name == "sql") } }),
            ("allSatisfy", #Predicate<Note> { $0.tags.allSatisfy { $0.name == "swift" } }),
            ("allSatisfy with &&", #Predicate<Note> { $0.tags.allSatisfy { $0.name != "sql" && $0.name.contains("s") } }),
            ("count", #Predicate<Note> { $0.tags.count >= 2 }),
            ("isEmpty", #Predicate<Note> { !$0.tags.isEmpty }),
            ("to-many from the other side", #Predicate<Note> { $0.folder.flatMap { $0.notes.count > 2 } ?? false }),
            ("contains(where:) with && on one element", #Predicate<Note> { $0.tags.contains { $0.name == "sql" && $0.name == "swift" } }),
            ("contains(where:) with && and a count", #Predicate<Note> { $0.tags.contains { $0.name.starts(with: "s") && $0.notes.count > 2 } }),
            ("allSatisfy with ||", #Predicate<Note> { $0.tags.allSatisfy { $0.name == "swift" || $0.notes.count > 2 } }),
            ("nested contains(where:)", #Predicate<Note> { $0.tags.contains { $0.notes.contains { $0.rank > 8 && $0.title.contains("done") } } }),
            ("an element compared with the fetched object", #Predicate<Note> { note in note.tags.contains { $0.notes.contains { $0.rank > note.rank } } }),
            ("arithmetic, multiplication", #Predicate<Note> { $0.rank * 2 > 9 }),
            ("integer division", #Predicate<Note> { $0.rank / 2 == 2 }),
            ("remainder", #Predicate<Note> { $0.rank % 3 == 1 }),
            ("unary minus", #Predicate<Note> { -$0.rank < -6 }),
            ("parenthesized arithmetic", #Predicate<Note> { ($0.rank + 1) * 2 == 10 }),
            ("arithmetic on counts", #Predicate<Note> { $0.tags.count * 4 > 5 }),
            ("arithmetic on both sides", #Predicate<Note> { $0.rank * 2 > $0.rank + 6 }),
            ("integer arithmetic", #Predicate<Note> { $0.rank + 1 > 5 }),
            ("integer arithmetic, subtraction", #Predicate<Note> { $0.rank - 2 == 1 }),
            ("captured constants folded", #Predicate<Note> { $0.rank > limit * 2 }),
            ("constant condition", #Predicate<Note> { _ in limit > 1 }),
            ("bool literal", #Predicate<Note> { _ in false }),
        ]
    }

    /// Titles of the objects matching `predicate`, by Swift's own evaluation.
    static func swiftAnswer(_ predicate: Predicate<Note>, in context: ManagedObjectContext) throws -> Set<String> {
        let all = try context.fetch(FetchDescriptor<Note>())
        return Set(try all.filter { try predicate.evaluate($0) }.map(\.title))
    }

    @Test(arguments: StoreKind.sqliteInMemoryAndPostgres)
    func everyNodeGivesSwiftsAnswerInTheStoreAndOverPendingChanges(_ kind: StoreKind) throws {
        let stack = try TestStack(kind, model: TestModels.typed())
        let writer = stack.context("writer")
        Self.populate(writer)
        try writer.save()
        let saved = stack.context("saved")
        let pending = stack.context("pending")
        Self.populate(pending)
        var answers: Set<Set<String>> = []
        for (name, predicate) in Self.predicates() {
            let expected = try Self.swiftAnswer(predicate, in: saved)
            answers.insert(expected)
            let fromStore = Set(try saved.fetch(FetchDescriptor(predicate: predicate)).map(\.title))
            #expect(fromStore == expected, "\(name) from the \(kind) store")
            let fromPending = Set(try pending.fetch(FetchDescriptor(predicate: predicate)).map(\.title))
            #expect(fromPending == expected, "\(name) over pending changes")
            let fetchPredicate = FetchPredicate(predicate)
            let inMemory = Set(try pending.fetch(FetchDescriptor<Note>()).filter { try fetchPredicate.evaluate(with: $0) }.map(\.title))
            #expect(inMemory == expected, "\(name) evaluated in memory")
            #expect(try saved.fetchCount(FetchDescriptor(predicate: predicate)) == expected.count, "\(name) count")
        }
        // The cases tell the notes apart: a translation that ignored its node would disagree somewhere.
        #expect(answers.count >= 25)
    }

    @Test func theDesignExampleTranslatesToTheFormatItMeans() throws {
        let predicate = FetchPredicate(#Predicate<Note> { $0.rank > 3 && $0.folder?.name == "Inbox" })
        #expect(predicate == FetchPredicate(format: "rank > 3 AND folder.name == 'Inbox'"))
        #expect(FetchPredicate(#Predicate<Note> { $0.title.starts(with: "H") }).predicateFormat == "title BEGINSWITH \"H\"")
        #expect(FetchPredicate(#Predicate<Note> { $0.tags.contains { $0.name == "sql" } }).predicateFormat == "ANY tags.name == \"sql\"")
        #expect(FetchPredicate(#Predicate<Note> { $0.tags.allSatisfy { $0.name == "sql" } }).predicateFormat == "ALL tags.name == \"sql\"")
        #expect(FetchPredicate(#Predicate<Note> { $0.title.localizedStandardContains("x") }).predicateFormat == "title CONTAINS[cd] \"x\"")
        #expect(FetchPredicate(#Predicate<Note> { $0.tags.isEmpty }).predicateFormat == "tags.@count == 0")
        #expect(FetchPredicate(#Predicate<Note> { $0.rank * 2 > 5 }).predicateFormat == "rank * 2 > 5")
        #expect(FetchPredicate(#Predicate<Note> { ($0.rank + 1) % 3 == 0 }).predicateFormat == "modulus:by:(rank + 1, 3) == 0")
        #expect(
            FetchPredicate(#Predicate<Note> { $0.tags.contains { $0.name == "a" && $0.name == "b" } }).predicateFormat
                == "SUBQUERY(tags, $v1, $v1.name == \"a\" AND $v1.name == \"b\").@count > 0")
        #expect(
            FetchPredicate(#Predicate<Note> { $0.tags.allSatisfy { $0.name == "a" || $0.name == "b" } }).predicateFormat
                == "SUBQUERY(tags, $v1, NOT ($v1.name == \"a\" OR $v1.name == \"b\")).@count == 0")
    }

    @Test func anUntranslatableNodeThrowsAnErrorNamingIt() throws {
        let stack = try TestStack(.sqlite, model: TestModels.typed())
        let context = stack.context()
        Self.populate(context)
        try context.save()
        let cases: [(Predicate<Note>, String)] = [
            (#Predicate<Note> { $0.title.count > 5 }, "KeyPath"),
            (#Predicate<Note> { $0.scratch > 0 }, "scratch"),
            (#Predicate<Note> { $0.tags.contains { $0.name.count > 2 } }, "KeyPath"),
        ]
        for (predicate, named) in cases {
            do {
                _ = try context.fetch(FetchDescriptor(predicate: predicate))
                Issue.record("expected \(named) to be refused")
            } catch let error as ObjectGraphError {
                #expect(error.code == .unsupported)
                #expect(error.message.contains(named), "\(error.message)")
            }
            #expect(throws: ObjectGraphError.self) { try FetchPredicate(translating: predicate) }
            let deferred = Note.fetchRequest()
            deferred.predicate = FetchPredicate(predicate)
            #expect(throws: ObjectGraphError.self) { try context.fetch(deferred) }
        }
    }

    @Test(arguments: StoreKind.sqliteInMemoryAndPostgres)
    func fetchDescriptorsSortLimitCountAndReturnIdentifiers(_ kind: StoreKind) throws {
        let stack = try TestStack(kind, model: TestModels.typed())
        let writer = stack.context("writer")
        Self.populate(writer)
        try writer.save()
        let context = stack.context()
        var descriptor = FetchDescriptor<Note>(
            predicate: #Predicate { $0.rank > 3 && $0.folder?.name == "Inbox" }, sortBy: [SortDescriptor(\.rank, order: .reverse)])
        #expect(try context.fetch(descriptor).map(\.title) == ["Hello", "apple"])
        descriptor.fetchLimit = 1
        #expect(try context.fetch(descriptor).map(\.title) == ["Hello"])
        descriptor.fetchOffset = 1
        #expect(try context.fetch(descriptor).map(\.title) == ["apple"])
        #expect(try context.fetchCount(descriptor) == 1)

        let byTitle = FetchDescriptor<Note>(sortBy: [SortDescriptor(\.title, comparator: .lexical)])
        #expect(try context.fetch(byTitle).map(\.title) == ["100% done", "Groceries", "Hello", "Héllo", "Zebra", "apple", "hello world", "under_score"])
        let caseless = FetchDescriptor<Note>(sortBy: [FetchSortDescriptor(key: "title", ascending: false, caseInsensitive: true)])
        #expect(try context.fetch(caseless).first?.title == "Zebra")
        let byDate = FetchDescriptor<Note>(predicate: #Predicate { $0.rank < 5 }, sortBy: [SortDescriptor(\.created), SortDescriptor(\.rank)])
        #expect(try context.fetch(byDate).map(\.title) == ["hello world", "apple", "Groceries", "under_score"])
        let throughFolder = FetchDescriptor<Note>(
            predicate: #Predicate { $0.folder != nil },
            sortBy: [FetchSortDescriptor(key: "folder.name", ascending: false), FetchSortDescriptor(key: "rank")])
        #expect(try context.fetch(throughFolder).map(\.title) == ["Zebra", "Héllo", "100% done", "hello world", "apple", "Hello"])

        let ids = try context.fetchIdentifiers(FetchDescriptor<Note>(predicate: #Predicate { $0.rank >= 8 }, sortBy: [SortDescriptor(\.rank)]))
        #expect(ids.count == 2)
        #expect(try ids.map { try #require(context.existingObject(with: $0) as? Note).title } == ["Héllo", "100% done"])

        var prefetching = FetchDescriptor<Note>(predicate: #Predicate { $0.folder != nil })
        prefetching.relationshipKeyPathsForPrefetching = [\.folder, \.tags]
        prefetching.propertiesToFetch = [\.title, \.rank]
        #expect(try context.fetch(prefetching).count == 6)
        var transient = FetchDescriptor<Note>()
        transient.relationshipKeyPathsForPrefetching = [\.scratch]
        #expect(throws: ObjectGraphError.self) { try context.fetch(transient) }
        let computed = FetchDescriptor<Sample>(sortBy: [SortDescriptor(\.computed)])
        #expect(throws: ObjectGraphError.self) { try context.fetch(computed) }
    }

    @Test func pendingChangesAreIncludedUnlessTheDescriptorSaysNot() throws {
        let stack = try TestStack(.sqlite, model: TestModels.typed())
        let context = stack.context()
        Self.populate(context)
        try context.save()
        let note = Note(context: context)
        note.title = "Unsaved"
        note.rank = 100
        var descriptor = FetchDescriptor<Note>(predicate: #Predicate { $0.rank > 50 })
        #expect(try context.fetch(descriptor).map(\.title) == ["Unsaved"])
        descriptor.includePendingChanges = false
        #expect(try context.fetch(descriptor).isEmpty)
    }

    @Test func aDescriptorCrossesToAnotherQueue() async throws {
        let stack = try TestStack(.sqlite, model: TestModels.typed())
        let writer = stack.context("writer")
        Self.populate(writer)
        try writer.save()
        let descriptor = FetchDescriptor<Note>(predicate: #Predicate { $0.rank > 4 }, sortBy: [SortDescriptor(\.rank)])
        let worker = stack.privateContext()
        let titles = try await worker.perform { try worker.fetch(descriptor).map(\.title) }
        #expect(titles == ["Hello", "Zebra", "Héllo", "100% done"])
    }

    @Test func coreDataStyleRequestsTakeSwiftPredicates() throws {
        let stack = try TestStack(.sqlite, model: TestModels.typed())
        let context = stack.context()
        Self.populate(context)
        try context.save()
        let request = Note.fetchRequest()
        request.predicate = FetchPredicate(#Predicate<Note> { $0.title.starts(with: "H") })
        request.sortDescriptors = [FetchSortDescriptor(key: "title")]
        let notes: [Note] = try context.fetch(request)
        #expect(notes.map(\.title) == ["Hello", "Héllo"])
    }
}

@Suite("#Predicate with captured objects and enums")
struct PredicateCapturesTests {
    @Test(arguments: StoreKind.sqliteInMemoryAndPostgres)
    func capturedObjectsCompareByIdentityAndEnumsByRawValue(_ kind: StoreKind) throws {
        let stack = try TestStack(kind, model: TestModels.typed())
        let writer = stack.context("writer")
        PredicateTranslationTests.populate(writer)
        for (i, priority) in [Priority.low, .high, .high].enumerated() {
            let sample = Sample(context: writer)
            sample.priority = priority
            sample.size = i == 0 ? nil : .small
        }
        try writer.save()
        let context = stack.context()
        let inbox = try #require(try context.fetch(FetchDescriptor<Folder>(predicate: #Predicate { $0.name == "Inbox" })).first)
        let inboxID = inbox.objectID
        let inInbox = try context.fetch(FetchDescriptor<Note>(predicate: #Predicate { $0.folder?.objectID == inboxID }))
        #expect(Set(inInbox.map(\.title)) == ["Hello", "hello world", "apple"])
        #expect(inInbox.allSatisfy { $0.folder?.objectID == inboxID })
        let sql = try #require(try context.fetch(FetchDescriptor<Tag>(predicate: #Predicate { $0.name == "sql" })).first)
        let sqlID = sql.objectID
        let tagged = try context.fetch(FetchDescriptor<Note>(predicate: #Predicate { $0.tags.contains { $0.objectID == sqlID } }))
        #expect(Set(tagged.map(\.title)) == ["hello world", "100% done"])

        let high = Priority.high
        #expect(try context.fetchCount(FetchDescriptor<Sample>(predicate: #Predicate { $0.priority == high })) == 2)
        #expect(try context.fetchCount(FetchDescriptor<Sample>(predicate: #Predicate { $0.size == nil })) == 1)
        #expect(try context.fetchCount(FetchDescriptor<Sample>(predicate: #Predicate { $0.priority != high })) == 1)
    }

    @Test func objectIDsEncodeAsURIsAndDecodeThroughACoordinator() throws {
        let stack = try TestStack(.sqlite, model: TestModels.typed())
        let context = stack.context()
        let note = Note(context: context)
        try context.save()
        let data = try JSONEncoder().encode([note.objectID])
        #expect(throws: DecodingError.self) { try JSONDecoder().decode([ManagedObjectID].self, from: data) }
        let decoder = JSONDecoder()
        decoder.userInfo[.persistentStoreCoordinator] = stack.coordinator
        #expect(try decoder.decode([ManagedObjectID].self, from: data) == [note.objectID])
    }

    @Test func anInverseNamingAnAttributeMakesAnInvalidModel() {
        let model = ManagedObjectModel(types: [Shelf.self, Folder.self, Note.self, Tag.self])
        #expect(throws: ObjectGraphError.self) { try model.validate() }
    }
}

extension PredicateTranslationTests {
    /// Arithmetic on each numeric type gives Swift's answer, from the store and over pending changes:
    /// integer division truncates, `Double` division does not, optionals propagate nil.
    @Test(arguments: StoreKind.sqliteInMemoryAndPostgres)
    func arithmeticOnEveryNumericTypeGivesSwiftsAnswer(_ kind: StoreKind) throws {
        let stack = try TestStack(kind, model: TestModels.typed())
        func populate(_ context: ManagedObjectContext) {
            let rows: [(Int, Int16, Int32?, Double, Float?)] = [
                (7, 3, 5, 1.5, 2.5), (-7, -3, nil, -0.5, nil), (8, 4, 0, 3, 0.25), (0, 0, -2, 0, -1), (13, 9, 6, 2.25, 4),
            ]
            for (i, row) in rows.enumerated() {
                let sample = Sample(context: context)
                (sample.int, sample.int16, sample.int32, sample.double, sample.float) = row
                sample.int64 = Int64(i)
                sample.decimal = Decimal(i) / 4
                sample.flag = i % 2 == 0
            }
        }
        let writer = stack.context("writer")
        populate(writer)
        try writer.save()
        let saved = stack.context("saved")
        let pending = stack.context("pending")
        populate(pending)
        let cases: [(String, Predicate<Sample>)] = [
            ("Int division truncates", #Predicate<Sample> { $0.int / 2 == 3 }),
            ("negative Int division truncates toward zero", #Predicate<Sample> { $0.int / 2 == -3 }),
            ("Int remainder keeps the dividend's sign", #Predicate<Sample> { $0.int % 4 == -3 }),
            ("Int16", #Predicate<Sample> { $0.int16 * 3 > 8 }),
            ("optional Int32 through flatMap", #Predicate<Sample> { $0.int32.flatMap { $0 + 1 > 1 } ?? false }),
            ("Double division", #Predicate<Sample> { $0.double / 2 > 0.7 }),
            ("Double subtraction", #Predicate<Sample> { $0.double - 1 < 0 }),
            ("optional Float", #Predicate<Sample> { $0.float.flatMap { $0 * 2 >= 5 } ?? false }),
            ("Decimal", #Predicate<Sample> { $0.decimal * 4 == 2 }),
            ("a stored value times itself", #Predicate<Sample> { $0.int * $0.int > 50 }),
            ("unary minus on a Double", #Predicate<Sample> { -$0.double > 0 }),
        ]
        var answers: Set<Set<Int>> = []
        for (name, predicate) in cases {
            let expected = Set(try saved.fetch(FetchDescriptor<Sample>()).filter { try predicate.evaluate($0) }.map(\.int))
            answers.insert(expected)
            #expect(Set(try saved.fetch(FetchDescriptor(predicate: predicate)).map(\.int)) == expected, "\(name) from the \(kind) store")
            #expect(Set(try pending.fetch(FetchDescriptor(predicate: predicate)).map(\.int)) == expected, "\(name) over pending changes")
        }
        #expect(answers.count >= 6)
    }
}
