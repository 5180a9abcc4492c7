import Foundation
import GRDB
import Testing
import ObjectGraph
@testable import ObjectGraphCore

/// Object URIs in Core Data's scheme: `x-coredata://<NSStoreUUID>/<Entity>/p<Z_PK>`, read back by
/// the coordinator, which also reads the `x-objectgraph://` URIs earlier versions wrote.
@Suite("Object URIs use Core Data's scheme")
struct ObjectURITests {
    /// A store with one saved note, and its ID.
    private func savedNote(_ kind: StoreKind) throws -> (TestStack, ManagedObjectID) {
        let stack = try TestStack(kind)
        let context = stack.context()
        let note = context.insert("Note", ["title": "kept"])
        try context.save()
        return (stack, note.objectID)
    }

    @Test(arguments: StoreKind.everyStore)
    func aPermanentIDsURIIsCoreDatasStoreUUIDEntityAndPrimaryKey(_ kind: StoreKind) throws {
        let (stack, id) = try savedNote(kind)
        let uri = id.uriRepresentation()
        let pk = try #require(id.primaryKey)
        #expect(uri.absoluteString == "x-coredata://\(stack.store.identifier)/Note/p\(pk)")
        #expect(uri.scheme == "x-coredata")
        #expect(stack.store.metadata["NSStoreUUID"] as? String == stack.store.identifier)
    }

    @Test(arguments: StoreKind.everyStore)
    func bothSchemesRoundTripToTheSameID(_ kind: StoreKind) throws {
        let (stack, id) = try savedNote(kind)
        let pk = try #require(id.primaryKey)
        let uuid = stack.store.identifier
        let spellings = [
            "x-coredata://\(uuid)/Note/p\(pk)",
            "x-objectgraph://\(uuid)/Note/p\(pk)",
            "X-CoreData://\(uuid.lowercased())/Note/p\(pk)",
        ]
        for spelling in spellings {
            let url = try #require(URL(string: spelling))
            let read = try #require(stack.coordinator.managedObjectID(forURIRepresentation: url), "\(spelling)")
            #expect(read == id, "\(spelling)")
            #expect(read.uriRepresentation() == id.uriRepresentation(), "\(spelling)")
        }
        let reader = stack.context("reader")
        let legacy = try #require(URL(string: spellings[1]))
        let resolved = try #require(stack.coordinator.managedObjectID(forURIRepresentation: legacy))
        #expect(try reader.existingObject(with: resolved).value(forKey: "title") as? String == "kept")
    }

    @Test func aTemporaryIDsURIHasNoStoreAndNamesNoObject() throws {
        let stack = try TestStack(.inMemory)
        let context = stack.context()
        let note = context.insert("Note", ["title": "new"])
        let uri = note.objectID.uriRepresentation()
        #expect(uri.scheme == "x-coredata")
        #expect(uri.absoluteString.hasPrefix("x-coredata:///Note/t"))
        let other = context.insert("Note", ["title": "other"]).objectID.uriRepresentation()
        #expect(uri != other)
        #expect(stack.coordinator.managedObjectID(forURIRepresentation: uri) == nil)
    }

    @Test(arguments: StoreKind.allCases)
    func malformedURIsNameNoObject(_ kind: StoreKind) throws {
        let (stack, id) = try savedNote(kind)
        let pk = try #require(id.primaryKey)
        let uuid = stack.store.identifier
        let malformed = [
            "https://\(uuid)/Note/p\(pk)",
            "x-coredatax://\(uuid)/Note/p\(pk)",
            "x-coredata:///Note/p\(pk)",
            "x-coredata://\(UUID().uuidString)/Note/p\(pk)",
            "x-coredata://\(uuid)/Nope/p\(pk)",
            "x-coredata://\(uuid)/Note",
            "x-coredata://\(uuid)/Note/",
            "x-coredata://\(uuid)/Note/p",
            "x-coredata://\(uuid)/Note/\(pk)",
            "x-coredata://\(uuid)/Note/t\(pk)",
            "x-coredata://\(uuid)/Note/p-\(pk)",
            "x-coredata://\(uuid)/Note/p+\(pk)",
            "x-coredata://\(uuid)/Note/p0",
            "x-coredata://\(uuid)/Note/p1x",
            "x-coredata://\(uuid)/Note/p99999999999999999999",
            "x-coredata://\(uuid)/Note/p\(pk)/more",
            "x-coredata://\(uuid)//Note/p\(pk)",
            "x-coredata://\(uuid)/Note/p\(pk)?query",
            "x-coredata://\(uuid)/Note/p\(pk)#fragment",
            "x-coredata://user@\(uuid)/Note/p\(pk)",
            "x-coredata://\(uuid):80/Note/p\(pk)",
            "x-coredata:\(uuid)/Note/p\(pk)",
        ]
        for text in malformed {
            let url = try #require(URL(string: text), "\(text)")
            #expect(stack.coordinator.managedObjectID(forURIRepresentation: url) == nil, "\(text)")
        }
    }

