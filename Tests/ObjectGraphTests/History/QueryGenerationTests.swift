import Foundation
import Testing
import ObjectGraph
@testable import ObjectGraphCore

@Suite("Query generations")
struct QueryGenerationTests {
    /// A stack with three notes saved, and a second context that commits more after the pin.
    private func seeded(_ kind: StoreKind) throws -> (TestStack, [ManagedObjectID]) {
        let stack = try TestStack(kind)
        let context = stack.context("seed")
        let notes = (0..<3).map { context.insert("Note", ["title": "n\($0)", "rank": Int64($0)]) }
        try context.save()
        return (stack, notes.map(\.objectID))
    }

    private func commitElsewhere(_ stack: TestStack, _ body: (ManagedObjectContext) throws -> Void) throws {
        let writer = stack.context("writer")
        try body(writer)
        try writer.save()
    }

    @Test(arguments: StoreKind.everyStore)
    func aPinnedContextFetchesAndCountsItsGeneration(_ kind: StoreKind) throws {
        let (stack, _) = try seeded(kind)
        let pinned = stack.context("pinned")
        #expect(pinned.queryGenerationToken == nil)
        try pinned.setQueryGenerationFrom(.current)
        #expect(pinned.queryGenerationToken != nil)
        #expect(pinned.queryGenerationToken != .current)

        try commitElsewhere(stack) { $0.insert("Note", ["title": "later", "rank": Int64(9)]) }
        let request = FetchRequest<ManagedObject>(entityName: "Note")
        #expect(try pinned.fetch(request).count == 3)
        #expect(try pinned.count(for: request) == 3)
        let ids = FetchRequest<ManagedObjectID>(entityName: "Note")
        #expect(try pinned.fetch(ids).count == 3)
        let dictionaries = FetchRequest<[String: Any]>(entityName: "Note")
        #expect(try pinned.fetch(dictionaries).count == 3)
        // An unpinned context sees the commit.
        #expect(try stack.context("latest").count(for: request) == 4)

        try pinned.setQueryGenerationFrom(nil)
        #expect(pinned.queryGenerationToken == nil)
        #expect(try pinned.count(for: request) == 4)
    }

    @Test(arguments: StoreKind.everyStore)
    func dictionaryAndBatchedFetchesOfAChildReadItsChainsGeneration(_ kind: StoreKind) throws {
        let chain = try ContextChain(kind)
        _ = try chain.seed(notes: 3)
        try chain.root.performAndWait { try chain.root.setQueryGenerationFrom(.current) }
        let child = chain.child(of: chain.root, "child")
        let grandchild = chain.child(of: child, "grandchild")
        let writer = chain.stack.context("writer")
        _ = writer.insert("Note", ["title": "later", "rank": Int64(9)])
        try writer.save()

        let (titles, batched) = try grandchild.performAndWait {
            let dictionaries = FetchRequest<[String: Any]>(entityName: "Note")
            dictionaries.propertiesToFetch = ["title"]
            let titles = try grandchild.fetch(dictionaries).compactMap { $0["title"] as? String }
            let notes = FetchRequest<ManagedObject>(entityName: "Note")
            notes.fetchBatchSize = 2
            return (titles, try grandchild.fetchBatched(notes).count)
        }
        #expect(Set(titles) == ["n1", "n2", "n3"], "the root's generation, without the later commit")
        #expect(batched == 3)
        try chain.root.performAndWait { try chain.root.setQueryGenerationFrom(nil) }
        let latest = try grandchild.performAndWait { try grandchild.fetch(FetchRequest<[String: Any]>(entityName: "Note")).count }
        #expect(latest == 4, "unpinned, the chain reads the latest rows")
    }

    @Test(arguments: StoreKind.everyStore)
    func aPinnedContextsFaultsReadItsGeneration(_ kind: StoreKind) throws {
        let (stack, ids) = try seeded(kind)
        // Another context has the rows in the row cache, then changes them: a pinned fault must not
        // take the cached (new) row.
        let warm = stack.context("warm")
        for id in ids { _ = try warm.existingObject(with: id).value(forKey: "title") }
        let pinned = stack.context("pinned")
        try pinned.setQueryGenerationFrom(.current)
        try commitElsewhere(stack) { writer in
            for id in ids { try writer.existingObject(with: id).setValue("changed", forKey: "title") }
        }
        for id in ids { _ = try warm.existingObject(with: id).value(forKey: "title") }
        let object = pinned.object(with: ids[0])
        #expect(object.isFault)
        #expect(object.value(forKey: "title") as? String == "n0")
        #expect(try pinned.existingObject(with: ids[1]).value(forKey: "title") as? String == "n1")
        // And a pinned read leaves nothing old in the row cache for the others.
        let fresh = stack.context("fresh")
        #expect(try fresh.existingObject(with: ids[0]).value(forKey: "title") as? String == "changed")
    }

