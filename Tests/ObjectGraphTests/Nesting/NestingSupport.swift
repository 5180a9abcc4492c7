import Foundation
import Testing
import ObjectGraph
@testable import ObjectGraphCore

/// A chain of contexts over one store: a private root on the coordinator and children made on
/// demand, plus reads of what the store itself holds.
final class ContextChain: @unchecked Sendable {  // immutable after init; contexts are Sendable
    let stack: TestStack
    let root: ManagedObjectContext

    init(_ kind: StoreKind) throws {
        stack = try TestStack(kind)
        root = ManagedObjectContext(concurrencyType: .privateQueue)
        root.name = "root"
        root.persistentStoreCoordinator = stack.coordinator
    }

    /// A new child of `parent`.
    func child(of parent: ManagedObjectContext, _ name: String, _ type: ManagedObjectContext.ConcurrencyType = .privateQueue) -> ManagedObjectContext {
        let context = ManagedObjectContext(concurrencyType: type)
        context.name = name
        context.parent = parent
        return context
    }

    /// Saves a folder "Inbox" with notes n1 (rank 1) … n`count` into the store through the root,
    /// and returns their IDs: the folder's, then the notes'.
    func seed(notes count: Int = 3) throws -> (folder: ManagedObjectID, notes: [ManagedObjectID]) {
        try root.performAndWait {
            let folder = root.insert("Folder", ["name": "Inbox"])
            let notes = (1...count).map { i in root.insert("Note", ["title": "n\(i)", "rank": i, "folder": folder]) }
            try root.save()
            return (folder.objectID, notes.map(\.objectID))
        }
    }

    /// What the store holds, read by a fresh context on the coordinator: titles by rank.
    func storedNotes() throws -> [String: Int64] {
        let context = stack.context("store reader")
        var result: [String: Int64] = [:]
        for note in try context.all("Note") {
            result[note.value(forKey: "title") as! String] = note.value(forKey: "rank") as? Int64
        }
        return result
    }

    func storedCount(_ entity: String) throws -> Int {
        try stack.context("store reader").count(for: FetchRequest<ManagedObject>(entityName: entity))
    }
}

extension ManagedObjectContext {
    /// The titles of the notes this context fetches, sorted by rank.
    func noteTitles(_ predicate: FetchPredicate? = nil) throws -> [String] {
        let request = FetchRequest<ManagedObject>(entityName: "Note")
        request.predicate = predicate
        request.sortDescriptors = [FetchSortDescriptor(key: "rank")]
        return try fetch(request).map { $0.value(forKey: "title") as! String }
    }

    func title(of id: ManagedObjectID) -> String? {
        object(with: id).value(forKey: "title") as? String
    }
}

/// Waits, polling, until a condition holds or the time runs out; returns whether it held.
func eventually(within seconds: Double = 10, _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if try condition() { return true }
        usleep(10_000)
    }
    return try condition()
}

/// Runs work on another thread and waits for it at most `seconds`: false means it is stuck (a
/// deadlock), which the test reports instead of hanging.
func finishes(within seconds: Double = 30, _ work: @escaping @Sendable () -> Void) -> Bool {
    let done = DispatchSemaphore(value: 0)
    ThreadOfItsOwn.start {
        work()
        done.signal()
    }
    return done.wait(timeout: .now() + seconds) == .success
}
