import Foundation
import GRDB
import Testing
import ObjectGraph
@testable import ObjectGraphCore

@Suite("Persistent history")
struct PersistentHistoryTests {
    @Test(arguments: HistoryStack.kinds)
    func aSaveRecordsOneTransactionWithWhoWhenAndEachChange(_ kind: StoreKind) throws {
        let stack = try HistoryStack(kind)
        let context = stack.context("editor", author: "importer")
        let before = Date()
        let folder = context.insert("Folder", ["name": "Inbox"])
        let note = context.insert("Note", ["title": "Hello", "folder": folder])
        try context.save()

        let transactions = try stack.transactions()
        #expect(transactions.count == 1)
        let transaction = try #require(transactions.first)
        #expect(transaction.author == "importer")
        #expect(transaction.contextName == "editor")
        #expect(transaction.storeID == stack.store.identifier)
        #expect(transaction.processID == String(ProcessInfo.processInfo.processIdentifier))
        #expect(transaction.bundleID == ProcessInfo.processInfo.processName)
        #expect(transaction.timestamp >= before.addingTimeInterval(-1) && transaction.timestamp <= Date().addingTimeInterval(1))
        #expect(transaction.transactionNumber == 1)
        #expect(transaction.token == stack.coordinator.currentPersistentHistoryToken(fromStores: nil))
        let changes = try #require(transaction.changes)
        #expect(Set(changes.map(\.changedObjectID)) == [folder.objectID, note.objectID])
        #expect(changes.allSatisfy { $0.changeType == .insert && $0.updatedProperties == nil && $0.tombstone == nil })
        #expect(changes.allSatisfy { $0.transaction === transaction })
        #expect(Set(changes.map(\.changeID)).count == 2)
    }

    @Test(arguments: HistoryStack.kinds)
    func anUpdateRecordsTheChangedPropertiesAndADeleteItsTombstone(_ kind: StoreKind) throws {
        let stack = try HistoryStack(kind)
        let context = stack.context()
        let folder = context.insert("Folder", ["name": "Inbox"])
        let note = context.insert("Note", ["title": "Hello", "rank": Int64(3), "folder": folder])
        let tag = context.insert("Tag", ["name": "red"])
        try context.save()
        let token = try #require(stack.coordinator.currentPersistentHistoryToken(fromStores: nil))

        note.setValue(Int64(4), forKey: "rank")
        tag.setValue(Set([note]), forKey: "notes")
        try context.save()
        let noteID = note.objectID
        context.delete(note)
        try context.save()

        let transactions = try stack.transactions(after: token)
        #expect(transactions.count == 2)
        let update = try #require(transactions.first?.changes)
        let noteUpdate = try #require(update.first { $0.changedObjectID == noteID })
        #expect(noteUpdate.changeType == .update)
        #expect(Set((noteUpdate.updatedProperties ?? []).map(\.name)) == ["rank", "tags"])
        let tagUpdate = try #require(update.first { $0.changedObjectID == tag.objectID })
        #expect(Set((tagUpdate.updatedProperties ?? []).map(\.name)) == ["notes"])
        // The updated properties are the model's own descriptions.
        #expect(noteUpdate.updatedProperties?.contains { $0 === stack.model.entitiesByName["Note"]!.propertiesByName["rank"]! } == true)

        let delete = try #require(transactions.last?.changes?.first { $0.changedObjectID == noteID })
        #expect(delete.changeType == .delete)
        #expect(delete.tombstone?["title"] as? String == "Hello")
        #expect(delete.tombstone?["rank"] as? Int64 == 4)
        #expect(delete.tombstone?.count == 2)
    }

    @Test(arguments: HistoryStack.kinds)
    func aCascadeIsRecordedWithEveryDeletedObjectAndItsTombstone(_ kind: StoreKind) throws {
        let stack = try HistoryStack(kind)
        let context = stack.context()
        let folder = context.insert("Folder", ["name": "Old"])
        let notes = (0..<3).map { context.insert("Note", ["title": "n\($0)", "folder": folder]) }
        try context.save()
        let token = stack.coordinator.currentPersistentHistoryToken(fromStores: nil)
        let ids = Set(notes.map(\.objectID) + [folder.objectID])
        context.delete(folder)
        try context.save()

        let changes = try #require(try stack.transactions(after: token).first?.changes)
        #expect(Set(changes.map(\.changedObjectID)) == ids)
        #expect(changes.allSatisfy { $0.changeType == .delete })
        let titles = Set(changes.compactMap { $0.tombstone?["title"] as? String })
        #expect(titles == ["n0", "n1", "n2"])
    }

