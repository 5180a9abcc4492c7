import Foundation
import Testing
import ObjectGraph
@testable import ObjectGraphCore

/// The kinds of store every behaviour is tested on: every store type.
enum StoreKind: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case sqlite, inMemory, binary, xml

    var testDescription: String { rawValue }
    var type: StoreType {
        switch self {
        case .sqlite: .sqlite
        case .inMemory: .inMemory
        case .binary: .binary
        case .xml: .xml
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
    var storeURL: URL { directory.file("store.\(kind.rawValue)") }

    init(_ kind: StoreKind, model: ManagedObjectModel = TestModels.notes()) throws {
        self.kind = kind
        self.model = model
        coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        store = try coordinator.addPersistentStore(
            type: kind.type, at: kind == .inMemory ? nil : directory.file("store.\(kind.rawValue)"))
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
    /// DESIGN.md's model, with a tag entity for many-to-many and a few validation rules.
    static func notes() -> ManagedObjectModel {
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
            ]),
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
