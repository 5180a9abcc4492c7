import Foundation
import Testing
import ObjectGraph
@testable import ObjectGraphCore

@Suite("Store options: read once, typed, a wrong type refused")
struct StoreOptionsTests {
    @Test func knownOptionsAreReadIntoTypedValues() throws {
        let options = try StoreOptions([
            PersistentStoreOption.readOnly: true, PersistentStoreOption.durability: "NORMAL",
            PersistentStoreOption.maximumReaderCount: 2, PersistentStoreOption.busyTimeout: 1,
            "SomethingElse": "ignored, as Core Data ignores unknown keys",
        ])
        #expect(options.readOnly && options.durability == .normal && options.maximumReaderCount == 2 && options.busyTimeout == 1)
        let defaults = try StoreOptions(nil)
        #expect(!defaults.readOnly && defaults.durability == .full && defaults.maximumReaderCount == 5 && defaults.busyTimeout == 5)
    }

    @Test(arguments: [
        (PersistentStoreOption.readOnly, "yes" as any Sendable),
        (PersistentStoreOption.durability, "sometimes" as any Sendable),
        (PersistentStoreOption.maximumReaderCount, 0 as any Sendable),
        (PersistentStoreOption.busyTimeout, Double.nan as any Sendable),
    ] as [(String, any Sendable)])
    func aKnownOptionOfTheWrongTypeIsRefusedAndNoStoreIsCreated(_ key: String, _ value: any Sendable) throws {
        let directory = TemporaryDirectory()
        let url = directory.file("store.sqlite")
        let coordinator = PersistentStoreCoordinator(managedObjectModel: TestModels.notes())
        do {
            try coordinator.addPersistentStore(type: .sqlite, at: url, options: [key: value])
            Issue.record("\(key) = \(value) was accepted")
        } catch let error as ObjectGraphError {
            #expect(error.code == .unsupported)
            #expect(error.key == key)
            #expect(error.message.contains(key))
        }
        #expect(coordinator.persistentStores.isEmpty)
        #expect(!FileManager.default.fileExists(atPath: url.path))
    }
}