    @Test(arguments: HistoryStack.kinds)
    func fetchingAfterATokenOrADateReturnsOnlyLaterTransactionsOldestFirst(_ kind: StoreKind) throws {
        let stack = try HistoryStack(kind)
        let context = stack.context()
        var tokens: [PersistentHistoryToken] = []
        var dates: [Date] = []
        for i in 0..<4 {
            dates.append(Date())
            usleep(20_000)
            context.insert("Tag", ["name": "t\(i)"])
            try context.save()
            tokens.append(try #require(stack.coordinator.currentPersistentHistoryToken(fromStores: nil)))
            usleep(20_000)
        }
        #expect(try stack.transactions().map(\.transactionNumber) == [1, 2, 3, 4])
        #expect(try stack.transactions(after: tokens[1]).map(\.transactionNumber) == [3, 4])
        #expect(try stack.transactions(after: tokens[3]).isEmpty)
        let afterDate = try #require(
            try stack.context().execute(PersistentHistoryChangeRequest.fetchHistory(after: dates[2])).history(.transactionsAndChanges)
                as? [PersistentHistoryTransaction])
        #expect(afterDate.map(\.transactionNumber) == [3, 4])
        // Each transaction's token is the position after it.
        #expect(try stack.transactions().map(\.token) == tokens)
    }

    @Test(arguments: HistoryStack.kinds)
    func eachResultTypeGivesItsOwnForm(_ kind: StoreKind) throws {
        let stack = try HistoryStack(kind)
        let context = stack.context()
        let a = context.insert("Tag", ["name": "a"])
        try context.save()
        let b = context.insert("Tag", ["name": "b"])
        try context.save()
        func run(_ type: PersistentHistoryResultType) throws -> Any? {
            let request = PersistentHistoryChangeRequest.fetchHistory(after: nil)
            request.resultType = type
            return try stack.context().execute(request).history(type)
        }
        #expect(try run(.statusOnly) as? Bool == true)
        #expect(try run(.count) as? Int == 2)
        #expect(try run(.objectIDs) as? [ManagedObjectID] == [a.objectID, b.objectID])
        let bare = try #require(try run(.transactionsOnly) as? [PersistentHistoryTransaction])
        #expect(bare.count == 2 && bare.allSatisfy { $0.changes == nil })
        let changes = try #require(try run(.changesOnly) as? [PersistentHistoryChange])
        #expect(changes.map(\.changedObjectID) == [a.objectID, b.objectID])
        #expect(changes.allSatisfy { $0.transaction != nil })
        let full = try #require(try run(.transactionsAndChanges) as? [PersistentHistoryTransaction])
        #expect(full.map { $0.changes?.count } == [1, 1])
    }

    @Test(arguments: HistoryStack.kinds)
    func aFetchRequestFiltersTransactionsAndChanges(_ kind: StoreKind) throws {
        let stack = try HistoryStack(kind)
        try {
            let importer = stack.context("import", author: "importer")
            importer.insert("Tag", ["name": "a"])
            importer.insert("Folder", ["name": "f"])
            try importer.save()
        }()
        try {
            let app = stack.context("app", author: "app")
            app.insert("Tag", ["name": "b"])
            try app.save()
        }()
        let byAuthor = PersistentHistoryChangeRequest.fetchHistory(after: nil)
        let filter = PersistentHistoryTransaction.fetchRequest
        filter.predicate = FetchPredicate(format: "author != %@", "importer")
        byAuthor.fetchRequest = filter
        let others = try #require(try stack.context().execute(byAuthor).history(.transactionsAndChanges) as? [PersistentHistoryTransaction])
        #expect(others.map(\.author) == ["app"])

        let byEntity = PersistentHistoryChangeRequest.fetchHistory(after: nil)
        let changeFilter = PersistentHistoryChange.fetchRequest
        changeFilter.predicate = FetchPredicate(format: "entityName == %@", "Folder")
        byEntity.fetchRequest = changeFilter
        let folders = try #require(try stack.context().execute(byEntity).history(.transactionsAndChanges) as? [PersistentHistoryTransaction])
        #expect(folders.map(\.summary) == [["insert Folder"]])

        let wrong = PersistentHistoryChangeRequest.fetchHistory(after: nil)
        let bad = PersistentHistoryTransaction.fetchRequest
        bad.predicate = FetchPredicate(format: "colour == %@", "red")
        wrong.fetchRequest = bad
        #expect(throws: ObjectGraphError.invalidFetchRequest) { try stack.context().execute(wrong) }
    }

