import Foundation
import Testing
import ObjectGraph
@testable import ObjectGraphCore

/// A coordinator with several stores: each object is saved to its own store (configurations,
/// `assign(_:to:)`), and fetches see the union, ordered and paged as asked.
@Suite("Several stores on one coordinator: configurations, assign(_:to:), fetches across stores")
struct StoreRoutingTests {
    static let kinds: [StoreKind] = [.sqlite, .binary]

    /// The rows of an entity in one store file, read by a coordinator that has only that file.
    static func count(_ entity: String, in url: URL, kind: StoreKind, model: ManagedObjectModel) throws -> Int {
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        try coordinator.addPersistentStore(type: kind.type, at: url)
        let context = ManagedObjectContext(concurrencyType: .confinement)
        context.persistentStoreCoordinator = coordinator
        return try context.count(for: FetchRequest<ManagedObject>(entityName: entity))
    }

    @Test(arguments: kinds)
    func objectsOfTwoConfigurationsAreSavedEachToItsOwnStoreFile(_ kind: StoreKind) throws {
        let directory = TemporaryDirectory()
        let model = TestModels.notes()
        model.setEntities([model.entitiesByName["Folder"]!], forConfigurationName: "Folders")
        model.setEntities([model.entitiesByName["Note"]!, model.entitiesByName["Tag"]!], forConfigurationName: "Notes")
        #expect(model.configurations == ["Folders", "Notes"])
        #expect(model.entities(forConfigurationName: "Folders")?.map(\.name) == ["Folder"])
        #expect(model.entities(forConfigurationName: "Nothing") == nil)

        let unknown = PersistentStoreCoordinator(managedObjectModel: model)
        #expect(throws: ObjectGraphError.invalidModel) {
            try unknown.addPersistentStore(type: kind.type, configuration: "Archive", at: directory.file("unknown.\(kind.rawValue)"))
        }
        #expect(!FileManager.default.fileExists(atPath: directory.file("unknown.\(kind.rawValue)").path))

        let foldersURL = directory.file("folders.\(kind.rawValue)")
        let notesURL = directory.file("notes.\(kind.rawValue)")
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        let folders = try coordinator.addPersistentStore(type: kind.type, configuration: "Folders", at: foldersURL)
        let notes = try coordinator.addPersistentStore(type: kind.type, configuration: "Notes", at: notesURL)
        let context = ManagedObjectContext(concurrencyType: .confinement)
        context.persistentStoreCoordinator = coordinator

        for i in 0..<3 { _ = context.insert("Folder", ["name": "folder \(i)"]) }
        for i in 0..<5 { _ = context.insert("Note", ["title": "note \(i)", "rank": Int64(i)]) }
        _ = context.insert("Tag", ["name": "tag"])
        try context.save()

