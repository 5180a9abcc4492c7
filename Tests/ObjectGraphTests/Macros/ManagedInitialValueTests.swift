import Foundation
import Synchronization
import Testing
import ObjectGraph
@testable import ObjectGraphCore

// Models whose initial values are evaluated for each new object, beside literal defaults.

/// Initial values of both kinds: `id`, `created`, `touched` and `history` are evaluated for each
/// object; `title`, `priority`, `labels` and `rank` are the model's defaults.
@Managed final class Stamped: ManagedObject {
    @Attribute(.unique) var id: UUID = UUID()
    var created: Date = Date()
    var touched: Date? = .now
    var history: [String] = [String]()
    var title: String = "untitled"
    var priority: Priority = .high
    var labels: [String] = ["a", "b"]
    var rank: Int64 = -1
}

/// Counts the evaluations of ``Counted``'s initial value.
enum InitialValueCounter {
    static let count = Atomic<Int>(0)
    static func next() -> Int { count.add(1, ordering: .relaxed).newValue }
}

/// An initial value that calls a function with a side effect.
@Managed final class Counted: ManagedObject {
    var serial: Int = InitialValueCounter.next()
}

/// An `awakeFromInsert()` override that calls `super`, and reads and sets initial values.
@Managed final class AwakeCallingSuper: ManagedObject {
    var id: UUID = UUID()
    var replaced: Date = Date()
    @Transient var idSeenInAwake: UUID?

    override func awakeFromInsert() {
        super.awakeFromInsert()
        idSeenInAwake = id
        replaced = .distantPast
    }
}

/// An `awakeFromInsert()` override that does not call `super`.
@Managed final class AwakeWithoutSuper: ManagedObject {
    var id: UUID = UUID()
    @Transient var idSeenInAwake: UUID?

    override func awakeFromInsert() {
        idSeenInAwake = id
    }
}

/// A super-entity and a sub-entity that both have initial values evaluated for each object.
@Managed class StampedBase: ManagedObject {
    var baseID: UUID = UUID()
}

@Managed final class StampedLeaf: StampedBase {
    var leafID: UUID = UUID()
    var leafLabel: String = "leaf"
}

extension TestModels {
    /// The models with initial values evaluated for each object.
    static func stamped() -> ManagedObjectModel {
        ManagedObjectModel(types: [Stamped.self, Counted.self, AwakeCallingSuper.self, AwakeWithoutSuper.self, StampedLeaf.self])
    }

    /// `Stamped` as `@Managed` described it when it took every initial value as the model's default:
    /// `id` and `created` had the values of the model's build as defaults.
    static func stampedAsDefaults() -> ManagedObjectModel {
        ManagedObjectModel(entities: [
            EntityDescription(name: "Stamped", properties: [
                .attribute("id", .uuid, isOptional: false, defaultValue: UUID()),
                .attribute("created", .date, isOptional: false, defaultValue: Date()),
                .attribute("touched", .date, isOptional: true, defaultValue: Date.now),
                .attribute("history", .transformable, isOptional: false, defaultValue: [String](), valueType: [String].self),
                .attribute("title", .string, isOptional: false, defaultValue: "untitled"),
                .attribute("priority", .string, isOptional: false, defaultValue: "high"),
                .attribute("labels", .transformable, isOptional: false, defaultValue: ["a", "b"], valueType: [String].self),
                .attribute("rank", .integer64, isOptional: false, defaultValue: Int64(-1)),
            ], uniquenessConstraints: [["id"]]),
        ])
    }
}

@Suite("@Managed initial values")
struct ManagedInitialValueTests {
    @Test(arguments: StoreKind.everyStore)
    func twoInsertedObjectsGetTheirOwnIDsAndDatesAndBothSave(_ kind: StoreKind) throws {
        let stack = try TestStack(kind, model: TestModels.stamped())
        let context = stack.context()
        let before = Date()
        let first = Stamped(context: context)
        let second = Stamped(context: context)
        #expect(first.id != second.id)
        #expect(first.created >= before && first.created <= Date())
        #expect(second.created >= first.created)
        #expect(first.touched != nil)
        #expect(first.history == [])
        try context.save()

        let reader = stack.context("reader")
        let saved = try reader.fetch(FetchDescriptor<Stamped>())
        #expect(Set(saved.map(\.id)) == [first.id, second.id])
        // Dates are compared to the millisecond: some stores keep no more.
        let created = Dictionary(uniqueKeysWithValues: saved.map { ($0.id, $0.created.timeIntervalSince1970) })
        #expect(abs(created[first.id]! - first.created.timeIntervalSince1970) < 0.001)
        #expect(abs(created[second.id]! - second.created.timeIntervalSince1970) < 0.001)
    }

