import Foundation
import Testing
import ObjectGraph
@testable import ObjectGraphCore

/// The kinds of store every behaviour is tested on: every store type. `allCases` are the local
/// ones; ``everyStore`` adds PostgreSQL (a database of the tests' throwaway server, see
/// ``PostgresTestServer``), for the suites that run on it too.
///
/// Under ThreadSanitizer (`OBJECTGRAPH_TSAN=1`, `.ci/run`'s second pass) the binary store is left
/// out: it is the XML store's type (`AtomicStore`, with the same queue, locks and state) but for
/// the encoder that writes its file, which runs on the saving thread and which the plain run
/// checks. That pass has no race to find in it that the XML case would not find, and it was one
/// in four or five of the pass's store-parameterized cases.
enum StoreKind: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case sqlite, inMemory, binary, xml, postgres

    static var allCases: [StoreKind] {
        TestRequirements.isThreadSanitizing ? [.sqlite, .inMemory, .xml] : [.sqlite, .inMemory, .binary, .xml]
    }
    /// The local stores and PostgreSQL.
    static let everyStore: [StoreKind] = allCases + postgresWhenAvailable
    /// SQLite, in memory and PostgreSQL.
    static let sqliteInMemoryAndPostgres: [StoreKind] = [.sqlite, .inMemory] + postgresWhenAvailable

    /// PostgreSQL, when this run has it or requires it (``TestRequirements``). Without it the tests
    /// parameterized over stores have no PostgreSQL case, and ``PostgreSQLCaseTests`` is skipped
    /// with the reason.
    private static var postgresWhenAvailable: [StoreKind] { TestRequirements.runsPostgresTests ? [.postgres] : [] }

    var testDescription: String { rawValue }
    var type: StoreType {
        switch self {
        case .sqlite: .sqlite
        case .inMemory: .inMemory
        case .binary: .binary
        case .xml: .xml
        case .postgres: .postgres
        }
    }

    /// Where a new store of this kind goes: a file in `directory`, nil in memory, a new database
    /// on the PostgreSQL test server.
    func newStoreURL(in directory: TemporaryDirectory) throws -> URL? {
        switch self {
        case .inMemory: nil
        case .postgres: try PostgresTestServer.shared.get().makeDatabase()
        default: directory.file("store.\(rawValue)")
        }
    }
}

/// A temporary folder, removed when the value goes away.
final class TemporaryDirectory: @unchecked Sendable {
    let url: URL
    init() {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("objectgraph-tests-\(UUID().uuidString)")
        try! FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }
    deinit { try? FileManager.default.removeItem(at: url) }
    func file(_ name: String) -> URL { url.appendingPathComponent(name) }
}

/// A coordinator with one store of the given kind, and a way to open more contexts on it.
final class TestStack: @unchecked Sendable {
    let kind: StoreKind
    let model: ManagedObjectModel
    let directory = TemporaryDirectory()
    let coordinator: PersistentStoreCoordinator
    let store: PersistentStore
    /// The store's file (or database): nil in memory.
    let storeURL: URL!

    init(_ kind: StoreKind, model: ManagedObjectModel = TestModels.notes()) throws {
        self.kind = kind
        self.model = model
        coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        storeURL = try kind.newStoreURL(in: directory)
        store = try coordinator.addPersistentStore(type: kind.type, at: storeURL)
    }

    /// A new confinement context on the coordinator, for tests that run on one thread.
    func context(_ name: String = "test") -> ManagedObjectContext {
        let context = ManagedObjectContext(concurrencyType: .confinement)
        context.name = name
        context.persistentStoreCoordinator = coordinator
        return context
    }

    /// A new private-queue context on the coordinator.
    func privateContext(_ name: String = "worker") -> ManagedObjectContext {
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.name = name
        context.persistentStoreCoordinator = coordinator
        return context
    }
}

enum TestModels {
    /// The public API contract's model, with a tag entity for many-to-many and a few validation rules; with
    /// `uniqueTagNames`, no two tags share a name (a uniqueness constraint).
    static func notes(uniqueTagNames: Bool = false) -> ManagedObjectModel {
        ManagedObjectModel(entities: [
            EntityDescription(name: "Folder", properties: [
                .attribute("name", .string, isOptional: false),
                .relationship("notes", destination: "Note", toMany: true, inverse: "folder", deleteRule: .cascade),
            ]),
            EntityDescription(name: "Note", properties: [
                .attribute("title", .string, isOptional: false, defaultValue: ""),
                .attribute("rank", .integer64, defaultValue: Int64(0)),
                .attribute("created", .date),
                .relationship("folder", destination: "Folder", toMany: false, inverse: "notes", deleteRule: .nullify),
                .relationship("tags", destination: "Tag", toMany: true, inverse: "notes"),
            ]),
            EntityDescription(name: "Tag", properties: [
                .attribute("name", .string, isOptional: false),
                .relationship("notes", destination: "Note", toMany: true, inverse: "tags"),
            ], uniquenessConstraints: uniqueTagNames ? [["name"]] : []),
        ])
    }
}

extension ManagedObjectContext {
    @discardableResult
    func insert(_ entity: String, _ values: [String: Any]) -> ManagedObject {
        let object = insertNewObject(forEntityName: entity)
        for (key, value) in values { object.setValue(value, forKey: key) }
        return object
    }

    func all(_ entity: String, sortedBy key: String? = nil) throws -> [ManagedObject] {
        let request = FetchRequest<ManagedObject>(entityName: entity)
        if let key { request.sortDescriptors = [FetchSortDescriptor(key: key)] }
        return try fetch(request)
    }
}
