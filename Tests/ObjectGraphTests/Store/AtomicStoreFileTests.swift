import Foundation
import Testing
import ObjectGraph
@testable import ObjectGraphCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The binary and XML stores: a file they cannot read is refused without crashing, and a write
/// that fails leaves the file, the store and the context as they were.
@Suite("Atomic store files")
struct AtomicStoreFileTests {
    private static let depth = 100_000

    /// Two models that differ only in the order they list an entity's properties are the same
    /// model (same version hashes); the file says which cell holds which property, so either reads
    /// the other's file, values in their places.
    @Test(arguments: [StoreType.binary, .xml])
    func aModelListingThePropertiesInAnotherOrderReadsTheFile(_ type: StoreType) throws {
        let directory = TemporaryDirectory()
        let url = directory.file("items")
        func model(reversed: Bool) -> ManagedObjectModel {
            let properties: [PropertyDescription] = [.attribute("name", .string), .attribute("count", .integer64), .attribute("note", .string)]
            return ManagedObjectModel(entities: [EntityDescription(name: "Item", properties: reversed ? properties.reversed() : properties)])
        }
        #expect(model(reversed: false).versionChecksum == model(reversed: true).versionChecksum)
        let writer = PersistentStoreCoordinator(managedObjectModel: model(reversed: false))
        let store = try writer.addPersistentStore(type: type, at: url)
        let context = ManagedObjectContext(concurrencyType: .confinement)
        context.persistentStoreCoordinator = writer
        _ = context.insert("Item", ["name": "bolt", "count": Int64(7), "note": "steel"])
        try context.save()
        try writer.removePersistentStore(store)

        let reader = PersistentStoreCoordinator(managedObjectModel: model(reversed: true))
        try reader.addPersistentStore(type: type, at: url)
        let readerContext = ManagedObjectContext(concurrencyType: .confinement)
        readerContext.persistentStoreCoordinator = reader
        let item = try #require(try readerContext.all("Item").first)
        #expect(item.value(forKey: "name") as? String == "bolt")
        #expect(item.value(forKey: "count") as? Int64 == 7)
        #expect(item.value(forKey: "note") as? String == "steel")
    }

    @Test func anXMLFileNestingArraysTooDeeplyIsRefusedAsNotADatabase() throws {
        let directory = TemporaryDirectory()
        let url = directory.file("deep.xml")
        var text = #"<?xml version="1.0" encoding="UTF-8"?><plist version="1.0">"#
        text += String(repeating: "<array>", count: Self.depth) + String(repeating: "</array>", count: Self.depth) + "</plist>"
        try Data(text.utf8).write(to: url)
        try expectNotADatabase(.xml, at: url)
    }

    @Test func aBinaryFileNestingArraysTooDeeplyIsRefusedAsNotADatabase() throws {
        let directory = TemporaryDirectory()
        let url = directory.file("deep.binary")
        try Self.nestedBinaryPropertyList(depth: Self.depth).write(to: url)
        try expectNotADatabase(.binary, at: url)
    }

    @Test func aBinaryFileWhoseArrayContainsItselfIsRefusedAsNotADatabase() throws {
        let directory = TemporaryDirectory()
        let url = directory.file("cycle.binary")
        try Self.nestedBinaryPropertyList(depth: 3, cycle: true).write(to: url)
        try expectNotADatabase(.binary, at: url)
    }

    private func expectNotADatabase(_ type: StoreType, at url: URL) throws {
        let before = try Data(contentsOf: url)
        let coordinator = PersistentStoreCoordinator(managedObjectModel: TestModels.notes())
        let error = try #require(throws: ObjectGraphError.self) { try coordinator.addPersistentStore(type: type, at: url) }
        #expect(error.code == .notADatabase)
        #expect(error.message.contains(url.path))
        #expect(try Data(contentsOf: url) == before)
    }

    /// A binary property list of `depth` arrays, each holding the next (the last one empty, or
    /// holding the first when `cycle`).
    static func nestedBinaryPropertyList(depth: Int, cycle: Bool = false) -> Data {
        var data = Data("bplist00".utf8)
        var offsets: [Int] = []
        func bigEndian(_ value: Int, _ size: Int) -> [UInt8] { (0..<size).reversed().map { UInt8(truncatingIfNeeded: value >> ($0 * 8)) } }
        for i in 0..<depth {
            offsets.append(data.count)
            if i == depth - 1 && !cycle {
                data.append(0xA0)
            } else {
                data.append(0xA1)
                data.append(contentsOf: bigEndian(i == depth - 1 ? 0 : i + 1, 4))
            }
        }
        let tableOffset = data.count
        for offset in offsets { data.append(contentsOf: bigEndian(offset, 4)) }
        data.append(contentsOf: [0, 0, 0, 0, 0, 0])  // unused, sort version
        data.append(4)  // offset size
        data.append(4)  // object reference size
        data.append(contentsOf: bigEndian(depth, 8))
        data.append(contentsOf: bigEndian(0, 8))  // top object
        data.append(contentsOf: bigEndian(tableOffset, 8))
        return data
    }

    // MARK: - Writing

