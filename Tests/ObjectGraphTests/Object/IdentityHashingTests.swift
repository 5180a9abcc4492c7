import Foundation
import Testing
import ObjectGraph
@testable import ObjectGraphCore

/// Object IDs and objects hash through one word (`_rawHashValue(seed:)`) in sets and dictionaries:
/// equal IDs must land in one bucket however they were made, and a set must tell distinct ones apart.
@Suite("Identity hashing")
struct IdentityHashingTests {
    @Test(arguments: [StoreKind.sqlite, .binary, .xml])
    func oneRowNamedByTwoCoordinatorsIsOneKey(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        let context = stack.context()
        let notes = (0..<50).map { context.insert("Note", ["title": "n\($0)"]) }
        try context.save()
        let ids = notes.map(\.objectID)

        // A second coordinator on the same file (and model) makes its own store object, with the same UUID.
        let other = PersistentStoreCoordinator(managedObjectModel: stack.model)
        try other.addPersistentStore(type: kind.type, at: stack.storeURL)
        let reader = ManagedObjectContext(concurrencyType: .confinement)
        reader.persistentStoreCoordinator = other
        let theirs = try reader.fetch(FetchRequest<ManagedObjectID>(entityName: "Note"))
        #expect(theirs.count == ids.count)

        let mine = Set(ids)
        for id in theirs {
            #expect(mine.contains(id))
            #expect(id.persistentStore !== stack.store)
        }
        #expect(Set(ids + theirs).count == ids.count)
        var titles: [ManagedObjectID: String] = [:]
        for note in notes { titles[note.objectID] = note.value(forKey: "title") as? String }
        for id in theirs { #expect(titles[id] != nil) }
        // The hash the standard library's Hasher computes agrees with equality too.
        let byHashValue = Dictionary(grouping: ids + theirs, by: \.hashValue)
        #expect(byHashValue.values.allSatisfy { group in group.allSatisfy { $0 == group[0] } })
    }

    /// Two coordinators that each built the model (two containers loading one model file) name a row
    /// with equal IDs too, as the ID's documentation says.
    @Test(arguments: [StoreKind.sqlite, .binary])
    func oneRowNamedThroughTwoModelInstancesIsOneKey(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        let context = stack.context()
        let notes = (0..<20).map { context.insert("Note", ["title": "n\($0)"]) }
        let folder = context.insert("Folder", ["name": "f"])
        try context.save()
        let other = PersistentStoreCoordinator(managedObjectModel: TestModels.notes())
        try other.addPersistentStore(type: kind.type, at: stack.storeURL)
        #expect(other.managedObjectModel !== stack.model)
        let reader = ManagedObjectContext(concurrencyType: .confinement)
        reader.persistentStoreCoordinator = other
        let theirs = try reader.fetch(FetchRequest<ManagedObjectID>(entityName: "Note"))
        #expect(Set(notes.map(\.objectID)) == Set(theirs))
        #expect(Set(notes.map(\.objectID) + theirs).count == 20)
        // Rows of different entity trees with one primary key stay different.
        let theirFolder = try #require(try reader.fetch(FetchRequest<ManagedObjectID>(entityName: "Folder")).first)
        #expect(theirFolder == folder.objectID)
        #expect(!theirs.contains(theirFolder))
        #expect(!notes.map(\.objectID).contains(folder.objectID))
    }

    @Test func temporaryAndPermanentIDsStayDistinct() throws {
        let stack = try TestStack(.sqlite)
        let context = stack.context()
        let notes = (0..<200).map { context.insert("Note", ["title": "n\($0)"]) }
        let temporary = notes.map(\.objectID)
        try context.save()
        let permanent = notes.map(\.objectID)
        #expect(Set(temporary).count == 200)
        #expect(Set(permanent).count == 200)
        #expect(Set(temporary + permanent).count == 400)
        // The context still resolves a temporary ID to its saved object.
        for (old, note) in zip(temporary, notes) { #expect(context.registeredObject(for: old) === note) }
    }

    @Test func objectsHashByIdentity() throws {
        let stack = try TestStack(.inMemory)
        let context = stack.context()
        let notes = (0..<100).map { _ in context.insert("Note", ["title": "same"]) }
        var set = Set(notes)
        #expect(set.count == 100)
        for note in notes { #expect(set.contains(note)) }
        set.subtract(notes.prefix(40))
        #expect(set.count == 60)
        #expect(!set.contains(notes[0]) && set.contains(notes[99]))
    }
}
