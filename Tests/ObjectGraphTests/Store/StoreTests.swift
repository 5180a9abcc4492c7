import Foundation
import Testing
import ObjectGraph
@testable import ObjectGraphCore

@Suite("Stores and the coordinator")
struct StoreTests {
    @Test func aFileThatIsNotADatabaseIsRefusedAndLeftAsItWas() throws {
        let directory = TemporaryDirectory()
        let url = directory.file("notes.sqlite")
        let content = Data("this is a text file, not a database".utf8)
        try content.write(to: url)
        let coordinator = PersistentStoreCoordinator(managedObjectModel: TestModels.notes())
        let error = try #require(throws: ObjectGraphError.self) { try coordinator.addPersistentStore(type: .sqlite, at: url) }
        #expect(error.code == .notADatabase)
        #expect(error.message.contains(url.path))
        #expect(try Data(contentsOf: url) == content)
        #expect(coordinator.persistentStores.isEmpty)
    }

    @Test func aStoreWrittenWithAnotherModelIsRefused() throws {
        let directory = TemporaryDirectory()
        let url = directory.file("notes.sqlite")
        do {
            let coordinator = PersistentStoreCoordinator(managedObjectModel: TestModels.notes())
            let store = try coordinator.addPersistentStore(type: .sqlite, at: url)
            try coordinator.removePersistentStore(store)
        }
        let other = ManagedObjectModel(entities: [EntityDescription(name: "Other", properties: [.attribute("x", .string)])])
        let coordinator = PersistentStoreCoordinator(managedObjectModel: other)
        let error = try #require(throws: ObjectGraphError.self) { try coordinator.addPersistentStore(type: .sqlite, at: url) }
        #expect(error.code == .incompatibleModel)
        #expect(error.message.contains(url.path))
    }

    @Test func aLocationThatCannotBeWrittenIsRefused() throws {
        let coordinator = PersistentStoreCoordinator(managedObjectModel: TestModels.notes())
        let url = URL(fileURLWithPath: "/nonexistent-\(UUID().uuidString)/notes.sqlite")
        let error = try #require(throws: ObjectGraphError.self) { try coordinator.addPersistentStore(type: .sqlite, at: url) }
        #expect(error.code == .io)
        #expect(error.message.contains(url.path))
        #expect(!FileManager.default.fileExists(atPath: url.path))
    }

    @Test func aReadOnlyStoreRefusesSavesAndKeepsTheChanges() throws {
        let directory = TemporaryDirectory()
        let url = directory.file("notes.sqlite")
        do {
            let stack = PersistentStoreCoordinator(managedObjectModel: TestModels.notes())
            let store = try stack.addPersistentStore(type: .sqlite, at: url)
            try stack.removePersistentStore(store)
        }
        let coordinator = PersistentStoreCoordinator(managedObjectModel: TestModels.notes())
        try coordinator.addPersistentStore(type: .sqlite, at: url, options: [PersistentStoreOption.readOnly: true])
        let context = ManagedObjectContext(concurrencyType: .confinement)
        context.persistentStoreCoordinator = coordinator
        _ = context.insert("Note", ["title": "x"])
        #expect(throws: ObjectGraphError.readOnly) { try context.save() }
        #expect(context.hasChanges)
    }

    @Test(arguments: [StoreKind.sqlite, .binary])
    func savedObjectsSurviveReopeningTheFile(_ kind: StoreKind) throws {
        let directory = TemporaryDirectory()
        let url = directory.file("notes.store")
        var identifier = ""
        do {
            let coordinator = PersistentStoreCoordinator(managedObjectModel: TestModels.notes())
            let store = try coordinator.addPersistentStore(type: kind.type, at: url)
            identifier = store.identifier
            let context = ManagedObjectContext(concurrencyType: .confinement)
            context.persistentStoreCoordinator = coordinator
            let folder = context.insert("Folder", ["name": "Inbox"])
            let tag = context.insert("Tag", ["name": "t"])
            for i in 0..<10 { _ = context.insert("Note", ["title": "n\(i)", "rank": i, "folder": folder, "tags": Set([tag])]) }
            try context.save()
            try coordinator.removePersistentStore(store)
        }
        let coordinator = PersistentStoreCoordinator(managedObjectModel: TestModels.notes())
        let store = try coordinator.addPersistentStore(type: kind.type, at: url)
        #expect(store.identifier == identifier)
        #expect(store.metadata[PersistentStore.metadataModelHashKey] as? String == TestModels.notes().versionHash)
        let context = ManagedObjectContext(concurrencyType: .confinement)
        context.persistentStoreCoordinator = coordinator
        let folder = try #require(try context.all("Folder").first)
        let notes = try #require(folder.value(forKey: "notes") as? Set<ManagedObject>)
        #expect(notes.compactMap { $0.value(forKey: "rank") as? Int64 }.sorted() == Array(0..<10))
        #expect(notes.allSatisfy { ($0.value(forKey: "tags") as? Set<ManagedObject>)?.count == 1 })
        // New rows do not reuse keys.
        let extra = context.insert("Note", ["title": "more"])
        try context.save()
        #expect(!notes.map(\.objectID).contains(extra.objectID))
    }

