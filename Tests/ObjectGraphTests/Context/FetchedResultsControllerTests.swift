import Foundation
import Testing
import ObjectGraph
@testable import ObjectGraphCore

/// Records what a controller tells its delegate, as readable lines.
final class ResultsRecorder: FetchedResultsControllerDelegate {
    var lines: [String] = []
    var differences: [CollectionDifference<ManagedObjectID>] = []

    private func text(_ path: IndexPath?) -> String { path.map { "\($0.section).\($0.item)" } ?? "-" }
    private func title(_ object: ManagedObject) -> String { object.value(forKey: "title") as? String ?? "?" }

    func controllerWillChangeContent(_ controller: FetchedResultsController<ManagedObject>) { lines.append("will") }
    func controller(
        _ controller: FetchedResultsController<ManagedObject>, didChange anObject: ManagedObject,
        at indexPath: IndexPath?, for type: FetchedResultsChangeType, newIndexPath: IndexPath?
    ) {
        lines.append("\(type) \(title(anObject)) \(text(indexPath))>\(text(newIndexPath))")
    }
    func controller(
        _ controller: FetchedResultsController<ManagedObject>, didChange sectionInfo: any FetchedResultsSectionInfo,
        atSectionIndex sectionIndex: Int, for type: FetchedResultsChangeType
    ) {
        lines.append("section \(type) \(sectionInfo.name) \(sectionIndex)")
    }
    func controllerDidChangeContent(_ controller: FetchedResultsController<ManagedObject>) { lines.append("did") }
    func controller(_ controller: FetchedResultsController<ManagedObject>, didChangeContentWith difference: CollectionDifference<ManagedObjectID>) {
        differences.append(difference)
    }
}

/// Records the per-object calls only (no difference method).
final class ResultsRecorderWithoutDifference: FetchedResultsControllerDelegate {
    var lines: [String] = []
    func controllerWillChangeContent(_ controller: FetchedResultsController<ManagedObject>) { lines.append("will") }
    func controller(
        _ controller: FetchedResultsController<ManagedObject>, didChange anObject: ManagedObject,
        at indexPath: IndexPath?, for type: FetchedResultsChangeType, newIndexPath: IndexPath?
    ) {
        let title = anObject.value(forKey: "title") as? String ?? "?"
        let text = { (path: IndexPath?) in path.map { "\($0.section).\($0.item)" } ?? "-" }
        lines.append("\(type) \(title) \(text(indexPath))>\(text(newIndexPath))")
    }
    func controllerDidChangeContent(_ controller: FetchedResultsController<ManagedObject>) { lines.append("did") }
}

/// A delegate that implements only the difference: Core Data then sends nothing else.
final class DifferenceRecorder: FetchedResultsControllerDelegate {
    var differences: [CollectionDifference<ManagedObjectID>] = []
    var objectsSeen: [[ManagedObjectID]] = []
    func controller(_ controller: FetchedResultsController<ManagedObject>, didChangeContentWith difference: CollectionDifference<ManagedObjectID>) {
        differences.append(difference)
        objectsSeen.append(controller.fetchedObjects?.map(\.objectID) ?? [])
    }
}

@Suite("Fetched results follow the context: sections, inserts, deletes, moves, updates, snapshots")
struct FetchedResultsControllerTests {
    /// Notes in two folders, sorted by folder name then rank.
    func setUp(_ kind: StoreKind) throws -> (TestStack, ManagedObjectContext, FetchedResultsController<ManagedObject>, ResultsRecorder, [String: ManagedObject]) {
        let stack = try TestStack(kind)
        let context = stack.context("view")
        let inbox = context.insert("Folder", ["name": "Inbox"])
        let archive = context.insert("Folder", ["name": "archive"])
        var objects = ["Inbox": inbox, "archive": archive]
        for (title, rank, folder) in [("a", 1, inbox), ("b", 2, inbox), ("c", 1, archive)] {
            objects[title] = context.insert("Note", ["title": title, "rank": Int64(rank), "folder": folder])
        }
        try context.save()
        let request = FetchRequest<ManagedObject>(entityName: "Note")
        request.predicate = FetchPredicate(format: "rank < 100")
        request.sortDescriptors = [FetchSortDescriptor(key: "folder.name"), FetchSortDescriptor(key: "rank")]
        let controller = FetchedResultsController(fetchRequest: request, managedObjectContext: context, sectionNameKeyPath: "folder.name")
        let recorder = ResultsRecorder()
        controller.delegate = recorder
        try controller.performFetch()
        return (stack, context, controller, recorder, objects)
    }