    @Test func literalInitialValuesStayTheModelsDefaultsAndOthersHaveNone() throws {
        let model = TestModels.stamped()
        try model.validate()
        let entity = try #require(model.entitiesByName["Stamped"])
        let attributes = entity.attributesByName
        #expect(attributes["title"]?.defaultValue as? String == "untitled")
        #expect(attributes["priority"]?.defaultValue as? String == "high")
        #expect(attributes["labels"]?.defaultValue as? [String] == ["a", "b"])
        #expect(attributes["rank"]?.defaultValue as? Int64 == -1)
        for name in ["id", "created", "touched", "history"] {
            #expect(attributes[name]?.defaultValue == nil, "\(name)")
        }
        // Optionality follows the type, whatever the initial value.
        #expect(attributes["id"]?.isOptional == false)
        #expect(attributes["created"]?.isOptional == false)
        #expect(attributes["touched"]?.isOptional == true)
        #expect(entity.uniquenessConstraints == [["id"]])
    }

    @Test(arguments: StoreKind.everyStore.filter { $0 != .inMemory })
    func aStoreWrittenWithInitialValuesAsDefaultsOpensWithoutMigration(_ kind: StoreKind) throws {
        let old = TestModels.stampedAsDefaults()
        let new = ManagedObjectModel(types: [Stamped.self])
        // Defaults are not part of version hashes (as in Core Data).
        #expect(old.versionHash == new.versionHash)
        #expect(old.entityVersionHashesByName == new.entityVersionHashesByName)

        let directory = TemporaryDirectory()
        let url = try #require(try kind.newStoreURL(in: directory))
        let id = UUID()
        do {
            let coordinator = PersistentStoreCoordinator(managedObjectModel: old)
            try coordinator.addPersistentStore(type: kind.type, at: url)
            let context = ManagedObjectContext(concurrencyType: .confinement)
            context.persistentStoreCoordinator = coordinator
            context.insert("Stamped", ["id": id, "title": "old"])
            try context.save()
            try coordinator.removePersistentStore(coordinator.persistentStores[0])
        }
        let coordinator = PersistentStoreCoordinator(managedObjectModel: new)
        // No migration allowed: a store written with another model would throw incompatibleModel.
        let options: [String: any Sendable] = [
            PersistentStoreOption.migratePersistentStoresAutomatically: false,
            PersistentStoreOption.inferMappingModelAutomatically: false,
        ]
        try coordinator.addPersistentStore(type: kind.type, at: url, options: options)
        let context = ManagedObjectContext(concurrencyType: .confinement)
        context.persistentStoreCoordinator = coordinator
        let fetched = try context.fetch(FetchDescriptor<Stamped>())
        #expect(fetched.map(\.id) == [id])
        #expect(fetched.map(\.title) == ["old"])
        let added = Stamped(context: context)
        try context.save()
        #expect(added.id != id)
    }

    @Test(arguments: StoreKind.allCases)
    func aFetchedObjectKeepsItsStoredValues(_ kind: StoreKind) throws {
        let stack = try TestStack(kind, model: TestModels.stamped())
        let writer = stack.context("writer")
        let written = Stamped(context: writer)
        written.created = Date(timeIntervalSince1970: 1_000)
        try writer.save()

        let reader = stack.context("reader")
        let fault = reader.object(with: written.objectID) as! Stamped
        #expect(fault.id == written.id)
        #expect(fault.created == Date(timeIntervalSince1970: 1_000))
        let fetched = try #require(try reader.fetch(FetchDescriptor<Stamped>()).first)
        #expect(fetched === fault)
        #expect(!fetched.hasChanges)
        #expect(!reader.hasChanges)
    }

    @Test(arguments: StoreKind.allCases)
    func aValueSetAfterTheInsertWins(_ kind: StoreKind) throws {
        let stack = try TestStack(kind, model: TestModels.stamped())
        let context = stack.context()
        let chosen = UUID()
        let object = Stamped(context: context)
        object.id = chosen
        object.created = .distantPast
        try context.save()
        let read = try stack.context("reader").fetch(FetchDescriptor<Stamped>())
        #expect(read.map(\.id) == [chosen])
        #expect(read.map(\.created) == [.distantPast])
    }

    @Test func eachNewObjectEvaluatesItsInitialValueOnce() throws {
        let stack = try TestStack(.inMemory, model: TestModels.stamped())
        let context = stack.context()
        let start = InitialValueCounter.count.load(ordering: .relaxed)
        let first = Counted(context: context)
        let second = Counted(context: context)
        #expect(InitialValueCounter.count.load(ordering: .relaxed) == start + 2)
        #expect(first.serial == start + 1)
        #expect(second.serial == start + 2)
        #expect(context.model?.entitiesByName["Counted"]?.attributesByName["serial"]?.defaultValue == nil)
    }