    @Test func anIDEncodesAsItsCoreDataURIAndDecodesFromEitherScheme() throws {
        let (stack, id) = try savedNote(.sqlite)
        let encoded = try JSONEncoder().encode([id])
        let text = try #require(String(data: encoded, encoding: .utf8))
        #expect(text.contains("x-coredata:"))
        let decoder = JSONDecoder()
        decoder.userInfo[.persistentStoreCoordinator] = stack.coordinator
        #expect(try decoder.decode([ManagedObjectID].self, from: encoded) == [id])
        let legacy = try JSONEncoder().encode(["x-objectgraph://\(stack.store.identifier)/Note/p\(try #require(id.primaryKey))"])
        #expect(try decoder.decode([ManagedObjectID].self, from: legacy) == [id])
    }
}

/// The URIs of objects in stores Apple's Core Data wrote are the ones Core Data gives them.
@Suite("Object URIs of Core Data's own stores", .needsCoreDataFixtures)
struct CoreDataStoreURITests {
    @Test func everyObjectOfEveryFixtureStoreHasTheURICoreDataGivesIt() throws {
        var checked = 0
        for (fixture, url) in try CoreDataFixtures.stores() {
            let store = try CoreDataFixtures.open(url, fixture: fixture, readOnly: true)
            defer { store.remove() }
            // Core Data keeps the store's UUID (its NSStoreUUID) in Z_METADATA's Z_UUID column.
            let uuid = try #require(try store.raw { try String.fetchOne($0, sql: "SELECT Z_UUID FROM Z_METADATA") }, "\(fixture)/\(url.lastPathComponent)")
            let numbers = try store.raw(CoreDataFixtures.entityNumbers)
            let context = store.context()
            for entity in store.model.entities where !entity.isAbstract {
                // Z_PRIMARYKEY keeps the name an entity had before a migration renamed it.
                guard let number = numbers[entity.name] ?? entity.renamingIdentifier.flatMap({ numbers[$0] }) else { continue }
                let table = "Z" + entity.rootEntity.name.uppercased()
                let keys = try store.raw { db in
                    try Int64.fetchAll(db, sql: "SELECT Z_PK FROM \(table) WHERE Z_ENT = ?", arguments: [number])
                }
                let expected = Set(keys.map { "x-coredata://\(uuid)/\(entity.name)/p\($0)" })
                let request = FetchRequest<ManagedObjectID>(entityName: entity.name)
                request.includesSubentities = false
                let ids = try context.fetch(request)
                #expect(Set(ids.map { $0.uriRepresentation().absoluteString }) == expected, "\(fixture)/\(url.lastPathComponent) \(entity.name)")
                // Each URI as Core Data writes it names the object.
                for key in keys.prefix(3) {
                    let uri = try #require(URL(string: "x-coredata://\(uuid)/\(entity.name)/p\(key)"))
                    let id = try #require(store.coordinator.managedObjectID(forURIRepresentation: uri), "\(uri)")
                    #expect(try context.existingObject(with: id).objectID.uriRepresentation() == uri)
                }
                checked += keys.count
            }
        }
        #expect(checked > 1000)
    }
}