    @Test(arguments: StoreKind.everyStore)
    func inMemoryStoresAreNewEachTime(_ kind: StoreKind) throws {
        let coordinator = PersistentStoreCoordinator(managedObjectModel: TestModels.notes())
        let a = try coordinator.addPersistentStore(type: .inMemory, at: nil)
        let b = try coordinator.addPersistentStore(type: .inMemory, at: URL(fileURLWithPath: "/tmp/x"))
        #expect(a.identifier != b.identifier)
        #expect(coordinator.persistentStores.count == 2)
    }

    @Test(arguments: StoreKind.everyStore)
    func aSecondContextFaultsFromTheRowCacheWithoutSQL(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        let writer = stack.context("writer")
        for i in 0..<50 { _ = writer.insert("Note", ["title": "n\(i)", "rank": i]) }
        try writer.save()
        let background = stack.context("background")
        let request = FetchRequest<ManagedObjectID>(entityName: "Note")
        request.includesPropertyValues = true
        let ids = try background.fetch(request)
        #expect(ids.count == 50)
        let before = stack.coordinator.statistics
        let main = stack.context("main")
        let ranks = ids.map { main.object(with: $0).value(forKey: "rank") as? Int64 }
        #expect(Set(ranks.compactMap { $0 }) == Set(0..<50))
        let after = stack.coordinator.statistics
        #expect(after.sqlStatements == before.sqlStatements, "no SQL: \(before) → \(after)")
        #expect(after.rowCacheHits - before.rowCacheHits == 50)
        #expect(after.faultsFromStore == before.faultsFromStore)
        // Entries are released when the contexts that hold them go away.
        background.reset()
        main.reset()
        #expect(stack.coordinator.statistics.rowCacheCount == 0)
    }

    @Test(arguments: StoreKind.everyStore)
    func fetchedObjectsAreFaultsUnlessAskedOtherwise(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        let writer = stack.context()
        _ = writer.insert("Note", ["title": "a"])
        try writer.save()
        let reader = stack.context("reader")
        let fault = try #require(try reader.all("Note").first)
        #expect(fault.isFault)
        #expect(fault.value(forKey: "title") as? String == "a")
        #expect(!fault.isFault)
        let other = stack.context("other")
        let request = FetchRequest<ManagedObject>(entityName: "Note")
        request.returnsObjectsAsFaults = false
        #expect(try other.fetch(request).first?.isFault == false)
        #expect(try other.fetch(request).first === other.registeredObjects.first)
    }

    @Test(arguments: StoreKind.everyStore)
    func batchedFetchesLoadRowsOneBatchAtATime(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        let writer = stack.context()
        for i in 0..<250 { _ = writer.insert("Note", ["title": "n\(i)", "rank": i]) }
        try writer.save()
        let reader = stack.context("reader")
        let request = FetchRequest<ManagedObject>(entityName: "Note")
        request.fetchBatchSize = 100
        let notes = try reader.fetch(request)
        #expect(notes.count == 250)
        #expect(notes.allSatisfy { $0.isFault })
        let before = stack.coordinator.statistics.faultsFromStore
        _ = notes[0].value(forKey: "rank")
        #expect(stack.coordinator.statistics.faultsFromStore - before == 100)
        #expect(notes[99].isFault == false && notes[100].isFault == true)
        let total = notes.reduce(Int64(0)) { $0 + ($1.value(forKey: "rank") as! Int64) }
        #expect(total == Int64((0..<250).reduce(0, +)))
        #expect(stack.coordinator.statistics.faultsFromStore - before == 250)
    }

