import Foundation
import Testing
import ObjectGraph
@testable import ObjectGraphCore

/// The identity map is the context's, on its queue: objects dropped by other threads (a program
/// that smuggled them out) never touch it, and give their row-cache references back themselves.
@Suite("Concurrency: objects dropped on other threads")
struct ConcurrencyIdentityMapTests {
    /// Objects handed to another thread on purpose, as a misbehaving program would.
    final class Smuggled: @unchecked Sendable {  // each instance is handed to one thread, which alone uses it
        var objects: [ManagedObject]
        init(_ objects: [ManagedObject]) { self.objects = objects }
    }

    @Test(arguments: [StoreKind.sqlite, .inMemory])
    func objectsDroppedOnOtherThreadsWhileTheContextWorksLeaveItConsistent(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        let writer = stack.context("writer")
        for i in 0..<2_000 { _ = writer.insert("Note", ["title": "note \(i)", "rank": Int64(i)]) }
        try writer.save()
        writer.reset()

        let context = stack.privateContext("identity")
        let rounds = 6
        for round in 0..<rounds {
            // Fetched as faults holding their rows, then split among four threads.
            let parcels: [Smuggled] = try context.performAndWait {
                let notes = try context.fetch(FetchRequest<ManagedObject>(entityName: "Note"))
                #expect(notes.count == 2_000)
                return stride(from: 0, to: notes.count, by: 500).map { Smuggled(Array(notes[$0..<min($0 + 500, notes.count)])) }
            }
            #expect(stack.coordinator.statistics.rowCacheCount == 2_000, "round \(round)")
            let start = DispatchSemaphore(value: 0)
            let group = DispatchGroup()
            for parcel in parcels {
                group.enter()
                ThreadOfItsOwn.start {
                    start.wait()
                    parcel.objects.removeAll()
                    group.leave()
                }
            }
            // Meanwhile the context registers, looks up and sweeps on its own queue.
            for _ in parcels { start.signal() }
            for _ in 0..<20 {
                try context.performAndWait {
                    let request = FetchRequest<ManagedObjectID>(entityName: "Note")
                    request.includesPropertyValues = false
                    let ids = try context.fetch(request)
                    for id in ids.prefix(50) { _ = context.registeredObject(for: id) }
                    context.sweepIdentityMap()
                }
            }
            #expect(group.wait(timeout: .now() + 30) == .success)
        }
        try context.performAndWait {
            context.sweepIdentityMap()
            #expect(context.registeredObjects.isEmpty)
            // Every reference went back to the row cache with its object.
            #expect(context.pinnedRows.isEmpty)
            #expect(stack.coordinator.statistics.rowCacheCount == 0)
            let notes = try context.fetch(FetchRequest<ManagedObject>(entityName: "Note"))
            #expect(Set(notes.map { $0.value(forKey: "title") as! String }).count == 2_000)
        }
    }

    /// As in Core Data, the context does not keep an unchanged object alive: dropped by the
    /// program, it is gone at once, and its ID gives a new fault.
    @Test(arguments: [StoreKind.sqlite, .inMemory])
    func anUnchangedObjectGoesAwayWhenTheProgramDropsIt(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        let writer = stack.context("writer")
        let note = writer.insert("Note", ["title": "kept?", "rank": Int64(1)])
        try writer.save()
        let id = note.objectID
        #expect(!id.isTemporaryID)
        let context = stack.privateContext("reader")
        try context.performAndWait {
            var fetched: ManagedObject? = try context.existingObject(with: id)
            weak let watched = fetched
            #expect(context.registeredObject(for: id) === fetched)
            #expect(fetched?.value(forKey: "title") as? String == "kept?")
            fetched = nil
            #expect(watched == nil, "the context held an unchanged object alive")
            #expect(context.registeredObject(for: id) == nil)
            #expect(context.registeredObjects.isEmpty)
            // A changed object is kept until it is saved.
            context.object(with: id).setValue("changed", forKey: "title")
            #expect(context.registeredObject(for: id)?.value(forKey: "title") as? String == "changed")
            try context.save()
            #expect(context.registeredObjects.isEmpty)
        }
    }

    /// Entries of objects the program dropped are swept as registrations go on: walking many rows
    /// one at a time keeps the map (and the memory its dead entries hold) bounded.
    @Test func theIdentityMapStaysBoundedWhileObjectsComeAndGo() throws {
        let stack = try TestStack(.sqlite)
        let writer = stack.context("writer")
        for i in 0..<6_000 { _ = writer.insert("Note", ["title": "note \(i)", "rank": Int64(i)]) }
        try writer.save()
        let context = stack.privateContext("walker")
        try context.performAndWait {
            let request = FetchRequest<ManagedObjectID>(entityName: "Note")
            let ids = try context.fetch(request)
            #expect(ids.count == 6_000)
            var largest = 0
            for id in ids {
                #expect(context.object(with: id).value(forKey: "title") != nil)
                largest = max(largest, context.registered.count)
            }
            #expect(largest <= 1_025, "dead entries piled up: \(largest) entries for at most one live object")
            context.sweepIdentityMap()
            #expect(context.registered.isEmpty)
        }
    }
}
