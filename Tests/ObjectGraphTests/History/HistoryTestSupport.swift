import Foundation
import GRDB
import Testing
import ObjectGraph
@testable import ObjectGraphCore

/// An SQLite store (or a PostgreSQL one) with persistent history (and, when asked, remote-change
/// notifications), and ways to read its history.
final class HistoryStack: @unchecked Sendable {
    let model: ManagedObjectModel
    let directory: TemporaryDirectory
    let coordinator: PersistentStoreCoordinator
    let store: PersistentStore
    let kind: StoreKind
    let url: URL

    /// The stores that keep persistent history: SQLite, and PostgreSQL when a server is available.
    static let kinds: [StoreKind] = StoreKind.everyStore.filter { $0 == .sqlite || $0 == .postgres }

    init(_ kind: StoreKind = .sqlite, model: ManagedObjectModel = HistoryModels.notes(), remoteChanges: Bool = false, merging: Bool = false,
         directory: TemporaryDirectory = TemporaryDirectory()) throws {
        self.model = model
        self.directory = directory
        self.kind = kind
        url = kind == .sqlite ? directory.file("history.sqlite") : try #require(try kind.newStoreURL(in: directory))
        coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        store = try coordinator.addPersistentStore(
            type: kind.type, at: url, options: HistoryStack.options(remoteChanges: remoteChanges, merging: merging))
    }

    static func options(remoteChanges: Bool, merging: Bool = false) -> [String: any Sendable] {
        var options: [String: any Sendable] = [PersistentStoreOption.persistentHistoryTracking: true]
        if remoteChanges { options[PersistentStoreOption.remoteChangeNotificationPost] = true }
        if merging { options[PersistentStoreOption.mergesRemoteChangesAutomatically] = true }
        return options
    }

    /// Another coordinator on the same file, with the same options.
    func secondCoordinator(remoteChanges: Bool = false, merging: Bool = false) throws -> PersistentStoreCoordinator {
        let other = PersistentStoreCoordinator(managedObjectModel: model)
        try other.addPersistentStore(
            type: kind.type, at: url, options: HistoryStack.options(remoteChanges: remoteChanges, merging: merging))
        return other
    }

    func context(_ name: String = "test", author: String? = nil) -> ManagedObjectContext {
        let context = ManagedObjectContext(concurrencyType: .confinement)
        context.name = name
        context.persistentStoreCoordinator = coordinator
        context.transactionAuthor = author
        return context
    }

    /// The transactions after a token, with their changes, read by a context of their own.
    func history(after token: PersistentHistoryToken? = nil, type: PersistentHistoryResultType = .transactionsAndChanges) throws -> Any? {
        try context("history reader").execute(PersistentHistoryChangeRequest.fetchHistory(after: token)).history(type)
    }

    /// How many change rows the store's history holds.
    func changeRowCount() throws -> Int {
        if let sqlite = store.backend as? SQLiteStore {
            return try sqlite.read("test") { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM ACHANGE") ?? -1 }
        }
        let postgres = try #require(store.backend as? PostgresStore)
        return try postgres.read("test") { session in
            Int(try session.query("SELECT COUNT(*) FROM \(postgres.table(PostgresStore.historyChangeTable))", []).first?.first?.integer ?? -1)
        }
    }

    func transactions(after token: PersistentHistoryToken? = nil) throws -> [PersistentHistoryTransaction] {
        try #require(try history(after: token) as? [PersistentHistoryTransaction])
    }
}

extension PersistentStoreResult {
    func history(_ type: PersistentHistoryResultType) throws -> Any? {
        let result = try #require(self as? PersistentHistoryResult)
        #expect(result.resultType == type)
        return result.result
    }
}

enum HistoryModels {
    /// Folders and notes (a note's title and rank are kept when it is deleted), and tags (many-to-many).
    static func notes() -> ManagedObjectModel {
        let model = ManagedObjectModel(entities: [
            EntityDescription(name: "Folder", properties: [
                .attribute("name", .string, isOptional: false, defaultValue: ""),
                .relationship("notes", destination: "Note", toMany: true, inverse: "folder", deleteRule: .cascade),
            ]),
            EntityDescription(name: "Note", properties: [
                .attribute("title", .string, isOptional: false, defaultValue: ""),
                .attribute("rank", .integer64, defaultValue: Int64(0)),
                .relationship("folder", destination: "Folder", toMany: false, inverse: "notes", deleteRule: .nullify),
                .relationship("tags", destination: "Tag", toMany: true, inverse: "notes"),
            ]),
            EntityDescription(name: "Tag", properties: [
                .attribute("name", .string, isOptional: false, defaultValue: ""),
                .relationship("notes", destination: "Note", toMany: true, inverse: "tags"),
            ]),
        ])
        // Xcode's "Preserve After Deletion" (models in code have no argument for it; the version hash
        // was made before, which the tests do not look at).
        for name in ["title", "rank"] {
            model.entitiesByName["Note"]!.attributesByName[name]!.preservesValueInHistoryOnDeletion = true
        }
        return model
    }
}

extension PersistentHistoryTransaction {
    /// The changes as (type, entity name) pairs, in order.
    var summary: [String] {
        (changes ?? []).map { "\($0.changeType) \($0.changedObjectID.entityName)" }
    }
}