    @Test(arguments: StoreKind.everyStore)
    func batchedResultsKeepOnlyTheBatchInUse(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        let writer = stack.context()
        for i in 0..<1_000 { _ = writer.insert("Note", ["title": "n\(i)", "rank": i]) }
        try writer.save()
        let reader = stack.context("reader")
        let request = FetchRequest<ManagedObject>(entityName: "Note")
        request.predicate = FetchPredicate(format: "rank >= %d", 100)
        request.sortDescriptors = [FetchSortDescriptor(key: "rank", ascending: false)]
        request.fetchBatchSize = 100
        let results = try reader.fetchBatched(request)
        #expect(results.count == 900)
        let before = stack.coordinator.statistics.faultsFromStore
        var ranks: [Int64] = []
        var mostRegistered = 0
        for note in results {
            ranks.append(note.value(forKey: "rank") as! Int64)
            mostRegistered = max(mostRegistered, reader.registeredObjects.count)
        }
        #expect(ranks == (100..<1_000).reversed().map(Int64.init))
        #expect(stack.coordinator.statistics.faultsFromStore - before == 900)
        #expect(mostRegistered <= 200, "earlier batches are released: \(mostRegistered) registered at most")
        #expect(results.objectID(at: 0) == results[0].objectID)
    }

    @Test(arguments: StoreKind.everyStore)
    func prefetchingReadsRelationshipsInOneQueryPerKeyPath(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        let writer = stack.context()
        for f in 0..<10 {
            let folder = writer.insert("Folder", ["name": "f\(f)"])
            for n in 0..<5 { _ = writer.insert("Note", ["title": "n\(f)-\(n)", "folder": folder]) }
        }
        try writer.save()
        let reader = stack.context("reader")
        let request = FetchRequest<ManagedObject>(entityName: "Folder")
        request.relationshipKeyPathsForPrefetching = ["notes"]
        let folders = try reader.fetch(request)
        let faultsBefore = stack.coordinator.statistics.faultsFromStore
        let statementsBefore = stack.coordinator.statistics.sqlStatements
        var titles = 0
        for folder in folders {
            for note in folder.value(forKey: "notes") as! Set<ManagedObject> where note.value(forKey: "title") is String { titles += 1 }
        }
        #expect(titles == 50)
        #expect(stack.coordinator.statistics.faultsFromStore == faultsBefore)
        #expect(stack.coordinator.statistics.sqlStatements == statementsBefore)
        let notes = FetchRequest<ManagedObject>(entityName: "Note")
        notes.relationshipKeyPathsForPrefetching = ["folder"]
        let fetched = try stack.context("third").fetch(notes)
        let before = stack.coordinator.statistics.sqlStatements
        #expect(Set(fetched.compactMap { ($0.value(forKey: "folder") as? ManagedObject)?.value(forKey: "name") as? String }).count == 10)
        #expect(stack.coordinator.statistics.sqlStatements == before)
    }

    @Test(arguments: StoreKind.everyStore)
    func idDictionaryAndCountResultsFollowTheGenericParameter(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        let context = stack.context()
        let folder = context.insert("Folder", ["name": "F"])
        for i in 0..<4 { _ = context.insert("Note", ["title": "n\(i)", "rank": i, "folder": folder]) }
        try context.save()
        let ids = try context.fetch(FetchRequest<ManagedObjectID>(entityName: "Note"))
        #expect(ids.count == 4 && ids.allSatisfy { !$0.isTemporaryID })
        let dictionaries = FetchRequest<[String: Any]>(entityName: "Note")
        dictionaries.propertiesToFetch = ["title", "folder"]
        let rows = try context.fetch(dictionaries)
        #expect(rows.count == 4)
        #expect(rows.allSatisfy { $0["folder"] as? ManagedObjectID == folder.objectID && $0["rank"] == nil })
        #expect(try context.count(for: FetchRequest<ManagedObject>(entityName: "Note")) == 4)
        let mismatched = FetchRequest<ManagedObjectID>(entityName: "Note")
        mismatched.resultType = .dictionaryResultType
        #expect(throws: ObjectGraphError.invalidFetchRequest) { try context.fetch(mismatched) }
        #expect(throws: ObjectGraphError.invalidFetchRequest) { try context.fetch(FetchRequest<ManagedObject>(entityName: "Nope")) }
        let limited = FetchRequest<ManagedObjectID>(entityName: "Note")
        limited.fetchLimit = 2
        limited.fetchOffset = 1
        #expect(try context.fetch(limited).count == 2)
        #expect(try context.count(for: limited) == 2)
    }

