import Foundation
import Testing
@testable import ObjectGraphCore

/// Memory that must not grow with a program's running time: a context that lives for a million
/// inserts, and coordinators and models made and dropped. The resident-memory tests run
/// `objectgraph _memory` in a process of their own, which reads its resident size after returning
/// freed heap to the system.
@Suite struct LongRunMemoryTests {
    /// The model the tests drop: inheritance (an abstract entity with two below it), and
    /// relationships with inverses both ways.
    private static func model() -> ManagedObjectModel {
        ManagedObjectModel(entities: [
            EntityDescription(name: "Folder", properties: [
                .attribute("name", .string),
                .relationship("items", destination: "Item", toMany: true, inverse: "folder", deleteRule: .cascade),
            ]),
            EntityDescription(name: "Item", isAbstract: true, properties: [
                .attribute("title", .string),
                .relationship("folder", destination: "Folder", toMany: false, inverse: "items"),
            ]),
            EntityDescription(name: "Note", superentity: "Item", properties: [.attribute("body", .string)]),
            EntityDescription(name: "Picture", superentity: "Item", properties: [.attribute("data", .binaryData)]),
        ])
    }

    @Test(arguments: StoreKind.everyStore)
    func aModelItsEntitiesAndItsCoordinatorAreFreedWhenDropped(_ kind: StoreKind) throws {
        weak var model: ManagedObjectModel?
        weak var coordinator: PersistentStoreCoordinator?
        var entities: [() -> EntityDescription?] = []
        var properties: [() -> PropertyDescription?] = []
        do {
            let stack = try TestStack(kind, model: Self.model())
            let context = stack.context()
            let folder = context.insert("Folder", ["name": "inbox"])
            context.insert("Note", ["title": "a", "body": "b", "folder": folder])
            try context.save()
            context.reset()
            let request = FetchRequest<ManagedObject>(entityName: "Item")
            request.predicate = FetchPredicate(format: "folder.name == %@", "inbox")
            #expect(try context.fetch(request).count == 1)
            try stack.coordinator.removePersistentStore(stack.store)
            model = stack.model
            coordinator = stack.coordinator
            for entity in stack.model.entities {
                weak let weakEntity = entity
                entities.append { weakEntity }
                for property in entity.properties {
                    weak let weakProperty = property
                    properties.append { weakProperty }
                }
            }
        }
        #expect(model == nil, "the model outlived its coordinator and contexts")
        #expect(coordinator == nil, "the coordinator outlived its contexts")
        #expect(entities.count == 4 && entities.allSatisfy { $0() == nil }, "entities left: \(entities.compactMap { $0()?.name })")
        #expect(properties.allSatisfy { $0() == nil }, "properties left: \(properties.compactMap { $0()?.name })")
    }

    /// The resident sizes `objectgraph _memory` printed, by label.
    private static func residentSizes(_ arguments: [String]) throws -> [String: Int] {
        let result = try runTool(["_memory"] + arguments)
        try #require(result.status == 0, "objectgraph _memory \(arguments.joined(separator: " ")): \(result.output.suffix(2000))")
        var sizes: [String: Int] = [:]
        for line in result.output.split(separator: "\n") where line.hasPrefix("rss ") {
            let fields = line.split(separator: " ")
            if fields.count == 3, let bytes = Int(fields[2]) { sizes[String(fields[1])] = bytes }
        }
        return sizes
    }

    private static let mebibyte = 1 << 20

    /// Resident sizes measured under ThreadSanitizer are its shadow memory's, not ObjectGraph's.
    private static let notSanitizing = !TestRequirements.isThreadSanitizing

    @Test(.enabled(if: notSanitizing, "resident memory under ThreadSanitizer is the sanitizer's"))
    func aContextThatInsertsAMillionObjectsStaysWithin64MiBOfItsSizeAfterTheFirstChunk() throws {
        let sizes = try Self.residentSizes(["long-context", "--objects", "1000000", "--chunk", "10000"])
        let first = try #require(sizes["first"]), last = try #require(sizes["last"])
        #expect(first > 0)
        #expect(last - first <= 64 * Self.mebibyte,
                "after 1,000,000 inserts in saves of 10,000: \((last - first) / Self.mebibyte) MiB above the size after the first save")
    }

    @Test(.enabled(if: notSanitizing, "resident memory under ThreadSanitizer is the sanitizer's"))
    func aThousandCoordinatorsOnOneModelReturnTheirMemory() throws {
        let sizes = try Self.residentSizes(["coordinators", "--count", "1000"])
        let first = try #require(sizes["first"]), last = try #require(sizes["last"])
        // What stays behind each coordinator is multiplied by 990: 2 KiB kept per coordinator
        // would fail.
        #expect(last - first <= 2 * Self.mebibyte, "990 coordinators made and dropped: \((last - first) / Self.mebibyte) MiB more")
    }

    @Test(.enabled(if: notSanitizing, "resident memory under ThreadSanitizer is the sanitizer's"))
    func aThousandModelsWithTheirCoordinatorsReturnTheirMemory() throws {
        let sizes = try Self.residentSizes(["coordinators", "--count", "1000", "--model-each"])
        let first = try #require(sizes["first"]), last = try #require(sizes["last"])
        #expect(last - first <= 2 * Self.mebibyte, "990 models and coordinators made and dropped: \((last - first) / Self.mebibyte) MiB more")
    }
}
