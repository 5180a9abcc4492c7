import Foundation
import Testing
import ObjectGraph
@testable import ObjectGraphCore

@Suite("Nesting: parent and child contexts")
struct NestingContextTests {
    static let kinds = StoreKind.sqliteInMemoryAndPostgres

    @Test(arguments: kinds)
    func aChildsSavePushesIntoItsParentAndNotTheStore(_ kind: StoreKind) throws {
        let chain = try ContextChain(kind)
        let (folderID, notes) = try chain.seed()
        let child = chain.child(of: chain.root, "child")
        child.retainsRegisteredObjects = true
        let inserted = try child.performAndWait {
            child.object(with: notes[0]).setValue("changed", forKey: "title")
            child.delete(child.object(with: notes[2]))
            let note = child.insert("Note", ["title": "n4", "rank": 4, "folder": child.object(with: folderID)])
            try child.save()
            #expect(!child.hasChanges)
            return note.objectID
        }
        #expect(inserted.isTemporaryID)
        #expect(try chain.storedNotes() == ["n1": 1, "n2": 2, "n3": 3], "the store is untouched")

        try chain.root.performAndWait {
            let root = chain.root
            #expect(root.hasChanges)
            let note = try #require(root.registeredObject(for: inserted), "the parent has the object under the child's temporary ID")
            #expect(note.isInserted)
            #expect(note.value(forKey: "title") as? String == "n4")
            #expect(root.object(with: notes[0]).isUpdated)
            #expect(root.title(of: notes[0]) == "changed")
            #expect(root.object(with: notes[2]).isDeleted)
            let folder = root.object(with: folderID)
            let listed = (folder.value(forKey: "notes") as! Set<ManagedObject>).map { $0.value(forKey: "title") as! String }
            #expect(Set(listed) == ["changed", "n2", "n4"])
            try root.save()
        }
        #expect(try chain.storedNotes() == ["changed": 1, "n2": 2, "n4": 4])
        // The root's save gave the child's object its permanent ID in the child too.
        let permanent = try child.performAndWait {
            let note = try #require(child.registeredObject(for: inserted))
            #expect(!note.objectID.isTemporaryID)
            #expect(child.registeredObject(for: note.objectID) === note)
            return note.objectID
        }
        #expect(try chain.stack.context().existingObject(with: permanent).value(forKey: "title") as? String == "n4")
        // The temporary ID still resolves, to the permanent object, in every context of the chain.
        let other = chain.child(of: chain.root, "other")
        for context in [chain.root, child, other] {
            #expect(context.performAndWait { context.object(with: inserted).objectID } == permanent)
        }
    }

    @Test(arguments: kinds)
    func threeLevelsOfMixedQueuesSaveUpTheChainAndShareThePermanentID(_ kind: StoreKind) async throws {
        let chain = try ContextChain(kind)
        let main = chain.child(of: chain.root, "main", .mainQueue)
        let worker = chain.child(of: main, "worker")
        for context in [chain.root, main, worker] { context.retainsRegisteredObjects = true }
        let temporary = try await worker.perform {
            let folder = worker.insert("Folder", ["name": "Work"])
            for i in 1...3 { _ = worker.insert("Note", ["title": "w\(i)", "rank": i, "folder": folder]) }
            try worker.save()
            return folder.objectID
        }
        let inMain = try await main.perform {
            let folder = try #require(main.registeredObject(for: temporary))
            #expect(folder.isInserted)
            #expect((folder.value(forKey: "notes") as! Set<ManagedObject>).count == 3)
            try main.save()
            return main.hasChanges
        }
        #expect(!inMain)
        #expect(try chain.storedCount("Note") == 0)
        try await chain.root.perform {
            #expect(chain.root.registeredObject(for: temporary)?.isInserted == true)
            try chain.root.save()
        }
        #expect(try chain.storedCount("Note") == 3)
        #expect(try chain.storedCount("Folder") == 1)
        // Every context of the chain now uses the permanent ID.
        let ids = try await [chain.root, main, worker].asyncMap { context in
            try await context.perform {
                let folder = try #require(context.registeredObject(for: temporary))
                #expect(context.registeredObject(for: folder.objectID) === folder)
                let notes = folder.value(forKey: "notes") as! Set<ManagedObject>
                #expect(notes.allSatisfy { !$0.objectID.isTemporaryID }, "in \(context)")
                return folder.objectID
            }
        }
        #expect(ids.allSatisfy { !$0.isTemporaryID && $0 == ids[0] })
    }