    @Test(arguments: StoreKind.everyStore)
    func fetchesReflectPendingChanges(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        let context = stack.context()
        let saved = (0..<3).map { context.insert("Note", ["title": "s\($0)"]) }
        try context.save()
        _ = context.insert("Note", ["title": "new"])
        context.delete(saved[0])
        #expect(try context.all("Note").count == 3)
        #expect(try context.count(for: FetchRequest<ManagedObject>(entityName: "Note")) == 3)
        let request = FetchRequest<ManagedObject>(entityName: "Note")
        request.includesPendingChanges = false
        #expect(try context.fetch(request).count == 3)
        #expect(try context.fetch(request).contains(saved[0]))
        #expect(!(try context.all("Note").contains(saved[0])))
    }

    @Test func theWriterRunsTheDurabilityAskedFor() throws {
        let directory = TemporaryDirectory()
        let coordinator = PersistentStoreCoordinator(managedObjectModel: TestModels.notes())
        let full = try coordinator.addPersistentStore(type: .sqlite, at: directory.file("full.sqlite"))
        #expect(try (full.backend as! SQLiteStore).synchronousLevel() == 2, "FULL by default")
        let normal = try coordinator.addPersistentStore(
            type: .sqlite, at: directory.file("normal.sqlite"), options: [PersistentStoreOption.durability: StoreDurability.normal])
        #expect(try (normal.backend as! SQLiteStore).synchronousLevel() == 1)
        #expect(normal.durability == .normal)
    }

    @Test func declaredIndexesAreCreatedAndAddedToExistingStores() throws {
        let directory = TemporaryDirectory()
        let url = directory.file("indexed.sqlite")
        func model(indexed: Bool) -> ManagedObjectModel {
            ManagedObjectModel(entities: [
                EntityDescription(
                    name: "Item", properties: [.attribute("name", .string, isIndexed: indexed), .attribute("score", .integer64)],
                    indexes: indexed ? [["score", "name"]] : []),
            ])
        }
        do {
            let coordinator = PersistentStoreCoordinator(managedObjectModel: model(indexed: false))
            let store = try coordinator.addPersistentStore(type: .sqlite, at: url)
            #expect(try (store.backend as! SQLiteStore).indexNames().filter { $0.hasPrefix("Z_Item_") }.isEmpty)
            try coordinator.removePersistentStore(store)
        }
        #expect(model(indexed: false).versionHash == model(indexed: true).versionHash, "indexes do not change how objects are stored")
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model(indexed: true))
        let store = try coordinator.addPersistentStore(type: .sqlite, at: url)
        #expect(try (store.backend as! SQLiteStore).indexNames() == ["Z_Item_name", "Z_Item_score_name"])
    }

    @Test func theCoordinatorLockIsRecursiveAndExclusive() throws {
        let stack = try TestStack(.inMemory)
        stack.coordinator.lock()
        stack.coordinator.lock()
        #expect(stack.coordinator.tryLock())
        stack.coordinator.unlock()
        stack.coordinator.unlock()
        func tryFromAnotherThread() -> Bool {
            let result = LockedFlag()
            ThreadOfItsOwn.run {
                if stack.coordinator.tryLock() { result.set(); stack.coordinator.unlock() }
            }
            return result.value
        }
        #expect(!tryFromAnotherThread())
        stack.coordinator.unlock()
        #expect(tryFromAnotherThread())
    }
}

final class LockedFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var flag = false
    func set() { lock.lock(); flag = true; lock.unlock() }
    var value: Bool { lock.lock(); defer { lock.unlock() }; return flag }
}
