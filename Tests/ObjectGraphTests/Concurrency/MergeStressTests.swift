import Foundation
import Testing
import ObjectGraph
@testable import ObjectGraphCore

/// Seeded random runs of several contexts inserting, updating, deleting, moving, saving, merging and
/// refreshing over a few dozen objects, with invariants checked after every step. A failure prints
/// its seed; `OBJECTGRAPH_STRESS_SEED=N swift test --filter MergeStress` replays it.
@Suite("Stress: contexts merging each other's saves", .serialized)
struct MergeStressTests {
    struct Row: Equatable, CustomStringConvertible {
        var title: String
        var rank: Int64
        var folder: ManagedObjectID?
        var description: String { "\(title)/\(rank)/\(folder?.description ?? "-")" }
    }

    /// The notes as the store has them, read by a fresh context.
    static func storeState(_ stack: TestStack) throws -> [ManagedObjectID: Row] {
        let context = stack.context("inspector")
        var rows: [ManagedObjectID: Row] = [:]
        for note in try context.all("Note") {
            rows[note.objectID] = Row(
                title: note.value(forKey: "title") as! String, rank: note.value(forKey: "rank") as! Int64,
                folder: (note.value(forKey: "folder") as? ManagedObject)?.objectID)
        }
        return rows
    }

    static var seeds: [UInt64] {
        if let text = ProcessInfo.processInfo.environment["OBJECTGRAPH_STRESS_SEED"], let seed = UInt64(text) { return [seed] }
        return (0..<6).map { _ in UInt64.random(in: 0..<1_000_000_000) }
    }

    @Test(arguments: [StoreKind.sqlite, .inMemory])
    func everyContextAgreesWithTheStoreAfterMerging(_ kind: StoreKind) throws {
        for seed in Self.seeds {
            try run(kind, seed: seed)
        }
    }

    func run(_ kind: StoreKind, seed: UInt64) throws {
        var random = SeededRandom(seed: seed)
        let stack = try TestStack(kind)
        let setup = stack.context("setup")
        let folders = (0..<3).map { setup.insert("Folder", ["name": "f\($0)"]) }
        for i in 0..<12 { _ = setup.insert("Note", ["title": "n\(i)", "rank": i, "folder": folders[i % 3]]) }
        try setup.save()
        let folderIDs = folders.map(\.objectID)
        let contextCount = Int(random.next() % 7) + 2
        let contexts = (0..<contextCount).map { i -> ManagedObjectContext in
            let c = stack.context("c\(i)")
            c.retainsRegisteredObjects = true
            return c
        }
        let tag = "seed \(seed) on \(kind)"
        for step in 0..<150 {
            let context = contexts[Int(random.next() % UInt64(contexts.count))]
            let notes = try context.all("Note")
            let roll = random.next() % 100
            if ProcessInfo.processInfo.environment["OBJECTGRAPH_STRESS_TRACE"] == "1" {
                print("\(kind) step \(step) \(context.debugName) roll \(roll) notes \(notes.count)")
            }
            switch roll {
            case 0..<20:
                let note = context.insert("Note", ["title": "s\(step)", "rank": Int(random.next() % 100)])
                note.setValue(context.object(with: folderIDs[Int(random.next() % 3)]), forKey: "folder")
            case 20..<40 where !notes.isEmpty:
                notes[Int(random.next() % UInt64(notes.count))].setValue(Int(random.next() % 100), forKey: "rank")
            case 40..<50 where !notes.isEmpty:
                context.delete(notes[Int(random.next() % UInt64(notes.count))])
            case 50..<60 where !notes.isEmpty:
                let folder = context.object(with: folderIDs[Int(random.next() % 3)])
                notes[Int(random.next() % UInt64(notes.count))].setValue(folder, forKey: "folder")
            case 60..<65 where !notes.isEmpty:
                context.refresh(notes[Int(random.next() % UInt64(notes.count))], mergeChanges: random.next() % 2 == 0)
            default:
                guard context.hasChanges else { break }
                let before = try Self.storeState(stack)
                let saves = Recorder<ManagedObjectContext.SaveChanges>()
                let observer = NotificationCenter.default.addObserver(
                    forName: ManagedObjectContext.didSaveObjectsNotification, object: context, queue: nil) { n in
                        if let changes = ManagedObjectContext.SaveChanges(n) { saves.append(changes) }
                    }
                defer { NotificationCenter.default.removeObserver(observer) }
                do {
                    try context.save()
                } catch let error as ObjectGraphError {
                    // A conflict under the error policy writes nothing.
                    #expect(error.code == .mergeConflict, "\(tag), step \(step): \(error)")
                    if ProcessInfo.processInfo.environment["OBJECTGRAPH_STRESS_TRACE"] == "1" { print("\(kind)   conflict: \(error.message)") }
                    #expect(try Self.storeState(stack) == before, "\(tag), step \(step): a failed save wrote")
                    context.rollback()
                    context.refreshAllObjects()
                    break
                }
                let changes = try #require(saves.values.last, "\(tag)")
                if ProcessInfo.processInfo.environment["OBJECTGRAPH_STRESS_TRACE"] == "1" {
                    print("\(kind)   saved: +\(changes.insertedObjectIDs.sorted()) ~\(changes.updatedObjectIDs.sorted()) -\(changes.deletedObjectIDs.sorted())")
                }
                for other in contexts where other !== context { other.mergeChanges(changes) }
            }
            try checkInvariants(stack, contexts, tag: "\(tag), step \(step)")
        }
    }