    @Test(arguments: kinds)
    func aGrandchildSeesTheUnsavedChangesOfEveryAncestor(_ kind: StoreKind) throws {
        let chain = try ContextChain(kind)
        let (folderID, notes) = try chain.seed()
        let middle = chain.child(of: chain.root, "middle")
        let grandchild = chain.child(of: middle, "grandchild")
        let newID = chain.root.performAndWait {
            let root = chain.root
            let note = root.insert("Note", ["title": "new", "rank": 10, "folder": root.object(with: folderID)])
            root.object(with: notes[1]).setValue(Int64(20), forKey: "rank")
            root.delete(root.object(with: notes[0]))
            return note.objectID
        }
        middle.performAndWait { middle.object(with: notes[2]).setValue(Int64(30), forKey: "rank") }

        try grandchild.performAndWait {
            #expect(try grandchild.noteTitles() == ["new", "n2", "n3"])
            #expect(try grandchild.count(for: FetchRequest<ManagedObject>(entityName: "Note")) == 3)
            let ranked = FetchRequest<ManagedObjectID>(entityName: "Note")
            ranked.predicate = FetchPredicate(format: "rank > %d", 15)
            ranked.sortDescriptors = [FetchSortDescriptor(key: "rank", ascending: false)]
            #expect(try grandchild.fetch(ranked) == [notes[2], notes[1]])
            ranked.fetchLimit = 1
            #expect(try grandchild.count(for: ranked) == 1)
            // Faults fill from the ancestors' current values.
            #expect(grandchild.object(with: notes[1]).value(forKey: "rank") as? Int64 == 20)
            #expect(grandchild.object(with: notes[2]).value(forKey: "rank") as? Int64 == 30)
            // The root's inserted object resolves by its temporary ID, with its relationships.
            let note = try grandchild.existingObject(with: newID)
            #expect(note.value(forKey: "title") as? String == "new")
            #expect((note.value(forKey: "folder") as? ManagedObject)?.objectID == folderID)
            let folder = grandchild.object(with: folderID)
            let listed = (folder.value(forKey: "notes") as! Set<ManagedObject>).map { $0.value(forKey: "title") as! String }
            #expect(Set(listed) == ["new", "n2", "n3"])
            // Its own changes go on top.
            grandchild.delete(grandchild.object(with: notes[2]))
            _ = grandchild.insert("Note", ["title": "mine", "rank": 5])
            #expect(try grandchild.noteTitles() == ["mine", "new", "n2"])
        }
        #expect(try chain.storedNotes() == ["n1": 1, "n2": 2, "n3": 3])
    }

    @Test(arguments: kinds)
    func aParentsInsertedObjectKeepsItsRelationshipsInAChild(_ kind: StoreKind) throws {
        let chain = try ContextChain(kind)
        let folderID = chain.root.performAndWait {
            let folder = chain.root.insert("Folder", ["name": "new"])
            for i in 1...2 { _ = chain.root.insert("Note", ["title": "in new \(i)", "rank": i, "folder": folder]) }
            return folder.objectID
        }
        let child = chain.child(of: chain.root, "child")
        child.retainsRegisteredObjects = true
        child.automaticallyMergesChangesFromParent = true
        func listed() -> Int { (child.object(with: folderID).value(forKey: "notes") as! Set<ManagedObject>).count }
        child.performAndWait {
            #expect(listed() == 2, "the parent's inserted folder lists its notes in the child")
            child.object(with: folderID).setValue("renamed", forKey: "name")
            child.rollback()
            #expect(listed() == 2)
            child.refresh(child.object(with: folderID), mergeChanges: false)
            #expect(listed() == 2)
        }
        let sibling = chain.child(of: chain.root, "sibling")
        try sibling.performAndWait {
            _ = sibling.insert("Note", ["title": "third", "rank": 3, "folder": sibling.object(with: folderID)])
            sibling.object(with: folderID).setValue("touched", forKey: "name")
            try sibling.save()
        }
        child.performAndWait {
            #expect(child.object(with: folderID).value(forKey: "name") as? String == "touched")
            #expect(listed() == 3, "after merging the sibling's push")
        }
    }

