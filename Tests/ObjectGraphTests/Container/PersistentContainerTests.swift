import Foundation
import Testing
import ObjectGraph
@testable import ObjectGraphCore

/// A container on a store of the given kind in a temporary folder, loaded.
func loadedContainer(_ kind: StoreKind, in directory: TemporaryDirectory, name: String = "Notes") throws -> PersistentContainer {
    let container = PersistentContainer(name: name, managedObjectModel: TestModels.notes())
    let description = PersistentStoreDescription(url: directory.file("\(name).\(kind.rawValue)"))
    description.type = kind.type
    container.persistentStoreDescriptions = [description]
    try container.loadPersistentStores()
    return container
}

extension ManagedObjectContext {
    /// The number of objects of an entity, from the store and this context's pending changes.
    func number(of entity: String) throws -> Int {
        try count(for: FetchRequest<ManagedObject>(entityName: entity))
    }
}

@Suite("PersistentStoreDescription")
struct PersistentStoreDescriptionTests {
    @Test("A new description is an SQLite store with full durability, writable, added synchronously")
    func defaults() {
        let url = URL(fileURLWithPath: "/tmp/Notes.sqlite")
        let description = PersistentStoreDescription(url: url)
        #expect(description.url == url)
        #expect(description.type == .sqlite)
        #expect(description.configuration == nil)
        #expect(description.durability == .full)
        #expect(!description.isReadOnly)
        #expect(!description.shouldAddStoreAsynchronously)
        #expect(description.timeout == 5)
        #expect(description.options.isEmpty)
        #expect(PersistentStoreDescription().url == nil)
    }

    @Test("Read-only, durability and timeout are the options under their keys")
    func propertiesAreOptions() {
        let description = PersistentStoreDescription(url: URL(fileURLWithPath: "/tmp/a.sqlite"))
        description.isReadOnly = true
        description.durability = .normal
        description.timeout = 2
        #expect(description.options[PersistentStoreOption.readOnly] as? Bool == true)
        #expect(description.options[PersistentStoreOption.durability] as? StoreDurability == .normal)
        #expect(description.options[PersistentStoreOption.busyTimeout] as? Double == 2)
        description.setOption("FULL", forKey: PersistentStoreOption.durability)
        #expect(description.durability == .full)
        description.setOption(nil, forKey: PersistentStoreOption.readOnly)
        #expect(!description.isReadOnly)
        #expect("\(description)".contains("durability full"))
    }
}

@Suite("PersistentContainer")
struct PersistentContainerTests {
    let directory = TemporaryDirectory()

    @Test("By default the container describes one SQLite store named after it in the default folder")
    func defaultDescription() throws {
        let container = PersistentContainer(name: "Notes", managedObjectModel: TestModels.notes())
        #expect(container.name == "Notes")
        #expect(container.persistentStoreCoordinator.managedObjectModel === container.managedObjectModel)
        let descriptions = container.persistentStoreDescriptions
        #expect(descriptions.count == 1)
        #expect(descriptions[0].type == .sqlite)
        #expect(descriptions[0].url == PersistentContainer.defaultDirectoryURL().appendingPathComponent("Notes.sqlite"))
        #expect(container.persistentStoreCoordinator.persistentStores.isEmpty, "nothing is opened before loading")
    }

    @Test("The default folder follows the XDG base directory rules, one folder per program")
    func defaultDirectoryRules() {
        let home = URL(fileURLWithPath: "/home/ada")
        func url(_ environment: [String: String]) -> String {
            PersistentContainer.defaultDirectoryURL(environment: environment, home: home, programName: "notes-server").path
        }
        #expect(url([:]) == "/home/ada/.local/share/notes-server")
        #expect(url(["XDG_DATA_HOME": "/srv/data"]) == "/srv/data/notes-server")
        #expect(url(["XDG_DATA_HOME": "relative/data"]) == "/home/ada/.local/share/notes-server", "a relative XDG path is ignored")
        #expect(url(["XDG_DATA_HOME": ""]) == "/home/ada/.local/share/notes-server")
    }

    @Test("Loading adds the described stores, creating the folder, with their durability and access", arguments: [StoreKind.sqlite, .inMemory])
    func loadsDescribedStores(kind: StoreKind) throws {
        let container = PersistentContainer(name: "Notes", managedObjectModel: TestModels.notes())
        let url = directory.file("deep/er/Notes.\(kind.rawValue)")
        let description = PersistentStoreDescription(url: url)
        description.type = kind.type
        description.durability = .normal
        container.persistentStoreDescriptions = [description]
        try container.loadPersistentStores()
        let stores = container.persistentStoreCoordinator.persistentStores
        #expect(stores.count == 1)
        #expect(stores.first?.type == kind.type)
        if kind == .sqlite {
            #expect(FileManager.default.fileExists(atPath: url.path))
            #expect(stores.first?.durability == .normal)
            #expect(try (stores.first?.backend as? SQLiteStore)?.synchronousLevel() == 1, "synchronous = NORMAL")
        }
        try container.loadPersistentStores()
        #expect(container.persistentStoreCoordinator.persistentStores.count == 1, "a description's store is added once")
        try container.shutdown()
    }

