import Foundation
import Testing
import ObjectGraph
@testable import ObjectGraphCore

/// A store whose folder does not exist is refused as an I/O error naming the folder, the same
/// for every store type that writes a file: the folder is missing, not read-only.
@Suite("A missing folder is not a read-only one")
struct MissingFolderTests {
    @Test(arguments: [StoreType.sqlite, .binary, .xml])
    func aStoreInAMissingFolderIsRefusedAsIONamingTheFolder(_ type: StoreType) throws {
        let directory = TemporaryDirectory()
        let missing = directory.file("missing")
        let url = missing.appendingPathComponent("store.\(type.rawValue)")
        let coordinator = PersistentStoreCoordinator(managedObjectModel: TestModels.notes())
        let error = try #require(throws: ObjectGraphError.self) { try coordinator.addPersistentStore(type: type, at: url) }
        #expect(error.code == .io)
        #expect(error.message == "Cannot create the \(type) store at \(url.path): the folder \(missing.path) does not exist")
        #expect(!FileManager.default.fileExists(atPath: missing.path))
        #expect(coordinator.persistentStores.isEmpty)
    }

    @Test(arguments: [StoreType.sqlite, .binary, .xml])
    func aFileWhereTheFolderShouldBeIsAMissingFolder(_ type: StoreType) throws {
        let directory = TemporaryDirectory()
        let file = directory.file("not-a-folder")
        try Data("x".utf8).write(to: file)
        let url = file.appendingPathComponent("store.\(type.rawValue)")
        let coordinator = PersistentStoreCoordinator(managedObjectModel: TestModels.notes())
        let error = try #require(throws: ObjectGraphError.self) { try coordinator.addPersistentStore(type: type, at: url) }
        #expect(error.code == .io)
        #expect(error.message.contains("the folder \(file.path) does not exist"))
        #expect(try Data(contentsOf: file) == Data("x".utf8))
    }

    @Test(arguments: [StoreType.binary, .xml])
    func savingAfterTheFolderWasRemovedIsAnIOErrorAndTheContextKeepsItsChanges(_ type: StoreType) throws {
        let directory = TemporaryDirectory()
        let folder = directory.file("folder")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: false)
        let url = folder.appendingPathComponent("store.\(type.rawValue)")
        let coordinator = PersistentStoreCoordinator(managedObjectModel: TestModels.notes())
        try coordinator.addPersistentStore(type: type, at: url)
        try FileManager.default.removeItem(at: folder)
        let context = ManagedObjectContext(concurrencyType: .confinement)
        context.persistentStoreCoordinator = coordinator
        context.insert("Note", ["title": "kept"])
        let error = try #require(throws: ObjectGraphError.self) { try context.save() }
        #expect(error.code == .io)
        #expect(error.message.contains("the folder \(folder.path) does not exist"))
        #expect(context.hasChanges)
        // Once the folder is back, the same context saves what it kept.
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: false)
        try context.save()
        #expect(FileManager.default.fileExists(atPath: url.path))
    }

    @Test(arguments: [StoreType.sqlite, .binary, .xml])
    func aFolderThatCannotBeWrittenIsStillReadOnly(_ type: StoreType) throws {
        let directory = TemporaryDirectory()
        let folder = directory.file("locked")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: false)
        try FileManager.default.setAttributes([.posixPermissions: 0o555], ofItemAtPath: folder.path)
        defer { try? FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: folder.path) }
        let url = folder.appendingPathComponent("store.\(type.rawValue)")
        let coordinator = PersistentStoreCoordinator(managedObjectModel: TestModels.notes())
        let error = try #require(throws: ObjectGraphError.self) { try coordinator.addPersistentStore(type: type, at: url) }
        #expect(error.code == .readOnly)
        #expect(error.message.contains("the folder \(folder.path) is not writable"))
    }
}