    @Test(arguments: kinds)
    func siblingsDoNotSeeEachOthersPushesUntilTheyRefreshOrRefetch(_ kind: StoreKind) throws {
        let chain = try ContextChain(kind)
        let (_, notes) = try chain.seed()
        let a = chain.child(of: chain.root, "a"), b = chain.child(of: chain.root, "b")
        b.retainsRegisteredObjects = true
        let heldByB = b.performAndWait { b.object(with: notes[0]).value(forKey: "title") as? String }
        #expect(heldByB == "n1")
        try a.performAndWait {
            a.object(with: notes[0]).setValue("from a", forKey: "title")
            _ = a.insert("Note", ["title": "a's", "rank": 7])
            try a.save()
        }
        try b.performAndWait { () throws in
            let note = b.object(with: notes[0])
            #expect(note.value(forKey: "title") as? String == "n1", "a sibling's push does not reach registered objects")
            // A refetch sees the parent's state…
            #expect(try b.noteTitles().count == 4)
            #expect(try b.noteTitles(FetchPredicate(format: "title == %@", "a's")).count == 1)
            // …and a refresh brings the object up to date.
            b.refresh(note, mergeChanges: false)
            #expect(note.value(forKey: "title") as? String == "from a")
        }
    }

    @Test(arguments: kinds)
    func obtainingPermanentIDsInAGrandchildGivesTheIDTheStoreUses(_ kind: StoreKind) throws {
        let chain = try ContextChain(kind)
        let middle = chain.child(of: chain.root, "middle")
        let grandchild = chain.child(of: middle, "grandchild")
        let id = try grandchild.performAndWait {
            let note = grandchild.insert("Note", ["title": "early", "rank": 1])
            try grandchild.obtainPermanentIDs(for: [note])
            #expect(!note.objectID.isTemporaryID)
            try grandchild.save()
            return note.objectID
        }
        try middle.performAndWait {
            #expect(middle.registeredObject(for: id)?.isInserted == true)
            try middle.save()
        }
        try chain.root.performAndWait { try chain.root.save() }
        #expect(try chain.stack.context().existingObject(with: id).value(forKey: "title") as? String == "early")
    }

    @Test(arguments: kinds)
    func deletesTravelThroughPushesWithTheirDeleteRules(_ kind: StoreKind) throws {
        let chain = try ContextChain(kind)
        let (folderID, notes) = try chain.seed()
        let middle = chain.child(of: chain.root, "middle")
        let grandchild = chain.child(of: middle, "grandchild")
        try grandchild.performAndWait {
            grandchild.delete(grandchild.object(with: folderID))
            try grandchild.save()
            #expect(grandchild.registeredObject(for: folderID) == nil)
        }
        try middle.performAndWait {
            #expect(middle.object(with: folderID).isDeleted)
            #expect(notes.allSatisfy { middle.object(with: $0).isDeleted }, "the cascade reached the parent")
            #expect(try middle.noteTitles().isEmpty)
            try middle.save()
        }
        #expect(try chain.storedCount("Folder") == 1)
        try chain.root.performAndWait {
            #expect(chain.root.deletedObjects.count == 4)
            try chain.root.save()
        }
        #expect(try chain.storedCount("Folder") == 0)
        #expect(try chain.storedCount("Note") == 0)
    }

