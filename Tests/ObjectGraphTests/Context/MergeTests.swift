import Foundation
import Testing
import ObjectGraph
@testable import ObjectGraphCore

@Suite("Change propagation: notifications, merging, refresh and merge policies")
struct MergeTests {
    /// Records notifications of one name from one object.
    final class Observed: @unchecked Sendable {
        private let lock = NSLock()
        private var notifications: [Notification] = []
        private var token: (any NSObjectProtocol)?
        init(_ name: Notification.Name, from object: AnyObject) {
            token = NotificationCenter.default.addObserver(forName: name, object: object, queue: nil) { [weak self] n in
                guard let self else { return }
                self.lock.lock(); self.notifications.append(n); self.lock.unlock()
            }
        }
        deinit { if let token { NotificationCenter.default.removeObserver(token) } }
        var all: [Notification] { lock.lock(); defer { lock.unlock() }; return notifications }
    }

    @Test(arguments: StoreKind.everyStore)
    func savesAndPendingChangesPostTheirNotifications(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        let context = stack.context()
        let didChange = Observed(ManagedObjectContext.objectsDidChangeNotification, from: context)
        let willSave = Observed(ManagedObjectContext.willSaveObjectsNotification, from: context)
        let didSave = Observed(ManagedObjectContext.didSaveObjectsNotification, from: context)
        let didSaveIDs = Observed(ManagedObjectContext.didSaveObjectIDsNotification, from: context)
        let note = context.insert("Note", ["title": "a"])
        context.processPendingChanges()
        let inserted = try #require(didChange.all.last?.userInfo?[ManagedObjectContext.NotificationKey.insertedObjects.rawValue] as? Set<ManagedObject>)
        #expect(inserted == [note])
        try context.save()
        #expect(willSave.all.count == 1)
        let saved = try #require(didSave.all.last)
        #expect((saved.userInfo?[ManagedObjectContext.NotificationKey.insertedObjects.rawValue] as? Set<ManagedObject>) == [note])
        let changes = try #require(ManagedObjectContext.SaveChanges(saved))
        #expect(changes.insertedObjectIDs == [note.objectID])
        #expect(!note.objectID.isTemporaryID)
        #expect((didSaveIDs.all.last?.userInfo?[ManagedObjectContext.NotificationKey.insertedObjectIDs.rawValue] as? Set<ManagedObjectID>) == [note.objectID])
        note.setValue("b", forKey: "title")
        try context.save()
        let update = try #require(ManagedObjectContext.SaveChanges(didSave.all.last!))
        #expect(update.updatedObjectIDs == [note.objectID])
        #expect(update.changedKeys[note.objectID] == ["title"])
        context.delete(note)
        try context.save()
        #expect(try ManagedObjectContext.SaveChanges(#require(didSave.all.last)).map(\.deletedObjectIDs) == [note.objectID])
    }

