import ArgumentParser
import Foundation
import ObjectGraphCore

/// Breaks one of the concurrency rules on purpose, so tests can check that ObjectGraph stops the
/// process with a message naming the context, its queue and the offending thread.
struct Misuse: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "_misuse", abstract: "Break a concurrency rule on purpose (for ObjectGraph's tests).", shouldDisplay: false)

    enum Kind: String, ExpressibleByArgument, CaseIterable {
        case contextOffQueue = "context-off-queue"
        case objectOffQueue = "object-off-queue"
        case inaccessibleFault = "inaccessible-fault"
        case reconfigureAfterUse = "reconfigure-after-use"
        case replaceCoordinator = "replace-coordinator"
        case chainTooDeep = "chain-too-deep"
        case pinChild = "pin-child"
        case none
    }

    @Argument var kind: Kind

    func run() throws {
        let model = ManagedObjectModel(entities: [
            EntityDescription(name: "Note", properties: [.attribute("title", .string)]),
        ])
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        try coordinator.addPersistentStore(type: .inMemory)
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.name = "misused"
        context.persistentStoreCoordinator = coordinator
        switch kind {
        case .none:
            let n = try context.performAndWait {
                _ = context.insertNewObject(forEntityName: "Note")
                try context.save()
                return try context.count(for: FetchRequest<ManagedObject>(entityName: "Note"))
            }
            print("ok \(n)")
        case .contextOffQueue:
            // Called from the main thread, not inside perform: a violation.
            _ = context.insertNewObject(forEntityName: "Note")
        case .objectOffQueue:
            let id = try context.performAndWait {
                let note = context.insertNewObject(forEntityName: "Note")
                try context.save()
                return note.objectID
            }
            Thread.current.name = "offender"
            context.performAndWait {
                let note = context.object(with: id)
                _ = note.value(forKey: "title")
                // Smuggle the object out and use it on this thread, outside perform.
                Smuggler.shared.object = note
            }
            _ = Smuggler.shared.object?.value(forKey: "title")
        case .reconfigureAfterUse:
            context.performAndWait { _ = context.insertNewObject(forEntityName: "Note") }
            let other = ManagedObjectContext(concurrencyType: .privateQueue)
            other.persistentStoreCoordinator = coordinator
            context.parent = other
        case .replaceCoordinator:
            // Configured inside the first performAndWait, as Core Data allows; then replaced, which it does not.
            let queued = ManagedObjectContext(concurrencyType: .privateQueue)
            queued.name = "misused"
            queued.performAndWait { queued.persistentStoreCoordinator = coordinator }
            queued.persistentStoreCoordinator = PersistentStoreCoordinator(managedObjectModel: model)
        case .chainTooDeep:
            var deepest = context
            for _ in 0..<ManagedObjectContext.maximumNestingDepth {
                let child = ManagedObjectContext(concurrencyType: .confinement)
                child.parent = deepest
                deepest = child
            }
        case .pinChild:
            let child = ManagedObjectContext(concurrencyType: .privateQueue)
            child.name = "pinned child"
            child.parent = context
            try child.performAndWait { try child.setQueryGenerationFrom(.current) }
        case .inaccessibleFault:
            let id = try context.performAndWait {
                let note = context.insertNewObject(forEntityName: "Note")
                try context.save()
                return note.objectID
            }
            let other = ManagedObjectContext(concurrencyType: .privateQueue)
            other.name = "stale reader"
            other.persistentStoreCoordinator = coordinator
            try context.performAndWait {
                context.delete(context.object(with: id))
                try context.save()
            }
            other.performAndWait {
                _ = other.object(with: id).value(forKey: "title")
            }
        }
    }
}

/// Holds an object past its queue, which only unsafe code can do.
final class Smuggler: @unchecked Sendable {
    static let shared = Smuggler()
    var object: ManagedObject?
}