    @Test(arguments: StoreKind.everyStore)
    func aPinnedContextDoesNotSeeADeleteOrARelationshipChangeMadeLater(_ kind: StoreKind) throws {
        let (stack, ids) = try seeded(kind)
        try commitElsewhere(stack) { writer in
            let folder = writer.insert("Folder", ["name": "F"])
            for id in ids { try writer.existingObject(with: id).setValue(folder, forKey: "folder") }
        }
        let pinned = stack.context("pinned")
        try pinned.setQueryGenerationFrom(.current)
        let folderID = try #require(try pinned.all("Folder").first?.objectID)
        try commitElsewhere(stack) { writer in
            writer.delete(try writer.existingObject(with: ids[2]))
        }
        let folder = try pinned.existingObject(with: folderID)
        #expect((folder.value(forKey: "notes") as? Set<ManagedObject>)?.count == 3)
        #expect(try pinned.existingObject(with: ids[2]).value(forKey: "title") as? String == "n2")
    }

    @Test(arguments: StoreKind.everyStore)
    func aSaveMergeRefreshOrResetMovesThePinToTheCurrentGeneration(_ kind: StoreKind) throws {
        let (stack, ids) = try seeded(kind)
        let request = FetchRequest<ManagedObject>(entityName: "Note")
        let pinned = stack.context("pinned")
        try pinned.setQueryGenerationFrom(.current)
        var token = try #require(pinned.queryGenerationToken)
        var expected = 3

        func check(_ what: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
            try commitElsewhere(stack) { $0.insert("Note", ["title": what]) }
            #expect(try pinned.count(for: request) == expected, "before \(what)", sourceLocation: sourceLocation)
            expected += 1
        }
        func moved(sourceLocation: SourceLocation = #_sourceLocation) throws {
            let next = try #require(pinned.queryGenerationToken, sourceLocation: sourceLocation)
            #expect(next != token, sourceLocation: sourceLocation)
            token = next
            #expect(try pinned.count(for: request) == expected, sourceLocation: sourceLocation)
        }

        try check("save")
        try pinned.existingObject(with: ids[0]).setValue("edited", forKey: "title")
        try pinned.save()
        try moved()

        try check("merge")
        pinned.mergeChanges(ManagedObjectContext.SaveChanges())
        try moved()

        try check("refresh")
        pinned.refresh(try pinned.existingObject(with: ids[1]), mergeChanges: false)
        try moved()

        try check("refreshAll")
        pinned.refreshAllObjects()
        try moved()

        try check("reset")
        pinned.reset()
        try moved()
    }

    @Test(arguments: StoreKind.everyStore)
    func aPinnedContextsSaveFindsConflictsAgainstTheLatestVersion(_ kind: StoreKind) throws {
        let (stack, ids) = try seeded(kind)
        let pinned = stack.context("pinned")
        pinned.mergePolicy = .mergeByPropertyStoreTrump
        let note = try pinned.existingObject(with: ids[0])
        _ = note.value(forKey: "title")
        try pinned.setQueryGenerationFrom(.current)
        try commitElsewhere(stack) { try $0.existingObject(with: ids[0]).setValue(Int64(50), forKey: "rank") }
        note.setValue("mine", forKey: "title")
        try pinned.save()
        let stored = try stack.context("check").existingObject(with: ids[0])
        #expect(stored.value(forKey: "title") as? String == "mine")
        #expect(stored.value(forKey: "rank") as? Int64 == 50)
    }

    @Test(arguments: StoreKind.everyStore)
    func aTokenPinsAnotherContextToTheSameGeneration(_ kind: StoreKind) throws {
        let (stack, _) = try seeded(kind)
        let first = stack.context("first")
        try first.setQueryGenerationFrom(.current)
        let token = try #require(first.queryGenerationToken)
        try commitElsewhere(stack) { $0.insert("Note", ["title": "later"]) }
        let second = stack.context("second")
        try second.setQueryGenerationFrom(token)
        #expect(second.queryGenerationToken == token)
        #expect(try second.count(for: FetchRequest<ManagedObject>(entityName: "Note")) == 3)
        #expect(stack.coordinator.statistics.pinnedQueryGenerations == 1)

        // Once no context holds it, the generation is gone and its token pins nothing.
        try first.setQueryGenerationFrom(nil)
        try second.setQueryGenerationFrom(nil)
        let third = stack.context("third")
        let error = try #require(throws: ObjectGraphError.self) { try third.setQueryGenerationFrom(token) }
        #expect(error.code == .unsupported)
        #expect(error.message.contains("third"))
        #expect(third.queryGenerationToken == nil)
    }