    @Test(arguments: kinds)
    func aConflictWithTheParentLeavesBothContextsIntact(_ kind: StoreKind) throws {
        let chain = try ContextChain(kind)
        let (_, notes) = try chain.seed()
        let child = chain.child(of: chain.root, "child")
        child.performAndWait {
            child.object(with: notes[0]).setValue(Int64(99), forKey: "rank")
            child.object(with: notes[1]).setValue("child's", forKey: "title")
        }
        chain.root.performAndWait {
            chain.root.object(with: notes[0]).setValue("parent's", forKey: "title")
            chain.root.delete(chain.root.object(with: notes[1]))
        }
        let error = try child.performAndWait { () throws -> ObjectGraphError? in
            do { try child.save() } catch let error as ObjectGraphError { return error }
            return nil
        }
        #expect(error?.code == ObjectGraphError.mergeConflict.code)
        #expect(error?.conflicts.count == 2)
        #expect(error?.message.contains("parent") == true)
        child.performAndWait {
            #expect(child.hasChanges)
            #expect(child.object(with: notes[0]).value(forKey: "rank") as? Int64 == 99)
            #expect(child.object(with: notes[0]).value(forKey: "title") as? String == "n1")
        }
        chain.root.performAndWait {
            let note = chain.root.object(with: notes[0])
            #expect(note.value(forKey: "title") as? String == "parent's")
            #expect(note.value(forKey: "rank") as? Int64 == 1)
            #expect(chain.root.object(with: notes[1]).isDeleted)
        }
        // Property by property, the child wins where it changed something; the parent's delete stands.
        try child.performAndWait {
            child.mergePolicy = .mergeByPropertyObjectTrump
            try child.save()
            #expect(!child.hasChanges)
            #expect(child.object(with: notes[0]).value(forKey: "title") as? String == "parent's")
        }
        try chain.root.performAndWait {
            let note = chain.root.object(with: notes[0])
            #expect(note.value(forKey: "title") as? String == "parent's")
            #expect(note.value(forKey: "rank") as? Int64 == 99)
            try chain.root.save()
        }
        #expect(try chain.storedNotes() == ["parent's": 99, "n3": 3])
    }

    @Test(arguments: kinds)
    func aValidationFailureLeavesBothContextsIntact(_ kind: StoreKind) throws {
        let chain = try ContextChain(kind)
        let child = chain.child(of: chain.root, "child")
        try child.performAndWait {
            let folder = child.insertNewObject(forEntityName: "Folder")
            #expect(throws: ObjectGraphError.validation) { try child.save() }
            #expect(folder.isInserted)
            #expect(chain.root.performAndWait { !chain.root.hasChanges && chain.root.registeredObjects.isEmpty })
            folder.setValue("Named", forKey: "name")
            try child.save()
        }
        #expect(chain.root.performAndWait { chain.root.insertedObjects.count } == 1)
    }