    @Test(arguments: HistoryStack.kinds)
    func batchRequestsAreRecordedAsTransactionsOfTheirOwn(_ kind: StoreKind) throws {
        let stack = try HistoryStack(kind)
        let context = stack.context("batch", author: "purger")
        let insert = BatchInsertRequest(entityName: "Note", objects: (0..<5).map { ["title": "n\($0)", "rank": Int64($0)] })
        insert.resultType = .objectIDs
        let inserted = try #require((try context.execute(insert) as? BatchInsertResult)?.result as? [ManagedObjectID])
        let update = BatchUpdateRequest(entityName: "Note")
        update.predicate = FetchPredicate(format: "rank < 2")
        update.propertiesToUpdate = ["rank": Int64(10)]
        try context.execute(update)
        let delete = BatchDeleteRequest(fetchRequest: FetchRequest<ManagedObject>(entityName: "Note"))
        delete.fetchRequest.predicate = FetchPredicate(format: "rank == 4")
        try context.execute(delete)

        let transactions = try stack.transactions()
        #expect(transactions.count == 3)
        #expect(transactions.allSatisfy { $0.author == "purger" && $0.contextName == "batch" })
        #expect(Set(transactions[0].changes!.map(\.changedObjectID)) == Set(inserted))
        #expect(transactions[0].changes!.allSatisfy { $0.changeType == .insert })
        #expect(transactions[1].changes!.map(\.changeType) == [.update, .update])
        #expect(transactions[1].changes!.allSatisfy { Set(($0.updatedProperties ?? []).map(\.name)) == ["rank"] })
        let deleted = try #require(transactions[2].changes?.first)
        #expect(deleted.changeType == .delete && deleted.changedObjectID == inserted[4])
        #expect(deleted.tombstone?["title"] as? String == "n4")
    }

    @Test(arguments: HistoryStack.kinds)
    func aFailedSaveRecordsNothing(_ kind: StoreKind) throws {
        let stack = try HistoryStack(kind)
        let first = stack.context("first")
        let note = first.insert("Note", ["title": "x"])
        try first.save()
        let second = stack.context("second")
        let other = try second.existingObject(with: note.objectID)
        other.setValue("from second", forKey: "title")
        try second.save()
        note.setValue("stale", forKey: "title")
        #expect(throws: ObjectGraphError.mergeConflict) { try first.save() }
        #expect(try stack.transactions().count == 2)
    }