    /// A store with one saved note, and a context holding a second, unsaved one.
    private func storeWithPendingChange(_ kind: EveryStore) throws -> (ReopenableStack, ManagedObjectContext) {
        let stack = try ReopenableStack(kind, model: TestModels.notes())
        let first = stack.context()
        _ = first.insert("Note", ["title": "saved"])
        try first.save()
        let context = stack.context()
        _ = context.insert("Note", ["title": "pending"])
        return (stack, context)
    }

    private func titles(in stack: ReopenableStack) throws -> [String] {
        try stack.context().all("Note", sortedBy: "title").compactMap { $0.value(forKey: "title") as? String }
    }

    /// A removed store drops the rows it read (they hold object IDs, which hold the store, and would
    /// keep it and its model alive). A save of a change to one of its objects afterwards is refused,
    /// and the file keeps what it had; so is a write that reaches the store itself after it closed
    /// (a save racing the removal).
    @Test(arguments: EveryStore.atomic)
    func aSaveThroughAnObjectOfARemovedStoreIsRefusedAndLeavesTheFile(_ kind: EveryStore) throws {
        let (stack, _) = try storeWithPendingChange(kind)
        let context = stack.context()
        let note = try #require(context.all("Note", sortedBy: "title").first)
        note.setValue("changed after the store was removed", forKey: "title")
        let before = try FileFingerprint(stack.url)
        let store = try #require(stack.store)
        try stack.coordinator.removePersistentStore(store)
        let error = try #require(throws: ObjectGraphError.self) { try context.save() }
        #expect(error.code == .objectNotFound)
        #expect(error.message.contains("was its store removed"), "\(error.message)")
        #expect(context.hasChanges)

        let entity = try #require(stack.model.entitiesByName["Note"])
        let closed = try #require(throws: ObjectGraphError.self) { try store.backend.allocatePrimaryKeys(for: entity, count: 1) }
        #expect(closed.code == .io)
        #expect(closed.message.contains(stack.url.path) && closed.message.contains("removed"), "\(closed.message)")
        #expect(try FileFingerprint(stack.url) == before)
        try stack.reopen()
        #expect(try titles(in: stack) == ["saved"])
    }

    @Test(arguments: EveryStore.atomic)
    func aReadOnlyFileIsNotReplacedOnSaveAndTheContextKeepsItsChanges(_ kind: EveryStore) throws {
        let (stack, context) = try storeWithPendingChange(kind)
        try FileManager.default.setAttributes([.posixPermissions: 0o444], ofItemAtPath: stack.url.path)
        let before = try FileFingerprint(stack.url)
        let error = try #require(throws: ObjectGraphError.self) { try context.save() }
        #expect(error.code == .readOnly)
        #expect(error.message.contains(stack.url.path))
        #expect(context.hasChanges)
        #expect(try FileFingerprint(stack.url) == before)
        #expect(try titles(in: stack) == ["saved"])
        // Once the file can be written, the same context saves what it kept.
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: stack.url.path)
        try context.save()
        try stack.reopen()
        #expect(try titles(in: stack) == ["pending", "saved"])
    }

    @Test(arguments: EveryStore.atomic)
    func aFullDiskIsReportedAsDiskFullAndLeavesTheFileAndTheStoreAsTheyWere(_ kind: EveryStore) throws {
        let (stack, context) = try storeWithPendingChange(kind)
        let atomic = try #require(stack.store?.backend as? AtomicStore)
        atomic.failWrites(withErrno: ENOSPC)
        let before = try FileFingerprint(stack.url)
        let error = try #require(throws: ObjectGraphError.self) { try context.save() }
        #expect(error.code == .diskFull)
        #expect(error.message.contains(stack.url.path))
        #expect(context.hasChanges)
        #expect(try FileFingerprint(stack.url) == before)
        #expect(try titles(in: stack) == ["saved"])
        atomic.failWrites(withErrno: nil)
        try context.save()
        try stack.reopen()
        #expect(try titles(in: stack) == ["pending", "saved"])
    }

    @Test(arguments: EveryStore.atomic)
    func allocatingKeysBeforeTheFirstReadKeepsTheFilesRows(_ kind: EveryStore) throws {
        let (stack, _) = try storeWithPendingChange(kind)
        try stack.reopen()
        let atomic = try #require(stack.store?.backend as? AtomicStore)
        let note = try #require(stack.model.entitiesByName["Note"])
        let first = try atomic.allocatePrimaryKeys(for: note, count: 3)
        #expect(first == 2)
        try stack.reopen()
        #expect(try titles(in: stack) == ["saved"])
        let again = try #require(stack.store?.backend as? AtomicStore)
        #expect(try again.allocatePrimaryKeys(for: note, count: 1) == 5)
    }

    @Test(arguments: EveryStore.atomic)
    func anInputOutputErrorIsReportedAsIO(_ kind: EveryStore) throws {
        let (stack, context) = try storeWithPendingChange(kind)
        let atomic = try #require(stack.store?.backend as? AtomicStore)
        atomic.failWrites(withErrno: EIO)
        let error = try #require(throws: ObjectGraphError.self) { try context.save() }
        #expect(error.code == .io)
        #expect(try titles(in: stack) == ["saved"])
    }
}