    @Test(arguments: StoreKind.everyStore)
    func mergingASaveUpdatesDeletesAndKeepsLocalChanges(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        let writer = stack.context("writer")
        let folder = writer.insert("Folder", ["name": "Inbox"])
        let a = writer.insert("Note", ["title": "a", "rank": 1, "folder": folder])
        let b = writer.insert("Note", ["title": "b", "rank": 2, "folder": folder])
        try writer.save()

        let reader = stack.context("reader")
        let readFolder = try reader.existingObject(with: folder.objectID)
        let readA = try reader.existingObject(with: a.objectID)
        let readB = try reader.existingObject(with: b.objectID)
        #expect((readFolder.value(forKey: "notes") as? Set<ManagedObject>)?.count == 2)
        readB.setValue("local", forKey: "title")  // an unsaved change in the reader

        let didSave = Observed(ManagedObjectContext.didSaveObjectsNotification, from: writer)
        let didChange = Observed(ManagedObjectContext.objectsDidChangeNotification, from: reader)
        let didMerge = Observed(ManagedObjectContext.didMergeChangesObjectIDsNotification, from: reader)
        a.setValue(10, forKey: "rank")
        b.setValue(20, forKey: "rank")
        let c = writer.insert("Note", ["title": "c", "folder": folder])
        writer.delete(a)
        try writer.save()
        reader.mergeChanges(fromContextDidSave: try #require(didSave.all.last))

        #expect(readA.isDeleted && reader.deletedObjects.contains(readA), "deleted elsewhere: a deleted object here until saved")
        #expect(readB.value(forKey: "rank") as? Int64 == 20, "took the saved value")
        #expect(readB.value(forKey: "title") as? String == "local", "kept its own change")
        let titles = (readFolder.value(forKey: "notes") as? Set<ManagedObject>)?.compactMap { $0.value(forKey: "title") as? String }.sorted()
        #expect(titles == ["c", "local"])
        #expect(try reader.all("Note").contains { $0.objectID == c.objectID })
        #expect(!didChange.all.isEmpty)
        #expect((didMerge.all.last?.userInfo?[ManagedObjectContext.NotificationKey.deletedObjectIDs.rawValue] as? Set<ManagedObjectID>) == [a.objectID])
        // The reader's own change saves without a conflict: the merge moved its snapshot forward.
        try reader.save()
        #expect(readA.managedObjectContext == nil, "the save forgets it")
        #expect(try stack.context().existingObject(with: b.objectID).value(forKey: "title") as? String == "local")
    }

    @Test func remoteChangesByIDAndTheSavesStreamMerge() async throws {
        let stack = try TestStack(.sqlite)
        let writer = stack.privateContext("writer")
        let id = try await writer.perform {
            let note = writer.insert("Note", ["title": "v1"])
            try writer.save()
            return note.objectID
        }
        let reader = stack.privateContext("reader")
        let held = Recorder<String>()
        try await reader.perform {
            let note = try reader.existingObject(with: id)
            reader.retainsRegisteredObjects = true
            held.append(note.value(forKey: "title") as! String)
        }
        // Drive merging from the writer's saves stream.
        let stream = writer.saves
        let merging = Task {
            for await changes in stream {
                await reader.perform { reader.mergeChanges(changes) }
                return
            }
        }
        try await writer.perform {
            try writer.existingObject(with: id).setValue("v2", forKey: "title")
            try writer.save()
        }
        await merging.value
        #expect(await reader.perform { reader.registeredObject(for: id)?.value(forKey: "title") as? String } == "v2")
        // Remote changes: IDs only; the rows are read again.
        try await writer.perform {
            try writer.existingObject(with: id).setValue("v3", forKey: "title")
            try writer.save()
        }
        ManagedObjectContext.mergeChanges(fromRemoteContextSave: [ManagedObjectContext.NotificationKey.updatedObjectIDs: [id]], into: [reader])
        #expect(await reader.perform { reader.registeredObject(for: id)?.value(forKey: "title") as? String } == "v3")
    }

    @Test func contextsThatMergeAutomaticallyFollowOtherSaves() throws {
        let stack = try TestStack(.sqlite)
        let writer = stack.privateContext("writer")
        let follower = stack.privateContext("follower")
        follower.automaticallyMergesChangesFromParent = true
        let id = try writer.performAndWait {
            let note = writer.insert("Note", ["title": "v1"])
            try writer.save()
            return note.objectID
        }
        follower.performAndWait {
            follower.retainsRegisteredObjects = true
            _ = follower.object(with: id).value(forKey: "title")
        }
        try writer.performAndWait {
            writer.object(with: id).setValue("v2", forKey: "title")
            try writer.save()
        }
        // The merge was enqueued on the follower's queue; a block enqueued after it sees it.
        let title = follower.performAndWait { follower.registeredObject(for: id)?.value(forKey: "title") as? String }
        #expect(title == "v2")
    }

    @Test(arguments: StoreKind.everyStore)
    func stalenessIntervalDecidesWhetherFaultsUseTheRowCache(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        let writer = stack.context()
        let note = writer.insert("Note", ["title": "x"])
        try writer.save()
        let holder = stack.context("holder")
        let held = try holder.existingObject(with: note.objectID)  // keeps the row in the cache
        let fresh = stack.context("fresh")
        fresh.stalenessInterval = 0
        let before = stack.coordinator.statistics.faultsFromStore
        #expect(fresh.object(with: note.objectID).value(forKey: "title") as? String == "x")
        #expect(stack.coordinator.statistics.faultsFromStore == before + 1, "0 always reads the store")
        let cached = stack.context("cached")
        #expect(cached.object(with: note.objectID).value(forKey: "title") as? String == "x")
        #expect(stack.coordinator.statistics.faultsFromStore == before + 1, "the default uses the cache")
        _ = held
    }

    /// Two contexts change one note; the second save meets the first's under a policy.
    func conflict(_ kind: StoreKind, policy: MergePolicy) throws -> (stack: TestStack, id: ManagedObjectID, second: ManagedObjectContext, object: ManagedObject, result: Result<Void, ObjectGraphError>) {
        let stack = try TestStack(kind)
        let setup = stack.context("setup")
        let note = setup.insert("Note", ["title": "base", "rank": 1])
        try setup.save()
        let first = stack.context("first"), second = stack.context("second")
        second.mergePolicy = policy
        let mine = try second.existingObject(with: note.objectID)
        let theirs = try first.existingObject(with: note.objectID)
        theirs.setValue("theirs", forKey: "title")
        theirs.setValue(2, forKey: "rank")
        try first.save()
        mine.setValue("mine", forKey: "title")
        let result: Result<Void, ObjectGraphError>
        do { try second.save(); result = .success(()) } catch let error as ObjectGraphError { result = .failure(error) }
        return (stack, note.objectID, second, mine, result)
    }

    func stored(_ stack: TestStack, _ id: ManagedObjectID) throws -> (String?, Int64?) {
        let object = try stack.context("check").existingObject(with: id)
        return (object.value(forKey: "title") as? String, object.value(forKey: "rank") as? Int64)
    }

    @Test(arguments: StoreKind.everyStore)
    func theErrorPolicyReportsEveryConflictWithItsSnapshots(_ kind: StoreKind) throws {
        let (stack, id, second, _, result) = try conflict(kind, policy: .error)
        guard case .failure(let error) = result else { Issue.record("expected a conflict"); return }
        #expect(error.code == .mergeConflict)
        let detail = try #require(error.conflicts.first)
        #expect(detail.objectID == id)
        #expect(detail.objectSnapshot["title"] as? String == "mine")
        #expect(detail.cachedSnapshot?["title"] as? String == "base")
        #expect(detail.persistedSnapshot?["title"] as? String == "theirs")
        #expect(detail.newVersionNumber > detail.oldVersionNumber)
        #expect(second.hasChanges)
        #expect(try stored(stack, id) == ("theirs", 2))
    }

    @Test(arguments: StoreKind.everyStore)
    func aConflictsSnapshotsHoldTheValuesValueForKeyReturns(_ kind: StoreKind) throws {
        let model = ManagedObjectModel(entities: [
            EntityDescription(name: "Setting", properties: [
                .attribute("enabled", .boolean, defaultValue: false),
                .attribute("ratio", .double, defaultValue: 0.0),
                .attribute("size", .integer16, defaultValue: Int16(0)),
                .attribute("price", .decimal, defaultValue: Decimal(0)),
            ])
        ])
        let stack = try TestStack(kind, model: model)
        let setup = stack.context("setup")
        let setting = setup.insert("Setting", ["enabled": true, "ratio": 2.0, "size": Int16(3), "price": Decimal(4)])
        try setup.save()
        let first = stack.context("first"), second = stack.context("second")
        second.mergePolicy = .error
        let mine = try second.existingObject(with: setting.objectID)
        let theirs = try first.existingObject(with: setting.objectID)
        theirs.setValue(false, forKey: "enabled")
        try first.save()
        mine.setValue(Int16(5), forKey: "size")
        let error = try #require(throws: ObjectGraphError.self) { try second.save() }
        let detail = try #require(error.conflicts.first)
        for snapshot in [detail.objectSnapshot, try #require(detail.cachedSnapshot), try #require(detail.persistedSnapshot)] {
            for key in ["enabled", "ratio", "size", "price"] {
                let value = try #require(snapshot[key], "\(key) is missing")
                #expect(type(of: value) == type(of: mine.value(forKey: key)!), "\(key) is \(type(of: value))")
            }
        }
        #expect(detail.objectSnapshot["size"] as? Int16 == 5)
        #expect(detail.cachedSnapshot?["enabled"] as? Bool == true)
        #expect(detail.persistedSnapshot?["enabled"] as? Bool == false)
    }

    @Test(arguments: StoreKind.everyStore)
    func objectTrumpKeepsMyChangedPropertiesAndTheirOthers(_ kind: StoreKind) throws {
        let (stack, id, _, object, result) = try conflict(kind, policy: .mergeByPropertyObjectTrump)
        #expect(throws: Never.self) { try result.get() }
        #expect(try stored(stack, id) == ("mine", 2))
        #expect(object.value(forKey: "rank") as? Int64 == 2)
    }

    @Test(arguments: StoreKind.everyStore)
    func storeTrumpKeepsTheirChangedProperties(_ kind: StoreKind) throws {
        let (stack, id, _, object, result) = try conflict(kind, policy: .mergeByPropertyStoreTrump)
        #expect(throws: Never.self) { try result.get() }
        #expect(try stored(stack, id) == ("theirs", 2))
        #expect(object.value(forKey: "title") as? String == "theirs")
    }

    @Test(arguments: StoreKind.everyStore)
    func overwriteWritesTheWholeObject(_ kind: StoreKind) throws {
        let (stack, id, _, _, result) = try conflict(kind, policy: .overwrite)
        #expect(throws: Never.self) { try result.get() }
        #expect(try stored(stack, id) == ("mine", 1))
    }

    @Test(arguments: StoreKind.everyStore)
    func rollbackDiscardsMyConflictingChanges(_ kind: StoreKind) throws {
        let (stack, id, second, object, result) = try conflict(kind, policy: .rollback)
        #expect(throws: Never.self) { try result.get() }
        #expect(try stored(stack, id) == ("theirs", 2))
        #expect(object.value(forKey: "title") as? String == "theirs")
        #expect(!second.hasChanges)
    }

    static func usersModel() -> ManagedObjectModel {
        ManagedObjectModel(entities: [
            EntityDescription(
                name: "User", properties: [.attribute("email", .string), .attribute("name", .string)],
                uniquenessConstraints: [["email"]]),
        ])
    }

    @Test(arguments: StoreKind.everyStore)
    func objectTrumpTurnsADuplicateInsertIntoAnUpsert(_ kind: StoreKind) throws {
        let stack = try TestStack(kind, model: Self.usersModel())
        let context = stack.context()
        let original = context.insert("User", ["email": "a@x", "name": "Old"])
        try context.save()
        let other = stack.context("other")
        other.mergePolicy = .mergeByPropertyObjectTrump
        let duplicate = other.insert("User", ["email": "a@x", "name": "New"])
        try other.save()
        #expect(duplicate.objectID == original.objectID)
        let users = try stack.context("check").all("User")
        #expect(users.count == 1)
        #expect(users.first?.value(forKey: "name") as? String == "New")
    }

    @Test(arguments: StoreKind.everyStore)
    func storeTrumpKeepsTheExistingRowForADuplicateInsert(_ kind: StoreKind) throws {
        let stack = try TestStack(kind, model: Self.usersModel())
        let context = stack.context()
        let original = context.insert("User", ["email": "a@x", "name": "Old"])
        try context.save()
        let other = stack.context("other")
        other.mergePolicy = .mergeByPropertyStoreTrump
        let duplicate = other.insert("User", ["email": "a@x", "name": "New"])
        try other.save()
        #expect(duplicate.objectID == original.objectID)
        #expect(duplicate.value(forKey: "name") as? String == "Old")
        let users = try stack.context("check").all("User")
        #expect(users.map { $0.value(forKey: "name") as? String } == ["Old"])
    }

    @Test(arguments: StoreKind.everyStore)
    func anUnrelatedObjectWithTheExistingRowsKeyDoesNotBlockTheUpsert(_ kind: StoreKind) throws {
        // Keys are per table: the group saved with the duplicate gets key 1 in its own table, the
        // key of the existing user in the users' table. That is no reason to refuse the upsert.
        let model = ManagedObjectModel(entities: [
            EntityDescription(
                name: "User", properties: [.attribute("email", .string), .attribute("name", .string)],
                uniquenessConstraints: [["email"]]),
            EntityDescription(name: "Group", properties: [.attribute("title", .string)]),
        ])
        let stack = try TestStack(kind, model: model)
        let context = stack.context()
        let original = context.insert("User", ["email": "a@x", "name": "Old"])
        try context.save()
        let other = stack.context("other")
        other.mergePolicy = .mergeByPropertyObjectTrump
        let group = other.insert("Group", ["title": "first group"])
        let duplicate = other.insert("User", ["email": "a@x", "name": "New"])
        try other.save()
        #expect(group.objectID.primaryKey == original.objectID.primaryKey)
        #expect(duplicate.objectID == original.objectID)
        let users = try stack.context("check").all("User")
        #expect(users.map { $0.value(forKey: "name") as? String } == ["New"])
    }

    @Test(arguments: StoreKind.everyStore)
    func duplicatesWithinOneSaveAreNeverMergedSilently(_ kind: StoreKind) throws {
        let stack = try TestStack(kind, model: Self.usersModel())
        let context = stack.context()
        context.mergePolicy = .mergeByPropertyObjectTrump
        _ = context.insert("User", ["email": "same"])
        _ = context.insert("User", ["email": "same"])
        #expect(throws: ObjectGraphError.constraintConflict) { try context.save() }
    }

    @Test(arguments: StoreKind.everyStore)
    func anObjectDeletedElsewhereIsHandledBothWays(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        let writer = stack.context("writer")
        let note = writer.insert("Note", ["title": "doomed"])
        try writer.save()
        let merging = stack.context("merging"), tolerant = stack.context("tolerant")
        tolerant.shouldDeleteInaccessibleFaults = true
        let merged = try merging.existingObject(with: note.objectID)
        let fault = tolerant.object(with: note.objectID)
        let didSave = Observed(ManagedObjectContext.didSaveObjectsNotification, from: writer)
        writer.delete(note)
        try writer.save()
        merging.mergeChanges(fromContextDidSave: try #require(didSave.all.last))
        #expect(merged.isDeleted)
        #expect(merging.deletedObjects == [merged])
        #expect(merged.value(forKey: "title") as? String == "doomed", "its values stay readable")
        // Its save writes nothing for it and forgets it; a rollback would forget it too.
        try merging.save()
        #expect(merged.managedObjectContext == nil)
        #expect(merging.registeredObject(for: note.objectID) == nil)
        #expect(fault.value(forKey: "title") as? String == "")
        #expect(fault.isDeleted)
        // A save that still updates the deleted object conflicts under the error policy.
        let stale = stack.context("stale")
        let staleNote = stale.object(with: note.objectID)
        _ = staleNote.objectID
        #expect(throws: ObjectGraphError.objectNotFound) { try stale.existingObject(with: note.objectID) }
    }
}
