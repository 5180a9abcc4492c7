import Foundation
import Testing
import ObjectGraph
@testable import ObjectGraphCore

/// Seeded random work on a context — inserts, changes, deletes with cascades, saves, conflicts,
/// rollbacks, refreshes, merges of another context's saves, resets — checking after every step that
/// the change set and the objects' states agree (the invariants stated on `ChangeSet`). A failure
/// names the seed, the step and the operation; `OBJECTGRAPH_CHANGESET_SEED` replays one seed.
@Suite("The change set and the objects' states agree after any sequence of operations")
struct ChangeSetInvariantTests {
    static var seeds: [UInt64] {
        if let text = ProcessInfo.processInfo.environment["OBJECTGRAPH_CHANGESET_SEED"], let seed = UInt64(text) { return [seed] }
        return [1, 2, 3, 4, 5, 6]
    }

    static let policies: [MergePolicy] = [.error, .mergeByPropertyObjectTrump, .mergeByPropertyStoreTrump, .overwrite, .rollback]

    @Test(arguments: StoreKind.sqliteInMemoryAndPostgres)
    func randomWorkKeepsTheInvariants(_ kind: StoreKind) throws {
        for seed in Self.seeds {
            try run(kind, seed: seed, steps: 250)
        }
    }

    private func run(_ kind: StoreKind, seed: UInt64, steps: Int) throws {
        var random = SeededRandom(seed: seed)
        let stack = try TestStack(kind)
        let here = stack.context("here")
        here.shouldDeleteInaccessibleFaults = true
        here.mergePolicy = Self.policies[Int(seed) % Self.policies.count]
        // Half the seeds record undo, and undo and redo at random.
        if seed % 2 == 0 { here.undoManager = ObjectGraph.UndoManager() }
        let there = stack.context("there")
        there.mergePolicy = .mergeByPropertyObjectTrump
        let saved = SavedNotifications()
        let token = NotificationCenter.default.addObserver(
            forName: ManagedObjectContext.didSaveObjectsNotification, object: there, queue: nil) { saved.list.append($0) }
        defer { NotificationCenter.default.removeObserver(token) }

        var known: [ManagedObject] = []
        func usable(_ entity: String? = nil) -> [ManagedObject] {
            known.filter { $0.managedObjectContext === here && !$0.isDeleted && (entity == nil || $0.entity.name == entity) }
        }
        func pick(_ entity: String? = nil) -> ManagedObject? {
            let candidates = usable(entity)
            return candidates.isEmpty ? nil : candidates[Int(random.next() % UInt64(candidates.count))]
        }
        func savedIDs(_ entity: String) -> [ManagedObjectID] {
            known.filter { $0.entity.name == entity && !$0.objectID.isTemporaryID }.map(\.objectID)
        }

        for step in 0..<steps {
            let roll = random.next() % 100
            let operation: String
            switch roll {
            case 0..<14:
                operation = "insert note"
                let note = here.insert("Note", ["title": "n\(step)", "rank": Int64(step)])
                if random.next() % 2 == 0, let folder = pick("Folder") { note.setValue(folder, forKey: "folder") }
                known.append(note)
            case 14..<20:
                operation = "insert folder"
                known.append(here.insert("Folder", ["name": "f\(step)"]))
            case 20..<34:
                operation = "change rank"
                pick("Note")?.setValue(Int64(random.next() % 1000), forKey: "rank")
            case 34..<40:
                operation = "move note"
                if let note = pick("Note") { note.setValue(random.next() % 3 == 0 ? nil : pick("Folder"), forKey: "folder") }
            case 40..<48:
                operation = "delete"
                if let object = pick() { here.delete(object) }
            case 48..<53:
                operation = "process pending changes"
                here.processPendingChanges()
            case 53..<63:
                operation = "save"
                do { try here.save() } catch {
                    // A refused save keeps the changes; the invariants must hold all the same.
                    if random.next() % 2 == 0 { here.rollback() }
                }
            case 63..<67:
                operation = "rollback"
                here.rollback()
            case 67..<73:
                operation = "refresh"
                if let object = known.filter({ $0.managedObjectContext === here }).randomElement(using: &random) {
                    here.refresh(object, mergeChanges: random.next() % 2 == 0)
                }
            case 73..<75:
                operation = "refresh all"
                here.refreshAllObjects()
            case 75..<92:
                operation = "change and save elsewhere, merge"
                there.reset()
                let ids = savedIDs("Note") + savedIDs("Folder")
                guard !ids.isEmpty else { continue }
                let id = ids[Int(random.next() % UInt64(ids.count))]
                guard let object = try? there.existingObject(with: id) else { continue }
                if random.next() % 3 == 0 {
                    there.delete(object)
                } else if object.entity.name == "Note" {
                    object.setValue(Int64(random.next() % 1000), forKey: "rank")
                } else {
                    object.setValue("renamed \(step)", forKey: "name")
                }
                saved.list = []
                do { try there.save() } catch { there.rollback(); continue }
                for notification in saved.list { here.mergeChanges(fromContextDidSave: notification) }
            case 92..<98 where here.undoManager != nil:
                operation = random.next() % 3 == 0 ? "redo" : "undo"
                if operation == "undo" { here.undo() } else { here.redo() }
            case 92..<96:
                operation = "obtain permanent IDs"
                try? here.obtainPermanentIDs(for: Array(here.insertedObjects))
            case 96..<98:
                operation = "fetch notes"
                known += (try? here.all("Note")) ?? []
            default:
                operation = "reset"
                here.reset()
                known = []
            }
            let violations = here.changes.violations(among: here.liveObjects, in: here)
            #expect(violations.isEmpty, "\(kind) seed \(seed), step \(step) (\(operation)), policy \(here.mergePolicy.type): \(violations.joined(separator: "; "))")
            if !violations.isEmpty { return }
            // The public views say the same.
            #expect(here.insertedObjects.allSatisfy { $0.isInserted })
            #expect(here.deletedObjects.allSatisfy { $0.isDeleted })
            #expect(here.hasChanges == (here.insertedObjects.count + here.updatedObjects.count + here.deletedObjects.count > 0)
                || here.updatedObjects.allSatisfy { !$0.hasChanges })
            known.removeAll { $0.managedObjectContext == nil && !$0.isDeleted }
        }
        // Whatever happened, the context can still save its changes and read its store back.
        here.mergePolicy = .mergeByPropertyObjectTrump
        try here.save()
        #expect(!here.hasChanges, "\(kind) seed \(seed): changes left after the final save")
        #expect(here.changes.violations(among: here.liveObjects, in: here).isEmpty)
    }
}

/// The notifications a confinement context posted on the test's own thread.
private final class SavedNotifications: @unchecked Sendable {  // used on one thread only
    var list: [Notification] = []
}
