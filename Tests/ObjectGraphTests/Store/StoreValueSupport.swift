import Foundation
import Testing
import ObjectGraph
@testable import ObjectGraphCore

/// Every kind of store, the XML store included (the shared `StoreKind` leaves it out).
enum EveryStore: String, CaseIterable, CustomTestStringConvertible, Sendable {
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
    static var files: [EveryStore] { [.sqlite, .binary, .xml] }
    static var atomic: [EveryStore] { [.binary, .xml] }
}

/// A store of one kind that can be closed and opened again, so a value is read back from the
/// file rather than from what the save kept in memory (an in-memory store is read back through a
/// second context on the same coordinator).
final class ReopenableStack: @unchecked Sendable {
    let kind: EveryStore
    let model: ManagedObjectModel
    let directory = TemporaryDirectory()
    private(set) var coordinator: PersistentStoreCoordinator
    private(set) var store: PersistentStore?
    var url: URL { directory.file("store.\(kind.rawValue)") }

    init(_ kind: EveryStore, model: ManagedObjectModel = ValueModels.samples()) throws {
        self.kind = kind
        self.model = model
        coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        store = try coordinator.addPersistentStore(type: kind.type, at: kind == .inMemory ? nil : directory.file("store.\(kind.rawValue)"))
    }

    func context() -> ManagedObjectContext {
        let context = ManagedObjectContext(concurrencyType: .confinement)
        context.persistentStoreCoordinator = coordinator
        return context
    }

    /// Closes the store and opens the file again with a new coordinator (not for in-memory).
    func reopen() throws {
        guard kind != .inMemory else { return }
        try close()
        coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        store = try coordinator.addPersistentStore(type: kind.type, at: url)
    }

    /// Closes the store, so the file can be examined or changed behind its back.
    func close() throws {
        if let store { try coordinator.removePersistentStore(store) }
        store = nil
    }

    /// Saves one object with `values`, then reads it back from the store in a new context.
    func roundTrip(_ values: [String: Any], entity: String = "Sample") throws -> ManagedObject {
        let context = context()
        _ = context.insert(entity, values)
        try context.save()
        try reopen()
        let objects = try self.context().all(entity)
        return try #require(objects.first)
    }
}

enum ValueModels {
    static func samples() -> ManagedObjectModel {
        ManagedObjectModel(entities: [
            EntityDescription(name: "Sample", properties: [
                .attribute("double", .double),
                .attribute("float", .float),
                .attribute("required", .double, isOptional: false, defaultValue: 0.0),
                .attribute("decimal", .decimal),
                .attribute("string", .string),
                .attribute("data", .binaryData),
                .attribute("date", .date),
                .attribute("count", .integer64),
                .attribute("bounded", .double, minimum: 0.0, maximum: 10.0),
                .attribute("tags", .transformable, valueType: [String].self),
            ])
        ])
    }
}

/// The bytes of a file and the names of the files beside it, to show a refused open left both alone.
struct FileFingerprint: Equatable {
    let bytes: Data
    let siblings: [String]

    init(_ url: URL) throws {
        bytes = try Data(contentsOf: url)
        siblings = try FileManager.default.contentsOfDirectory(atPath: url.deletingLastPathComponent().path).sorted()
    }
}