    @Test(arguments: StoreKind.everyStore)
    func statisticsCountTheLivePins(_ kind: StoreKind) throws {
        let (stack, _) = try seeded(kind)
        #expect(stack.coordinator.statistics.pinnedQueryGenerations == 0)
        var contexts: [ManagedObjectContext] = []
        for i in 0..<3 {
            let context = stack.context("pinned \(i)")
            try context.setQueryGenerationFrom(.current)
            contexts.append(context)
        }
        #expect(stack.coordinator.statistics.pinnedQueryGenerations == 3)
        try contexts[0].setQueryGenerationFrom(nil)
        #expect(stack.coordinator.statistics.pinnedQueryGenerations == 2)
        // A pin moved by a save is still one pin.
        try contexts[1].save()
        #expect(stack.coordinator.statistics.pinnedQueryGenerations == 2)
        contexts.removeAll()
        #expect(stack.coordinator.statistics.pinnedQueryGenerations == 0)
    }

    @Test func aPinnedSQLiteReaderHoldsItsSnapshotWhileTheWALIsCheckpointed() throws {
        let (stack, _) = try seeded(.sqlite)
        let pinned = stack.context("pinned")
        try pinned.setQueryGenerationFrom(.current)
        try commitElsewhere(stack) { writer in
            for i in 0..<100 { writer.insert("Note", ["title": "bulk \(i)"]) }
        }
        // A checkpoint cannot go past the pinned reader's snapshot; the pinned context still reads it.
        let backend = stack.store.backend as! SQLiteStore
        _ = try backend.pool.writeWithoutTransaction { try $0.execute(sql: "PRAGMA wal_checkpoint(PASSIVE)") }
        #expect(try pinned.count(for: FetchRequest<ManagedObject>(entityName: "Note")) == 3)
        try pinned.setQueryGenerationFrom(nil)
        #expect(try pinned.count(for: FetchRequest<ManagedObject>(entityName: "Note")) == 103)
    }

    @Test func aChildReadsThroughItsPinnedParent() throws {
        let (stack, _) = try seeded(.sqlite)
        let parent = stack.privateContext("parent")
        try parent.performAndWait { try parent.setQueryGenerationFrom(.current) }
        try commitElsewhere(stack) { $0.insert("Note", ["title": "later"]) }
        let child = ManagedObjectContext(concurrencyType: .privateQueue)
        child.parent = parent
        let count = try child.performAndWait { try child.count(for: FetchRequest<ManagedObject>(entityName: "Note")) }
        #expect(count == 3)
    }
}

@Suite("Query generations under a concurrent writer")
struct QueryGenerationStressTests {
    @Test(arguments: StoreKind.everyStore)
    func aPinnedContextsCountsStayPutWhileAWriterCommits(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        let seed = stack.context("seed")
        for i in 0..<10 { seed.insert("Note", ["title": "seed \(i)"]) }
        try seed.save()
        let reader = stack.privateContext("pinned reader")
        let writer = stack.privateContext("writer")
        let stop = Protected(false)
        let group = DispatchGroup()
        group.enter()
        writer.perform {
            defer { group.leave() }
            var i = 0
            while !stop.withLock({ $0 }) && i < 200 {
                writer.insert("Note", ["title": "w\(i)"])
                try? writer.save()
                i += 1
            }
        }
        let seen = try reader.performAndWait { () -> [Int] in
            try reader.setQueryGenerationFrom(.current)
            let request = FetchRequest<ManagedObject>(entityName: "Note")
            let pinned = try reader.count(for: request)
            var counts: [Int] = []
            for _ in 0..<30 {
                counts.append(try reader.count(for: request))
                counts.append(try reader.fetch(request).count)
            }
            return [pinned] + counts
        }
        stop.withLock { $0 = true }
        group.wait()
        // Every read of the pinned context saw the count it saw when it pinned.
        #expect(Set(seen).count == 1, "pinned reads saw \(Set(seen).sorted())")
        let latest = try reader.performAndWait { () -> Int in
            try reader.setQueryGenerationFrom(nil)
            return try reader.count(for: FetchRequest<ManagedObject>(entityName: "Note"))
        }
        #expect(latest >= seen[0])
    }
}