    func titles(_ controller: FetchedResultsController<ManagedObject>) -> [[String]] {
        (controller.sections ?? []).map { ($0.objects ?? []).map { $0.value(forKey: "title") as? String ?? "?" } }
    }

    @Test func aRequestWithoutSortDescriptorsIsRefused() throws {
        let stack = try TestStack(.inMemory)
        let controller = FetchedResultsController(fetchRequest: FetchRequest<ManagedObject>(entityName: "Note"), managedObjectContext: stack.context())
        #expect(controller.fetchedObjects == nil && controller.sections == nil)
        #expect(throws: ObjectGraphError.invalidFetchRequest) { try controller.performFetch() }
    }

    @Test(arguments: StoreKind.sqliteInMemoryAndPostgres)
    func theResultsAreSectionedAndAddressable(_ kind: StoreKind) throws {
        let (_, _, controller, _, objects) = try setUp(kind)
        #expect(controller.sections?.map(\.name) == ["Inbox", "archive"])
        #expect(titles(controller) == [["a", "b"], ["c"]])
        #expect(controller.sectionIndexTitles == ["I", "A"])
        #expect(controller.section(forSectionIndexTitle: "A", at: 0) == 1)
        #expect(controller.object(at: IndexPath(item: 1, section: 0)) === objects["b"])
        #expect(controller.indexPath(forObject: objects["c"]!) == IndexPath(item: 0, section: 1))
        #expect(controller.fetchedObjects?.count == 3)
    }

