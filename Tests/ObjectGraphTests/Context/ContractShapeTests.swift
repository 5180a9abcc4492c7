import Foundation
import Testing
import ObjectGraph
@testable import ObjectGraphCore

/// The shapes the public API contract pins down (notification keys, ID equality, metadata, reports): programs written against the
/// contract compile and behave as these tests say.
@Suite("Contract: notification keys, object ID equality, store metadata, changes reported once")
struct ContractShapeTests {
    typealias Observed = MergeTests.Observed

    @Test func notificationKeysAreCoreDatasEnumWithCoreDatasRawValues() {
        let expected: [ManagedObjectContext.NotificationKey: String] = [
            .insertedObjects: "inserted", .updatedObjects: "updated", .deletedObjects: "deleted",
            .refreshedObjects: "refreshed", .invalidatedObjects: "invalidated", .invalidatedAllObjects: "invalidatedAll",
            .insertedObjectIDs: "inserted_objectIDs", .updatedObjectIDs: "updated_objectIDs",
            .deletedObjectIDs: "deleted_objectIDs", .refreshedObjectIDs: "refreshed_objectIDs",
            .invalidatedObjectIDs: "invalidated_objectIDs", .queryGeneration: "managedObjectContextQueryGenerationKey",
        ]
        #expect(ManagedObjectContext.NotificationKey.allCases.count == expected.count)
        for (key, raw) in expected {
            #expect(key.rawValue == raw)
            #expect(ManagedObjectContext.NotificationKey(rawValue: raw) == key)
        }
    }

    @Test(arguments: [StoreKind.sqlite, .binary])
    func idsOfOneRowFromTwoCoordinatorsAreEqualAndResolveInEither(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        let writer = stack.context()
        let note = writer.insert("Note", ["title": "shared", "rank": 7])
        try writer.save()
        let id = note.objectID

        // A second coordinator on the same file: another PersistentStore object, the same NSStoreUUID.
        let other = PersistentStoreCoordinator(managedObjectModel: stack.model)
        let otherStore = try other.addPersistentStore(type: kind.type, at: stack.storeURL)
        #expect(otherStore !== stack.store)
        #expect(otherStore.identifier == stack.store.identifier)
        let reader = ManagedObjectContext(concurrencyType: .confinement)
        reader.persistentStoreCoordinator = other
        let fetched = try #require(try reader.all("Note").first)
        #expect(fetched.objectID == id)
        #expect(fetched.objectID.hashValue == id.hashValue)
        #expect(Set([fetched.objectID, id]).count == 1)

        // An ID made by the first coordinator resolves in a context of the second, and the other way.
        let resolved = try reader.existingObject(with: id)
        #expect(resolved === fetched)
        #expect(resolved.objectID.persistentStore === otherStore)
        #expect(try writer.existingObject(with: fetched.objectID) === note)

        // Read back from its URI by the second coordinator: still equal.
        let fromURI = try #require(other.managedObjectID(forURIRepresentation: id.uriRepresentation()))
        #expect(fromURI == id)

        // Different rows, and temporary IDs, stay distinct.
        let second = writer.insert("Note", ["title": "second"])
        #expect(second.objectID != id)
        let third = writer.insert("Note", ["title": "third"])
        #expect(second.objectID != third.objectID)
        #expect(second.objectID == second.objectID)
    }

    @Test(arguments: StoreKind.allCases)
    func storeMetadataHoldsStringsForTheStoreUUIDAndType(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        let metadata: [String: any Sendable] = stack.store.metadata
        #expect(metadata["NSStoreUUID"] as? String == stack.store.identifier)
        #expect(metadata["NSStoreType"] as? String == kind.type.rawValue)
    }

    @Test(arguments: StoreKind.allCases)
    func objectsDidChangeReportsEachChangeOnce(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        let context = stack.context()
        let didChange = Observed(ManagedObjectContext.objectsDidChangeNotification, from: context)
        func last(_ key: ManagedObjectContext.NotificationKey) -> Set<ManagedObject>? {
            didChange.all.last?.userInfo?[key.rawValue] as? Set<ManagedObject>
        }

        let a = context.insert("Note", ["title": "a"])
        context.processPendingChanges()
        #expect(didChange.all.count == 1)
        #expect(last(.insertedObjects) == [a])

        // Nothing changed since: no notification.
        context.processPendingChanges()
        #expect(didChange.all.count == 1)

        // A second insert: only it is reported.
        let b = context.insert("Note", ["title": "b"])
        context.processPendingChanges()
        #expect(didChange.all.count == 2)
        #expect(last(.insertedObjects) == [b])
        #expect(last(.updatedObjects)?.isEmpty == true)

        try context.save()
        let countAfterSave = didChange.all.count

        // An update of a saved object, then nothing, then an update of another.
        a.setValue("a2", forKey: "title")
        context.processPendingChanges()
        #expect(didChange.all.count == countAfterSave + 1)
        #expect(last(.updatedObjects) == [a])
        #expect(last(.insertedObjects)?.isEmpty == true)
        context.processPendingChanges()
        #expect(didChange.all.count == countAfterSave + 1)
        b.setValue(Int64(3), forKey: "rank")
        context.processPendingChanges()
        #expect(last(.updatedObjects) == [b])

        // A delete is reported once, as deleted.
        context.delete(a)
        context.processPendingChanges()
        #expect(last(.deletedObjects) == [a])
        #expect(last(.updatedObjects)?.isEmpty == true)
        let countAfterDelete = didChange.all.count
        context.processPendingChanges()
        #expect(didChange.all.count == countAfterDelete)
    }

    @Test func remoteMergeTakesRawValueKeysEnumKeysAndURIs() throws {
        let stack = try TestStack(.sqlite)
        let writer = stack.context("writer")
        let a = writer.insert("Note", ["title": "a"])
        let b = writer.insert("Note", ["title": "b"])
        try writer.save()
        let reader = stack.context("reader")
        let readA = try reader.existingObject(with: a.objectID)
        let readB = try reader.existingObject(with: b.objectID)
        #expect(readA.value(forKey: "title") as? String == "a")

        // Changed behind the reader's back (as a batch update would), then announced by raw-value key and URI.
        a.setValue("a2", forKey: "title")
        writer.delete(b)
        try writer.save()
        ManagedObjectContext.mergeChanges(
            fromRemoteContextSave: [
                ManagedObjectContext.NotificationKey.updatedObjectIDs.rawValue: [a.objectID.uriRepresentation()],
                ManagedObjectContext.NotificationKey.deletedObjects: Set([b.objectID]),
            ],
            into: [reader])
        #expect(readA.value(forKey: "title") as? String == "a2")
        #expect(reader.registeredObject(for: readB.objectID) == nil || readB.isDeleted)
    }
}