    @Test("A read-only description opens the store read-only: saves throw")
    func readOnlyDescription() throws {
        try loadedContainer(.sqlite, in: directory).shutdown()
        let container = PersistentContainer(name: "Notes", managedObjectModel: TestModels.notes())
        let description = PersistentStoreDescription(url: directory.file("Notes.sqlite"))
        description.isReadOnly = true
        container.persistentStoreDescriptions = [description]
        try container.loadPersistentStores()
        #expect(container.persistentStoreCoordinator.persistentStores.first?.isReadOnly == true)
        let context = container.newBackgroundContext()
        #expect(throws: ObjectGraphError.readOnly) {
            try context.performAndWait {
                _ = context.insert("Tag", ["name": "x"])
                try context.save()
            }
        }
        try container.shutdown()
    }

    @Test("A store that fails to load throws from the throwing form and is reported per description by the callback form")
    func loadFailures() throws {
        let garbage = directory.file("garbage.sqlite")
        try Data(repeating: 0x5A, count: 4096).write(to: garbage)
        let container = PersistentContainer(name: "Notes", managedObjectModel: TestModels.notes())
        let good = PersistentStoreDescription(url: directory.file("good.sqlite"))
        container.persistentStoreDescriptions = [PersistentStoreDescription(url: garbage), good]
        #expect(throws: ObjectGraphError.notADatabase) { try container.loadPersistentStores() }
        #expect(container.persistentStoreCoordinator.persistentStores.isEmpty, "the throwing form stops at the first failure")

        let results = Recorder<(String, String?)>()
        container.loadPersistentStores { description, error in
            results.append((description.url!.lastPathComponent, error.map { "\($0)" }))
        }
        let values = results.values
        #expect(values.map(\.0) == ["garbage.sqlite", "good.sqlite"], "called once per description, in order, before returning")
        #expect(values[0].1?.contains("notADatabase") == true)
        #expect(values[1].1 == nil)
        #expect(container.persistentStoreCoordinator.persistentStores.count == 1)
        try container.shutdown()
    }

    @Test("A description added asynchronously calls its handler later, on another thread")
    func asynchronousLoading() async throws {
        let container = PersistentContainer(name: "Notes", managedObjectModel: TestModels.notes())
        let description = PersistentStoreDescription(url: directory.file("async.sqlite"))
        description.shouldAddStoreAsynchronously = true
        container.persistentStoreDescriptions = [description]
        let called = Recorder<String>()
        let error: String? = await withCheckedContinuation { continuation in
            container.loadPersistentStores { loaded, error in
                called.append(loaded.url!.lastPathComponent)
                continuation.resume(returning: error.map { "\($0)" })
            }
            called.append("returned")
        }
        #expect(error == nil)
        #expect(called.values == ["returned", "async.sqlite"])
        #expect(container.persistentStoreCoordinator.persistentStores.count == 1)
        try await container.shutdown()
    }

    @Test("The view context is one main-queue context on the coordinator that does not merge on its own")
    func viewContext() throws {
        let container = try loadedContainer(.inMemory, in: directory)
        let view = container.viewContext
        #expect(view === container.viewContext)
        #expect(view.concurrencyType == .mainQueue)
        #expect(view.persistentStoreCoordinator === container.persistentStoreCoordinator)
        #expect(view.parent == nil)
        #expect(!view.automaticallyMergesChangesFromParent)
    }

    @Test("Background contexts are new private-queue contexts on the coordinator, sharing the store", arguments: [StoreKind.sqlite, .inMemory])
    func backgroundContexts(kind: StoreKind) throws {
        let container = try loadedContainer(kind, in: directory)
        let a = container.newBackgroundContext(), b = container.newBackgroundContext()
        #expect(a !== b)
        #expect(a.concurrencyType == .privateQueue && b.concurrencyType == .privateQueue)
        #expect(a.persistentStoreCoordinator === container.persistentStoreCoordinator)
        try a.performAndWait {
            _ = a.insert("Folder", ["name": "Inbox"])
            try a.save()
        }
        #expect(try b.performAndWait { try b.number(of: "Folder") } == 1)
        try container.shutdown()
    }

    @Test("The container's list of background contexts drops those that are gone, and keeps those alive")
    func backgroundContextsThatAreGoneAreDropped() throws {
        let container = try loadedContainer(.inMemory, in: directory)
        var kept: [ManagedObjectContext] = []
        for i in 0..<1_000 {
            let context = container.newBackgroundContext()
            if i % 100 == 0 { kept.append(context) }
        }
        let listed = container.state.withLock { $0.backgroundContexts }
        // Pruned only when the list doubles: at most twice the live ones, and never below the first size.
        #expect(listed.count <= 2 * max(16, kept.count) + 1)
        let alive = listed.compactMap(\.context)
        #expect(alive.count == kept.count)
        #expect(kept.allSatisfy { context in alive.contains { $0 === context } })
        try container.shutdown()
    }

    @Test("performBackgroundTask runs its block on a new private context", arguments: [StoreKind.sqlite, .inMemory])
    func performBackgroundTaskCallback(kind: StoreKind) throws {
        let container = try loadedContainer(kind, in: directory)
        let done = DispatchSemaphore(value: 0)
        let seen = Recorder<String>()
        container.performBackgroundTask { context in
            seen.append("\(context.concurrencyType)")
            _ = context.insert("Folder", ["name": "Inbox"])
            do { try context.save() } catch { seen.append("\(error)") }
            done.signal()
        }
        done.wait()
        #expect(seen.values == ["privateQueue"])
        let check = container.newBackgroundContext()
        #expect(try check.performAndWait { try check.number(of: "Folder") } == 1)
        try container.shutdown()
    }

    @Test("The async performBackgroundTask returns the block's value and throws its error", arguments: [StoreKind.sqlite, .inMemory])
    func performBackgroundTaskAsync(kind: StoreKind) async throws {
        let container = try loadedContainer(kind, in: directory)
        let id = try await container.performBackgroundTask { context in
            let folder = context.insert("Folder", ["name": "Inbox"])
            try context.save()
            return folder.objectID
        }
        #expect(!id.isTemporaryID)
        let name = try await container.performBackgroundTask { context in
            try context.existingObject(with: id).value(forKey: "name") as? String
        }
        #expect(name == "Inbox")
        await #expect(throws: ObjectGraphError.validation) {
            try await container.performBackgroundTask { context in
                _ = context.insertNewObject(forEntityName: "Folder")   // name is required
                try context.save()
            }
        }
        try await container.shutdown()
    }

    /// A background task's context, and the objects it holds, go away once the task has ended, in
    /// each way a task leaves its context: objects it retains (`retainsRegisteredObjects`), changes
    /// a failed save leaves unsaved, changes never saved. An object keeps its context alive, so a
    /// context that kept its objects would live as long as the program (and a server that handles
    /// each request in a background task would keep every request's context).
    @Test("A background task's context goes away with its objects once the task ends", arguments: [StoreKind.sqlite, .inMemory])
    func backgroundTaskContextsGoAway(kind: StoreKind) async throws {
        let container = try loadedContainer(kind, in: directory)
        let id = try await container.performBackgroundTask { context in
            let folder = context.insert("Folder", ["name": "Inbox"])
            try context.save()
            return folder.objectID
        }
        let tasks: [@Sendable (ManagedObjectContext, WeakReferences) throws -> Void] = [
            { context, seen in  // every object it reads retained
                context.retainsRegisteredObjects = true
                _ = try context.fetch(FetchRequest<ManagedObject>(entityName: "Folder"))
                seen.add(context.registeredObjects)
            },
            { context, seen in  // a change left unsaved
                try context.existingObject(with: id).setValue("Renamed", forKey: "name")
                seen.add(context.registeredObjects)
            },
            { context, seen in  // a save that fails (a required name is missing), its changes left in the context
                context.retainsRegisteredObjects = true
                _ = context.insertNewObject(forEntityName: "Folder")
                try context.existingObject(with: id).setValue("Renamed", forKey: "name")
                seen.add(context.registeredObjects)
                try context.save()
            },
        ]
        for (index, task) in tasks.enumerated() {
            let seen = WeakReferences()
            _ = try? await container.performBackgroundTask { context in
                seen.add([context])
                try task(context, seen)
            }
            #expect(seen.count > 1, "task \(index) registered no object")
            // The queue lets go of the block just after the caller resumes.
            let deadline = ContinuousClock.now + .seconds(10)
            while seen.alive > 0 && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
            #expect(seen.alive == 0, "task \(index): \(seen.alive) of its context and objects still alive")
        }
        try await container.shutdown()
    }
}

/// Weak references to objects, counting how many are still alive.
private final class WeakReferences: @unchecked Sendable {  // its list is read and written under its lock
    private final class Reference { weak var object: AnyObject?; init(_ object: AnyObject) { self.object = object } }
    private let references = Protected<[Reference]>([])

    func add<Objects: Sequence>(_ objects: Objects) where Objects.Element: AnyObject {
        references.withLock { $0 += objects.map { Reference($0) } }
    }
    var count: Int { references.withLock { $0.count } }
    var alive: Int { references.withLock { $0.count { $0.object != nil } } }
}