    @Test(arguments: StoreKind.sqliteInMemoryAndPostgres)
    func insertsDeletesMovesAndUpdatesReachTheDelegate(_ kind: StoreKind) throws {
        let (_, context, controller, recorder, objects) = try setUp(kind)
        // An insert into the first section, a rank change that moves b before a, a title change in
        // place, and a note that stops matching the predicate.
        let d = context.insert("Note", ["title": "d", "rank": Int64(3), "folder": objects["Inbox"]!])
        objects["b"]!.setValue(Int64(0), forKey: "rank")
        objects["c"]!.setValue(Int64(500), forKey: "rank")
        context.processPendingChanges()
        #expect(titles(controller) == [["b", "a", "d"]])
        #expect(recorder.lines.first == "will" && recorder.lines.last == "did")
        #expect(Set(recorder.lines) == [
            "will", "section delete archive 1", "move b 0.1>0.0", "delete c 1.0>-", "insert d ->0.2", "did",
        ])
        #expect(controller.indexPath(forObject: d) == IndexPath(item: 2, section: 0))

        recorder.lines = []
        objects["a"]!.setValue("a2", forKey: "title")
        context.processPendingChanges()
        #expect(recorder.lines == ["will", "update a2 0.1>0.1", "did"])

        recorder.lines = []
        context.delete(objects["Inbox"]!)   // cascades to its notes
        context.processPendingChanges()
        #expect(controller.sections?.isEmpty == true)
        #expect(recorder.lines.contains("section delete Inbox 0"))
        #expect(recorder.lines.filter { $0.hasPrefix("delete") }.count == 3)
    }

    @Test(arguments: StoreKind.sqliteInMemoryAndPostgres)
    func aChangeToARelatedObjectTheSortAndSectionsReadIsSeen(_ kind: StoreKind) throws {
        let (_, context, controller, recorder, objects) = try setUp(kind)
        // Renaming the folder moves its notes to a new last section; Core Data would miss it.
        objects["Inbox"]!.setValue("zeta", forKey: "name")
        context.processPendingChanges()
        #expect(controller.sections?.map(\.name) == ["archive", "zeta"])
        #expect(titles(controller) == [["c"], ["a", "b"]])
        #expect(Set(recorder.lines) == [
            "will", "section delete Inbox 0", "section insert zeta 1", "move a 0.0>1.0", "move b 0.1>1.1", "did",
        ])
        // A change to an object the results do not read reports nothing.
        recorder.lines = []
        _ = context.insert("Tag", ["name": "t"])
        context.processPendingChanges()
        #expect(recorder.lines.isEmpty)
    }

    @Test func changesMergedFromAnotherContextReachTheController() throws {
        let (stack, context, controller, recorder, objects) = try setUp(.sqlite)
        let other = stack.context("other")
        let folder = try other.existingObject(with: objects["archive"]!.objectID)
        _ = other.insert("Note", ["title": "e", "rank": Int64(0), "folder": folder])
        let saved = SavedNotification()
        let token = NotificationCenter.default.addObserver(forName: ManagedObjectContext.didSaveObjectsNotification, object: other, queue: nil) { saved.note = $0 }
        try other.save()
        NotificationCenter.default.removeObserver(token)
        context.mergeChanges(fromContextDidSave: try #require(saved.note))
        #expect(titles(controller) == [["a", "b"], ["e", "c"]])
        #expect(recorder.lines.contains("insert e ->1.0"))
    }

    @Test func theDifferenceAndTheSnapshotsReplayTheResults() async throws {
        let (_, context, controller, recorder, objects) = try setUp(.inMemory)
        var iterator = controller.snapshots.makeAsyncIterator()
        let first = try #require(await iterator.next())
        #expect(first.objectIDs == controller.fetchedObjects?.map(\.objectID))
        #expect(first.sections.map(\.name) == ["Inbox", "archive"])
        let before = first.objectIDs
        _ = context.insert("Note", ["title": "f", "rank": Int64(5), "folder": objects["archive"]!])
        context.delete(objects["a"]!)
        context.processPendingChanges()
        let after = try #require(controller.fetchedObjects?.map(\.objectID))
        // A controller with sections never sends the difference, even to a delegate that has it.
        #expect(recorder.differences.isEmpty)
        #expect(recorder.lines.first == "will" && recorder.lines.last == "did")
        let second = try #require(await iterator.next())
        #expect(second.objectIDs == after)
        #expect(before.applying(second.difference) == after)
        // A save gives the new note its permanent ID: the snapshot follows.
        try context.save()
        let third = try #require(await iterator.next())
        #expect(third.objectIDs.allSatisfy { !$0.isTemporaryID })
        #expect(after.applying(third.difference) == third.objectIDs)
    }

    /// Core Data: a delegate of a controller without sections that implements the difference gets
    /// only the difference, with the controller already showing the new results; a delegate that
    /// does not implement it gets the per-object calls.
    @Test(arguments: StoreKind.everyStore)
    func aDelegateThatTakesTheDifferenceGetsOnlyTheDifference(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        let context = stack.context("view")
        for (title, rank) in [("a", 1), ("b", 2), ("c", 3)] { _ = context.insert("Note", ["title": title, "rank": Int64(rank)]) }
        try context.save()
        let request = FetchRequest<ManagedObject>(entityName: "Note")
        request.sortDescriptors = [FetchSortDescriptor(key: "rank")]
        let controller = FetchedResultsController(fetchRequest: request, managedObjectContext: context)
        let differences = DifferenceRecorder()
        controller.delegate = differences
        try controller.performFetch()
        let before = try #require(controller.fetchedObjects?.map(\.objectID))
        let b = try #require(controller.fetchedObjects?[1])
        b.setValue(Int64(9), forKey: "rank")
        _ = context.insert("Note", ["title": "d", "rank": Int64(0)])
        context.processPendingChanges()
        let after = try #require(controller.fetchedObjects?.map(\.objectID))
        #expect(differences.differences.count == 1)
        #expect(before.applying(try #require(differences.differences.first)) == after)
        #expect(differences.objectsSeen == [after])

        // The same changes to a delegate without the difference method: the per-object calls.
        let lines = ResultsRecorderWithoutDifference()
        controller.delegate = lines
        b.setValue(Int64(-1), forKey: "rank")
        context.processPendingChanges()
        #expect(lines.lines == ["will", "move b 0.3>0.0", "did"])
        #expect(differences.differences.count == 1)

        // A new delegate is asked again: the difference reaches it, and the old one hears nothing.
        controller.delegate = differences
        b.setValue(Int64(20), forKey: "rank")
        context.processPendingChanges()
        #expect(differences.differences.count == 2)
        #expect(lines.lines.count == 3)
    }

    @Test func aContextsResultsStreamFollowsItsChanges() async throws {
        let stack = try TestStack(.inMemory, model: ManagedObjectModel(types: [Folder.self, Note.self, Tag.self]))
        let context = stack.privateContext("results")
        let stream = try await context.perform {
            let note = Note(context: context)
            note.title = "x"
            note.slug = "x"
            try context.save()
            return context.results(for: FetchDescriptor<Note>(sortBy: [SortDescriptor(\.rank)]))
        }
        var iterator = stream.makeAsyncIterator()
        let first = try #require(await iterator.next())
        #expect(first.count == 1)
        let inserted = await context.perform {
            let note = Note(context: context)
            note.title = "y"
            note.rank = -1
            note.slug = "y"
            context.processPendingChanges()
            return note.objectID
        }
        let second = try #require(await iterator.next())
        #expect(second.count == 2)
        #expect(second.first == inserted, "sorted by rank")
    }

    /// Random batches of inserts, deletes and rank changes (with many equal ranks) on a controller
    /// without sections: the per-object calls, the difference and the snapshots each lead from the
    /// old results to the new ones, and the new ones are sorted.
    @Test(arguments: StoreKind.sqliteInMemoryAndPostgres)
    func randomBatchesOfChangesReplayThroughEveryForm(_ kind: StoreKind) async throws {
        let stack = try TestStack(kind)
        let context = stack.context("view")
        var random = SeededRandom(seed: 17)
        var counter = 0
        func insertNote() {
            counter += 1
            _ = context.insert("Note", ["title": "n\(counter)", "rank": Int64.random(in: 0..<20, using: &random)])
        }
        for _ in 0..<60 { insertNote() }
        try context.save()
        let request = FetchRequest<ManagedObject>(entityName: "Note")
        request.sortDescriptors = [FetchSortDescriptor(key: "rank")]
        let controller = FetchedResultsController(fetchRequest: request, managedObjectContext: context)
        let lines = ResultsRecorderWithoutDifference()
        controller.delegate = lines
        try controller.performFetch()
        let differences = DifferenceRecorder()
        let other = FetchedResultsController(fetchRequest: request, managedObjectContext: context)
        other.delegate = differences
        try other.performFetch()
        var snapshots = controller.snapshots.makeAsyncIterator()
        var previousSnapshot = try #require(await snapshots.next()).objectIDs

        for round in 0..<25 {
            let before = try #require(controller.fetchedObjects)
            var objects = before
            for _ in 0..<Int.random(in: 1...8, using: &random) {
                switch Int.random(in: 0..<3, using: &random) {
                case 0: insertNote()
                case 1 where !objects.isEmpty:
                    context.delete(objects.remove(at: Int.random(in: 0..<objects.count, using: &random)))
                default:
                    guard let object = objects.randomElement(using: &random) else { continue }
                    object.setValue(Int64.random(in: 0..<20, using: &random), forKey: "rank")
                }
            }
            lines.lines = []
            let differencesBefore = differences.differences.count
            context.processPendingChanges()
            let after = try #require(controller.fetchedObjects)
            let ranks = after.map { $0.value(forKey: "rank") as! Int64 }
            #expect(ranks == ranks.sorted(), "round \(round): sorted")
            #expect(other.fetchedObjects?.map(\.objectID) == after.map(\.objectID), "round \(round): both controllers agree")

            // The per-object calls, replayed as a table view does: removals from the bottom up,
            // then insertions from the top down.
            var removals: [Int] = [], insertions: [(Int, String)] = []
            for line in lines.lines where line != "will" && line != "did" {
                let parts = line.split(separator: " ")
                let paths = parts[2].split(separator: ">").map { $0 == "-" ? nil : Int($0.split(separator: ".")[1]) }
                switch parts[0] {
                case "delete": removals.append(paths[0]!)
                case "insert": insertions.append((paths[1]!, String(parts[1])))
                case "move":
                    removals.append(paths[0]!)
                    insertions.append((paths[1]!, String(parts[1])))
                default: break
                }
            }
            var replayed = before.map { $0.value(forKey: "title") as! String }
            for index in removals.sorted(by: >) { replayed.remove(at: index) }
            for (index, title) in insertions.sorted(by: { $0.0 < $1.0 }) { replayed.insert(title, at: index) }
            #expect(replayed == after.map { $0.value(forKey: "title") as! String }, "round \(round): the per-object calls replay")

            if differences.differences.count > differencesBefore, let difference = differences.differences.last {
                #expect(before.map(\.objectID).applying(difference) == after.map(\.objectID), "round \(round): the difference replays")
            }
            // A stream hears of new results only (not of an update in place).
            guard after.map(\.objectID) != previousSnapshot else { continue }
            let snapshot = try #require(await snapshots.next())
            #expect(previousSnapshot.applying(snapshot.difference) == snapshot.objectIDs, "round \(round): the snapshot replays")
            #expect(snapshot.objectIDs == after.map(\.objectID))
            previousSnapshot = snapshot.objectIDs
        }
    }
}

/// A notification posted on the test's own thread by a confinement context.
final class SavedNotification: @unchecked Sendable {  // used on one thread only
    var note: Notification?
}