    @Test(arguments: HistoryStack.kinds)
    func deletingBeforeATokenKeepsTheTokensOwnTransaction(_ kind: StoreKind) throws {
        let stack = try HistoryStack(kind)
        let context = stack.context()
        var tokens: [PersistentHistoryToken] = []
        for i in 0..<5 {
            context.insert("Tag", ["name": "t\(i)"])
            try context.save()
            tokens.append(try #require(stack.coordinator.currentPersistentHistoryToken(fromStores: nil)))
        }
        let purge = PersistentHistoryChangeRequest.deleteHistory(before: tokens[2])
        purge.resultType = .count
        #expect(try context.execute(purge).history(.count) as? Int == 2)
        #expect(try stack.transactions().map(\.transactionNumber) == [3, 4, 5])
        // The token of the boundary still reads what follows it.
        #expect(try stack.transactions(after: tokens[2]).map(\.transactionNumber) == [4, 5])
        // The changes of the deleted transactions went with them.
        #expect(try stack.changeRowCount() == 3)
    }

    @Test(arguments: HistoryStack.kinds)
    func aTokenOlderThanTheHistoryKeptIsAnError(_ kind: StoreKind) throws {
        let stack = try HistoryStack(kind)
        let context = stack.context()
        var tokens: [PersistentHistoryToken] = []
        for i in 0..<4 {
            context.insert("Tag", ["name": "t\(i)"])
            try context.save()
            tokens.append(try #require(stack.coordinator.currentPersistentHistoryToken(fromStores: nil)))
        }
        try context.execute(PersistentHistoryChangeRequest.deleteHistory(before: tokens[2]))
        // After token 2 (kept) and token 1 (transaction 2 gone, but it is the boundary's predecessor): transaction 3 onwards.
        #expect(try stack.transactions(after: tokens[1]).map(\.transactionNumber) == [3, 4])
        #expect(throws: ObjectGraphError.historyTokenExpired) { try stack.transactions(after: tokens[0]) }
        do {
            _ = try stack.transactions(after: tokens[0])
        } catch let error as ObjectGraphError {
            #expect(error.message.contains("after transaction 1"))
            #expect(error.url == stack.url)
        }
        // Deleting everything: any old token has expired, the current one has not.
        try context.execute(PersistentHistoryChangeRequest.deleteHistory(before: nil as PersistentHistoryToken?))
        #expect(throws: ObjectGraphError.historyTokenExpired) { try stack.transactions(after: tokens[1]) }
        #expect(try stack.transactions(after: tokens[3]).isEmpty)
    }

    @Test(arguments: HistoryStack.kinds)
    func aRegisteredConsumersUnreadHistoryIsNeverDeleted(_ kind: StoreKind) throws {
        let stack = try HistoryStack(kind)
        let context = stack.context()
        var tokens: [PersistentHistoryToken] = []
        for i in 0..<6 {
            context.insert("Tag", ["name": "t\(i)"])
            try context.save()
            tokens.append(try #require(stack.coordinator.currentPersistentHistoryToken(fromStores: nil)))
        }
        try stack.coordinator.setHistoryToken(tokens[1], forConsumer: "indexer")
        try stack.coordinator.setHistoryToken(tokens[4], forConsumer: "sync")
        #expect(try stack.coordinator.historyToken(forConsumer: "indexer") == tokens[1])

        // The sync consumer purges up to what it read: the indexer's unread history stays.
        try context.execute(PersistentHistoryChangeRequest.deleteHistory(before: tokens[4]))
        #expect(try stack.transactions(after: tokens[1]).map(\.transactionNumber) == [3, 4, 5, 6])
        #expect(try stack.transactions().map(\.transactionNumber) == [2, 3, 4, 5, 6])

        // Once the indexer moves on, the purge goes further; a removed consumer holds nothing back.
        try stack.coordinator.setHistoryToken(tokens[3], forConsumer: "indexer")
        try context.execute(PersistentHistoryChangeRequest.deleteHistory(before: tokens[4]))
        #expect(try stack.transactions().map(\.transactionNumber) == [4, 5, 6])
        try stack.coordinator.removeHistoryConsumer(named: "indexer")
        #expect(try stack.coordinator.historyToken(forConsumer: "indexer") == nil)
        try context.execute(PersistentHistoryChangeRequest.deleteHistory(before: tokens[4]))
        #expect(try stack.transactions().map(\.transactionNumber) == [5, 6])
    }

    @Test(arguments: HistoryStack.kinds)
    func aTransactionMergesIntoAnotherContextThroughItsNotification(_ kind: StoreKind) throws {
        let stack = try HistoryStack(kind)
        let reader = stack.context("reader")
        let writer = stack.context("writer")
        let note = writer.insert("Note", ["title": "one"])
        try writer.save()
        let token = stack.coordinator.currentPersistentHistoryToken(fromStores: nil)
        let seen = try reader.existingObject(with: note.objectID)
        #expect(seen.value(forKey: "title") as? String == "one")

        note.setValue("two", forKey: "title")
        let added = writer.insert("Note", ["title": "new"])
        try writer.save()
        for transaction in try stack.transactions(after: token) {
            let notification = transaction.objectIDNotification()
            #expect(notification.userInfo?[ManagedObjectContext.NotificationKey.insertedObjectIDs.rawValue] as? Set<ManagedObjectID> == [added.objectID])
            reader.mergeChanges(fromContextDidSave: notification)
        }
        #expect(seen.value(forKey: "title") as? String == "two")
        #expect(try reader.all("Note").count == 2)
    }

    @Test func tokensAreCodableValuesThatSurviveARestart() throws {
        let directory = TemporaryDirectory()
        var saved: Data
        do {
            let stack = try HistoryStack(directory: directory)
            let context = stack.context()
            context.insert("Tag", ["name": "a"])
            try context.save()
            saved = try JSONEncoder().encode(try #require(stack.coordinator.currentPersistentHistoryToken(fromStores: nil)))
            context.insert("Tag", ["name": "b"])
            try context.save()
            try stack.coordinator.removePersistentStore(stack.store)
        }
        let reopened = try HistoryStack(directory: directory)
        let token = try JSONDecoder().decode(PersistentHistoryToken.self, from: saved)
        let after = try reopened.transactions(after: token)
        #expect(after.map(\.transactionNumber) == [2])
        #expect(after.first?.changes?.first?.changedObjectID.entityName == "Tag")
    }

    @Test(arguments: [StoreKind.inMemory, .binary])
    func onlyAnSQLiteStoreKeepsHistory(_ kind: StoreKind) throws {
        let directory = TemporaryDirectory()
        let coordinator = PersistentStoreCoordinator(managedObjectModel: HistoryModels.notes())
        #expect(throws: ObjectGraphError.unsupported) {
            try coordinator.addPersistentStore(
                type: kind.type, at: kind == .inMemory ? nil : directory.file("store"),
                options: [PersistentStoreOption.persistentHistoryTracking: true])
        }
        #expect(coordinator.persistentStores.isEmpty)
        #expect(coordinator.currentPersistentHistoryToken(fromStores: nil) == nil)
    }

    @Test func anSQLiteStoreWithHistoryIsRefusedForWritingWithoutTheOption() throws {
        let stack = try HistoryStack()
        let context = stack.context()
        context.insert("Tag", ["name": "a"])
        try context.save()
        try stack.coordinator.removePersistentStore(stack.store)
        let plain = PersistentStoreCoordinator(managedObjectModel: stack.model)
        #expect(throws: ObjectGraphError.readOnly) { try plain.addPersistentStore(type: .sqlite, at: stack.url) }
        let reader = try plain.addPersistentStore(type: .sqlite, at: stack.url, options: [PersistentStoreOption.readOnly: true])
        #expect(reader.isReadOnly)
    }

    @Test(.needsCoreDataFixtures) func historyOfAppleCoreDataIsReadAndContinued() throws {
        let url = try CoreDataFixtures.copyOfStore(try CoreDataFixtures.url("coredataplus-samplemodel2-storeonly/stores/SampleModel2_V2.sqlite"))
        defer { try? FileManager.default.removeItem(at: url.deletingLastPathComponent()) }
        let model = try ManagedObjectModel(contentsOfStoreAt: url)
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        try coordinator.addPersistentStore(type: .sqlite, at: url, options: [PersistentStoreOption.persistentHistoryTracking: true])
        let context = ManagedObjectContext(concurrencyType: .confinement)
        context.persistentStoreCoordinator = coordinator
        context.transactionAuthor = "objectgraph"

        let apple = try #require(try context.execute(PersistentHistoryChangeRequest.fetchHistory(after: nil)).history(.transactionsAndChanges)
            as? [PersistentHistoryTransaction])
        #expect(apple.count == 1)
        let first = try #require(apple.first)
        #expect(first.processID == "xctest")
        #expect(first.bundleID == "com.apple.dt.xctest.tool")
        #expect(first.author == nil)
        #expect(first.changes?.count == 126)
        #expect(first.changes?.allSatisfy { $0.changeType == .insert } == true)
        // Every change names an object that exists.
        let pages = try #require(first.changes?.filter { $0.changedObjectID.entityName == "Page" })
        #expect(!pages.isEmpty)
        #expect(try context.existingObject(with: pages[0].changedObjectID).entity.name == "Page")

        let token = coordinator.currentPersistentHistoryToken(fromStores: nil)
        let book = try #require(try context.all("Book").first { $0.entity.name == "Book" })
        book.setValue("retitled", forKey: "title")
        try context.save()
        let ours = try #require(try context.execute(PersistentHistoryChangeRequest.fetchHistory(after: token)).history(.transactionsAndChanges)
            as? [PersistentHistoryTransaction])
        #expect(ours.map(\.transactionNumber) == [2])
        #expect(ours.first?.author == "objectgraph")
        #expect(ours.first?.changes?.map(\.changedObjectID) == [book.objectID])
        #expect(ours.first?.changes?.first?.updatedProperties.map { Set($0.map(\.name)) } == ["title"])
        // Apple's columns: the transaction's strings interned, the change's entity number Core Data's.
        let raw = try (coordinator.persistentStores[0].backend as! SQLiteStore).read("test") { db in
            try Row.fetchOne(db, sql: "SELECT t.ZAUTHORTS, s.ZNAME, c.ZENTITY, c.ZENTITYPK FROM ATRANSACTION t JOIN ATRANSACTIONSTRING s ON s.Z_PK = t.ZAUTHORTS JOIN ACHANGE c ON c.ZTRANSACTIONID = t.Z_PK WHERE t.Z_PK = 2")
        }
        #expect(raw?["ZNAME"] as String? == "objectgraph")
        #expect(raw?["ZENTITY"] as Int? == 1)
        #expect(raw?["ZENTITYPK"] as Int64? == book.objectID.primaryKey)
    }
}