    func checkInvariants(_ stack: TestStack, _ contexts: [ManagedObjectContext], tag: String) throws {
        let store = try Self.storeState(stack)
        for context in contexts {
            context.processPendingChanges()  // delete rules apply here, as in Core Data
            for object in context.registeredObjects where !object.isFault && !object.isDeleted && object.entity.name == "Note" {
                // Inverse consistency: a note's folder lists the note.
                if let folder = object.value(forKey: "folder") as? ManagedObject {
                    let notes = folder.value(forKey: "notes") as? Set<ManagedObject> ?? []
                    #expect(notes.contains(object), "\(tag): \(object.objectID) not in its folder's notes in \(context.debugName)")
                }
                // Agreement: an unchanged, saved note has the store's values.
                guard !object.hasChanges, !object.objectID.isTemporaryID else { continue }
                let row = Row(
                    title: object.value(forKey: "title") as! String, rank: object.value(forKey: "rank") as! Int64,
                    folder: (object.value(forKey: "folder") as? ManagedObject)?.objectID)
                if let stored = store[object.objectID] {
                    #expect(row == stored, "\(tag): \(object.objectID) in \(context.debugName) is \(row), the store has \(stored)")
                }
            }
            for object in context.registeredObjects where !object.isFault && !object.isDeleted && object.entity.name == "Folder" {
                // A loaded relationship lists neither notes deleted here nor rows gone from the store.
                if let loaded = object.toMany[object.entity.relationshipsByName["notes"]!.index], loaded.isLoaded {
                    for id in loaded.ids {
                        let registered = context.registeredObject(for: id)
                        #expect(registered?.isDeleted != true, "\(tag): \(object.objectID) in \(context.debugName) lists \(id), deleted here")
                        if !id.isTemporaryID && registered?.isInserted != true {
                            #expect(store[id] != nil, "\(tag): \(object.objectID) in \(context.debugName) lists \(id), gone from the store")
                        }
                    }
                }
                if !(object.toMany[object.entity.relationshipsByName["notes"]!.index]?.ids.allSatisfy({ context.registeredObject(for: $0)?.isDeleted != true && (store[$0] != nil || $0.isTemporaryID || context.registeredObject(for: $0)?.isInserted == true) }) ?? true) {
                    continue
                }
                for note in object.value(forKey: "notes") as? Set<ManagedObject> ?? [] where !note.isDeleted {
                    #expect((note.value(forKey: "folder") as? ManagedObject) === object, "\(tag): \(note.objectID) listed in \(object.objectID) in \(context.debugName), but points to another folder")
                }
            }
        }
    }
}