    @Test func anObjectCreatedWithoutAContextTakesItsInitialValuesWhenInserted() throws {
        let stack = try TestStack(.inMemory, model: TestModels.stamped())
        let context = stack.context()
        let entity = try #require(stack.model.entitiesByName["Stamped"])
        let first = Stamped(entity: entity, insertInto: nil)
        let second = Stamped(entity: entity, insertInto: nil)
        context.insert(first)
        context.insert(second)
        #expect(first.id != second.id)
        try context.save()
        #expect(try context.count(for: FetchRequest<ManagedObject>(entityName: "Stamped")) == 2)
    }

    @Test func anAwakeFromInsertOverrideSeesTheInitialValuesAndCanReplaceThem() throws {
        let stack = try TestStack(.inMemory, model: TestModels.stamped())
        let context = stack.context()
        let withSuper = AwakeCallingSuper(context: context)
        #expect(withSuper.idSeenInAwake == withSuper.id)
        #expect(withSuper.replaced == .distantPast)
        let withoutSuper = AwakeWithoutSuper(context: context)
        #expect(withoutSuper.idSeenInAwake == withoutSuper.id)
        let another = AwakeWithoutSuper(context: context)
        #expect(another.id != withoutSuper.id)
        try context.save()
    }

    @Test func aSubEntitySetsItsOwnAndItsSuperEntitysInitialValues() throws {
        let stack = try TestStack(.inMemory, model: TestModels.stamped())
        let context = stack.context()
        let first = StampedLeaf(context: context)
        let second = StampedLeaf(context: context)
        #expect(first.baseID != second.baseID)
        #expect(first.leafID != second.leafID)
        #expect(first.leafLabel == "leaf")
        #expect(stack.model.entitiesByName["StampedLeaf"]?.attributesByName["leafLabel"]?.defaultValue as? String == "leaf")
        try context.save()
    }

    @Test(arguments: StoreKind.allCases)
    func aChildsInsertKeepsItsValuesInTheParentAndTheStore(_ kind: StoreKind) throws {
        let stack = try TestStack(kind, model: TestModels.stamped())
        let parent = stack.context("parent")
        let child = ManagedObjectContext(concurrencyType: .confinement)
        child.parent = parent
        let inChild = Stamped(context: child)
        let id = inChild.id, created = inChild.created
        try child.save()

        let inParent = try #require(parent.registeredObjects.first { $0.entity.name == "Stamped" } as? Stamped)
        #expect(inParent.isInserted)
        #expect(inParent.id == id)
        #expect(inParent.created == created)
        try parent.save()
        let stored = try stack.context("reader").fetch(FetchDescriptor<Stamped>())
        #expect(stored.map(\.id) == [id])
    }

    @Test(arguments: StoreKind.allCases)
    func objectsMergedFromAnotherContextKeepTheirValues(_ kind: StoreKind) throws {
        let stack = try TestStack(kind, model: TestModels.stamped())
        let writer = stack.context("writer")
        let reader = stack.context("reader")
        let didSave = MergeTests.Observed(ManagedObjectContext.didSaveObjectsNotification, from: writer)
        let written = Stamped(context: writer)
        try writer.save()
        reader.mergeChanges(fromContextDidSave: try #require(didSave.all.last))
        let merged = try #require(try reader.existingObject(with: written.objectID) as? Stamped)
        #expect(merged.id == written.id)
        #expect(merged.created == written.created)
    }

    @Test(arguments: StoreKind.allCases)
    func aBatchInsertKeepsTheValuesItGivesAndMustGiveThoseWithoutADefault(_ kind: StoreKind) throws {
        let stack = try TestStack(kind, model: TestModels.stamped())
        let context = stack.context()
        let ids = [UUID(), UUID()]
        let rows: [[String: any Sendable]] = ids.map { ["id": $0, "created": Date(timeIntervalSince1970: 5), "history": ["batch"]] }
        let insert = BatchInsertRequest(entityName: "Stamped", objects: rows)
        insert.resultType = .objectIDs
        let inserted = try #require((try context.execute(insert) as? BatchInsertResult)?.result as? [ManagedObjectID])
        #expect(inserted.count == 2)
        let read = try context.fetch(FetchDescriptor<Stamped>())
        #expect(Set(read.map(\.id)) == Set(ids))
        #expect(read.allSatisfy { $0.created == Date(timeIntervalSince1970: 5) && $0.history == ["batch"] && $0.title == "untitled" })
        #expect(read.allSatisfy { $0.touched == nil })

        // No object, no initializer: a required attribute whose initial value is evaluated for each
        // object has no default to fill a row that leaves it out.
        let missing = BatchInsertRequest(entityName: "Stamped", objects: [["id": UUID(), "created": Date()]])
        #expect(throws: ObjectGraphError.validation) { try context.execute(missing) }
        #expect(try context.count(for: FetchRequest<ManagedObject>(entityName: "Stamped")) == 2)
    }
}