        for folder in try context.all("Folder") { #expect(folder.objectID.persistentStore === folders) }
        for note in try context.all("Note") { #expect(note.objectID.persistentStore === notes) }
        #expect(try context.count(for: FetchRequest<ManagedObject>(entityName: "Folder")) == 3)
        #expect(try context.count(for: FetchRequest<ManagedObject>(entityName: "Note")) == 5)

        // Each file holds its own entities only.
        try coordinator.removePersistentStore(folders)
        try coordinator.removePersistentStore(notes)
        #expect(try Self.count("Folder", in: foldersURL, kind: kind, model: model) == 3)
        #expect(try Self.count("Note", in: foldersURL, kind: kind, model: model) == 0)
        #expect(try Self.count("Note", in: notesURL, kind: kind, model: model) == 5)
        #expect(try Self.count("Tag", in: notesURL, kind: kind, model: model) == 1)
        #expect(try Self.count("Folder", in: notesURL, kind: kind, model: model) == 0)
    }

    @Test(arguments: kinds)
    func aStoreOfTheDefaultConfigurationHoldsEveryEntity(_ kind: StoreKind) throws {
        let directory = TemporaryDirectory()
        let model = TestModels.notes()
        model.setEntities([model.entitiesByName["Folder"]!], forConfigurationName: "Folders")
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        let folders = try coordinator.addPersistentStore(type: kind.type, configuration: "Folders", at: directory.file("folders.\(kind.rawValue)"))
        let everything = try coordinator.addPersistentStore(
            type: kind.type, configuration: "PF_DEFAULT_CONFIGURATION_NAME", at: directory.file("all.\(kind.rawValue)"))
        let context = ManagedObjectContext(concurrencyType: .confinement)
        context.persistentStoreCoordinator = coordinator
        let folder = context.insert("Folder", ["name": "F"])
        let note = context.insert("Note", ["title": "n"])
        context.assign(folder, to: everything)
        context.assign(note, to: everything)
        let other = context.insert("Folder", ["name": "G"])
        try context.save()
        #expect(folder.objectID.persistentStore === everything)
        #expect(note.objectID.persistentStore === everything)
        #expect(other.objectID.persistentStore === folders, "unassigned, the first store whose configuration has the entity")
    }

    @Test(arguments: kinds)
    func assignedObjectsGoToTheirStoreAndFetchesOrderAndPageTheUnion(_ kind: StoreKind) throws {
        let directory = TemporaryDirectory()
        let model = TestModels.notes()
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        let first = try coordinator.addPersistentStore(type: kind.type, at: directory.file("first.\(kind.rawValue)"))
        let second = try coordinator.addPersistentStore(type: kind.type, at: directory.file("second.\(kind.rawValue)"))
        let context = ManagedObjectContext(concurrencyType: .confinement)
        context.persistentStoreCoordinator = coordinator

        // Without an assignment, the first store; with one, the assigned store, even through a child.
        var expected: [String: PersistentStore] = [:]
        for rank in 0..<6 {
            let note = context.insert("Note", ["title": "n\(rank)", "rank": Int64(rank)])
            if rank % 2 == 1 {
                context.assign(note, to: second)
                expected["n\(rank)"] = second
            } else {
                expected["n\(rank)"] = first
            }
        }
        let early = context.insert("Note", ["title": "early", "rank": Int64(100)])
        context.assign(early, to: second)
        try context.obtainPermanentIDs(for: [early])
        #expect(early.objectID.persistentStore === second)
        expected["early"] = second

        let child = ManagedObjectContext(concurrencyType: .confinement)
        child.parent = context
        let fromChild = child.insert("Note", ["title": "child", "rank": Int64(-1)])
        child.assign(fromChild, to: second)
        expected["child"] = second
        try child.save()
        try context.save()

        for note in try context.all("Note") {
            let title = note.value(forKey: "title") as! String
            #expect(note.objectID.persistentStore === expected[title], "\(title)")
        }

        // The union, sorted and paged as asked, though each store holds only part of it.
        let request = FetchRequest<ManagedObject>(entityName: "Note")
        request.sortDescriptors = [FetchSortDescriptor(key: "rank", ascending: false)]
        request.fetchOffset = 1
        request.fetchLimit = 4
        #expect(try context.fetch(request).map { $0.value(forKey: "rank") as! Int64 } == [5, 4, 3, 2])
        #expect(try context.count(for: request) == 4)
        let ids = FetchRequest<ManagedObjectID>(entityName: "Note")
        ids.sortDescriptors = [FetchSortDescriptor(key: "rank")]
        ids.fetchLimit = 2
        let firstTwo = try context.fetch(ids)
        #expect(firstTwo.map { context.object(with: $0).value(forKey: "title") as? String } == ["child", "n0"])

        // Updates and deletes go to the store each object lives in.
        let fresh = ManagedObjectContext(concurrencyType: .confinement)
        fresh.persistentStoreCoordinator = coordinator
        for note in try fresh.all("Note") {
            if (note.value(forKey: "rank") as! Int64) % 2 == 0 { fresh.delete(note) } else { note.setValue(Int64(7), forKey: "rank") }
        }
        try fresh.save()
        let check = ManagedObjectContext(concurrencyType: .confinement)
        check.persistentStoreCoordinator = coordinator
        let left = try check.all("Note", sortedBy: "title")
        #expect(left.map { $0.value(forKey: "title") as! String } == ["child", "n1", "n3", "n5"])
        for note in left {
            #expect(note.value(forKey: "rank") as? Int64 == 7)
            #expect(note.objectID.persistentStore === expected[note.value(forKey: "title") as! String])
        }
    }
}