    @Test(arguments: kinds)
    func childrenThatMergeAutomaticallyFollowTheirParent(_ kind: StoreKind) throws {
        let chain = try ContextChain(kind)
        let (_, notes) = try chain.seed()
        chain.root.automaticallyMergesChangesFromParent = true
        let follower = chain.child(of: chain.root, "follower")
        follower.automaticallyMergesChangesFromParent = true
        let grandFollower = chain.child(of: follower, "grand follower")
        grandFollower.automaticallyMergesChangesFromParent = true
        let other = chain.child(of: chain.root, "other")
        let bystander = chain.child(of: chain.root, "bystander")
        for context in [follower, grandFollower, bystander] {
            context.retainsRegisteredObjects = true
            context.performAndWait { for id in notes { _ = context.object(with: id).value(forKey: "title") } }
        }

        // A sibling's push…
        try other.performAndWait {
            other.object(with: notes[0]).setValue("pushed", forKey: "title")
            other.delete(other.object(with: notes[1]))
            try other.save()
        }
        follower.performAndWait {
            #expect(follower.title(of: notes[0]) == "pushed")
            // Deleted by the sibling's push: a deleted object in the follower until it saves.
            #expect(follower.registeredObject(for: notes[1])?.isDeleted ?? true)
        }
        grandFollower.performAndWait { #expect(grandFollower.title(of: notes[0]) == "pushed") }
        bystander.performAndWait { #expect(bystander.title(of: notes[0]) == "n1") }

        // …the root's own change, saved to the store…
        try chain.root.performAndWait {
            chain.root.object(with: notes[2]).setValue("saved by the root", forKey: "title")
            try chain.root.save()
        }
        follower.performAndWait { #expect(follower.title(of: notes[2]) == "saved by the root") }

        // …and another context's save that the root merges.
        let elsewhere = chain.stack.privateContext("elsewhere")
        try elsewhere.performAndWait {
            elsewhere.object(with: notes[0]).setValue("from elsewhere", forKey: "title")
            try elsewhere.save()
        }
        #expect(eventually { grandFollower.performAndWait { grandFollower.title(of: notes[0]) == "from elsewhere" } })
        bystander.performAndWait { #expect(bystander.title(of: notes[0]) == "n1") }
    }

    @Test(arguments: kinds)
    func childToParentChainsDoNotDeadlock(_ kind: StoreKind) throws {
        let chain = try ContextChain(kind)
        let (folderID, notes) = try chain.seed()
        let middle = chain.child(of: chain.root, "middle")
        let worker = chain.child(of: middle, "worker")
        let nested = finishes {
            worker.performAndWait {
                middle.performAndWait {
                    chain.root.performAndWait {
                        worker.performAndWait {
                            // Faults and fetches go up through queues this thread already holds.
                            _ = worker.object(with: notes[0]).value(forKey: "title")
                            _ = try? worker.noteTitles()
                            _ = worker.insert("Note", ["title": "inline", "rank": 0])
                            try? worker.save()
                        }
                    }
                }
            }
        }
        #expect(nested)

        // Workers push into the middle while another thread saves the chain and reads through it.
        let seed = UInt64.random(in: 0..<1_000_000)
        let workers = 4, batches = 5
        let concurrent = finishes {
            DispatchQueue.concurrentPerform(iterations: workers + 1) { index in
                guard index < workers else {
                    for _ in 0..<batches {
                        middle.performAndWait { try? middle.save() }
                        chain.root.performAndWait { try? chain.root.save() }
                    }
                    return
                }
                var random = SeededRandom(seed: seed &+ UInt64(index))
                let context = chain.child(of: middle, "worker \(index)")
                for batch in 0..<batches {
                    context.performAndWait {
                        let folder = context.object(with: folderID)
                        for i in 0..<Int(random.next() % 10 + 1) {
                            _ = context.insert("Note", ["title": "w\(index)-\(batch)-\(i)", "rank": 100, "folder": folder])
                        }
                        _ = try? context.noteTitles()
                        do { try context.save() } catch { Issue.record("seed \(seed): \(error)") }
                    }
                }
            }
        }
        #expect(concurrent, "seed \(seed)")
        var expected = 4  // the seed's three notes and the inline one
        for index in 0..<workers {
            var random = SeededRandom(seed: seed &+ UInt64(index))
            for _ in 0..<batches { expected += Int(random.next() % 10 + 1) }
        }
        try middle.performAndWait { try middle.save() }
        try chain.root.performAndWait { try chain.root.save() }
        #expect(try chain.storedCount("Note") == expected, "seed \(seed)")
        let listed = chain.root.performAndWait {
            (chain.root.object(with: folderID).value(forKey: "notes") as! Set<ManagedObject>).count
        }
        #expect(listed == expected - 1, "seed \(seed)")
    }

    @Test func aConfinementChildTakesPermanentIDsAtItsNextFetch() throws {
        let chain = try ContextChain(.sqlite)
        let child = chain.child(of: chain.root, "confined", .confinement)
        let note = child.insert("Note", ["title": "confined", "rank": 1])
        let temporary = note.objectID
        try child.save()
        // Saved from another thread, the root cannot run work on this one: the child takes the IDs later.
        let root = chain.root
        #expect(finishes { try? root.performAndWait { try root.save() } })
        #expect(try chain.storedCount("Note") == 1)
        #expect(note.objectID == temporary)
        #expect(try child.noteTitles() == ["confined"])
        #expect(!note.objectID.isTemporaryID)
        #expect(child.registeredObject(for: temporary) === note)
    }
}

extension Array where Element: Sendable {
    func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var result: [T] = []
        for element in self { result.append(try await transform(element)) }
        return result
    }
}
