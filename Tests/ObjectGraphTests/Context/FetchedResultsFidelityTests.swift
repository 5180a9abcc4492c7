import Foundation
import Testing
import ObjectGraph
@testable import ObjectGraphCore

/// Records every per-object and per-section call (not the difference), a deleted or inserted
/// section with how many objects its info lists: "section delete archive 1 (0 objects, 0 listed)".
final class ChangeRecorder: FetchedResultsControllerDelegate {
    var lines: [String] = []
    /// Each object change's type and object ID (an object deleted elsewhere has lost its title).
    var changes: [(FetchedResultsChangeType, ManagedObjectID)] = []
    private func text(_ path: IndexPath?) -> String { path.map { "\($0.section).\($0.item)" } ?? "-" }

    func controllerWillChangeContent(_ controller: FetchedResultsController<ManagedObject>) { lines.append("will") }
    func controller(
        _ controller: FetchedResultsController<ManagedObject>, didChange anObject: ManagedObject,
        at indexPath: IndexPath?, for type: FetchedResultsChangeType, newIndexPath: IndexPath?
    ) {
        let title = anObject.value(forKey: "title") as? String ?? "?"
        lines.append("\(type) \(title) \(text(indexPath))>\(text(newIndexPath))")
        changes.append((type, anObject.objectID))
    }
    func controller(
        _ controller: FetchedResultsController<ManagedObject>, didChange sectionInfo: any FetchedResultsSectionInfo,
        atSectionIndex sectionIndex: Int, for type: FetchedResultsChangeType
    ) {
        lines.append("section \(type) \(sectionInfo.name) \(sectionIndex) (\(sectionInfo.numberOfObjects) objects, \(sectionInfo.objects?.count ?? -1) listed)")
    }
    func controllerDidChangeContent(_ controller: FetchedResultsController<ManagedObject>) { lines.append("did") }

    /// The object lines, without "will", "did" and the sections.
    var objectLines: [String] { lines.filter { $0 != "will" && $0 != "did" && !$0.hasPrefix("section") } }
}

/// Core Data's reporting rules that table and collection views depend on: updates and moves, saves
/// merged from other contexts, an empty list of sort descriptors, deleted sections.
extension FetchedResultsControllerTests {
    /// Notes a, b, c ranked 1, 2, 3 (saved), and a controller without sections sorted by rank.
    private func rankedNotes(_ kind: StoreKind, predicate: String? = nil, extra: [(String, Int)] = [])
        throws -> (TestStack, ManagedObjectContext, FetchedResultsController<ManagedObject>, ChangeRecorder)
    {
        let stack = try TestStack(kind)
        let context = stack.context("view")
        for (title, rank) in [("a", 1), ("b", 2), ("c", 3)] + extra { _ = context.insert("Note", ["title": title, "rank": Int64(rank)]) }
        try context.save()
        let request = FetchRequest<ManagedObject>(entityName: "Note")
        request.predicate = predicate.map { FetchPredicate(format: $0) }
        request.sortDescriptors = [FetchSortDescriptor(key: "rank")]
        let controller = FetchedResultsController(fetchRequest: request, managedObjectContext: context)
        let recorder = ChangeRecorder()
        controller.delegate = recorder
        try controller.performFetch()
        return (stack, context, controller, recorder)
    }

    private func flatTitles(_ controller: FetchedResultsController<ManagedObject>) -> [String] {
        (controller.fetchedObjects ?? []).map { $0.value(forKey: "title") as? String ?? "?" }
    }

    /// Replays object lines on a list of titles as a table view applies a batch: deletes and moves
    /// leave from their old index paths (bottom up), inserts and moves arrive at their new ones (top
    /// down), and an updated row is reloaded, showing the object's title at its new index path.
    private func replay(_ lines: [String], on before: [String]) -> [String] {
        var removals: [Int] = [], insertions: [(Int, String)] = [], reloads: [(Int, String)] = []
        for line in lines {
            let parts = line.split(separator: " ")
            let paths = parts[2].split(separator: ">").map { $0 == "-" ? nil : Int($0.split(separator: ".")[1]) }
            switch parts[0] {
            case "delete": removals.append(paths[0]!)
            case "insert": insertions.append((paths[1]!, String(parts[1])))
            case "move":
                removals.append(paths[0]!)
                insertions.append((paths[1]!, String(parts[1])))
            case "update": reloads.append((paths[1]!, String(parts[1])))
            default: break
            }
        }
        var titles = before
        for index in removals.sorted(by: >) { titles.remove(at: index) }
        for (index, title) in insertions.sorted(by: { $0.0 < $1.0 }) { titles.insert(title, at: index) }
        for (index, title) in reloads { titles[index] = title }
        return titles
    }

    /// Core Data: "A move is reported when the changed attribute on the object is one of the sort
    /// descriptors used in the fetch request"; "An update is reported when an object's state
    /// changes, but the changed attributes aren't part of the sort keys." A renamed object shifted
    /// by an insert and a delete is an update at its old index path (the row to reload), with its
    /// new one; not a move, which a table view would apply without reloading the row.
    @Test(arguments: StoreKind.everyStore)
    func anObjectWhoseSortKeysDidNotChangeIsUpdatedEvenWhenItShifts(_ kind: StoreKind) throws {
        let (_, context, controller, recorder) = try rankedNotes(kind)
        let differences = DifferenceRecorder()
        let other = FetchedResultsController(fetchRequest: controller.fetchRequest, managedObjectContext: context)
        other.delegate = differences
        try other.performFetch()
        let before = try #require(controller.fetchedObjects)

        // A child renames b, deletes c and inserts e with the lowest rank, and saves into the controller's context.
        let child = ManagedObjectContext(concurrencyType: .confinement)
        child.parent = context
        try child.existingObject(with: before[1].objectID).setValue("b2", forKey: "title")
        child.delete(try child.existingObject(with: before[2].objectID))
        _ = child.insert("Note", ["title": "e", "rank": Int64(0)])
        try child.save()
        context.processPendingChanges()

        #expect(flatTitles(controller) == ["e", "a", "b2"])
        #expect(recorder.lines.first == "will" && recorder.lines.last == "did")
        #expect(Set(recorder.objectLines) == ["insert e ->0.0", "update b2 0.1>0.2", "delete c 0.2>-"])
        #expect(recorder.objectLines.count == 3)
        #expect(replay(recorder.objectLines, on: ["a", "b", "c"]) == ["e", "a", "b2"])
        // The difference leads from the old IDs to the new ones; the rename is no change of the list.
        let difference = try #require(differences.differences.last)
        #expect(before.map(\.objectID).applying(difference) == controller.fetchedObjects?.map(\.objectID))
        let renamed = before[1].objectID
        #expect(!difference.contains { change in
            switch change {
            case .insert(_, let id, _), .remove(_, let id, _): id == renamed
            }
        })
        #expect(other.fetchedObjects?.map(\.objectID) == controller.fetchedObjects?.map(\.objectID))
    }

    /// The other half of the rule: a change of a sort key that makes the object take another place
    /// is a move, even when inserts and deletes bring it back to the same index path; one that
    /// keeps it between the same neighbours is an update.
    @Test(arguments: StoreKind.everyStore)
    func aChangedSortKeyIsAMoveOnlyWhenTheObjectTakesAnotherPlace(_ kind: StoreKind) throws {
        let (_, context, controller, recorder) = try rankedNotes(kind)
        let (a, b) = try #require(controller.fetchedObjects.map { ($0[0], $0[1]) })
        // b goes after c, a is deleted: b is at index 1 before and after, but c is now before it.
        b.setValue(Int64(10), forKey: "rank")
        context.delete(a)
        context.processPendingChanges()
        #expect(flatTitles(controller) == ["c", "b"])
        #expect(Set(recorder.objectLines) == ["delete a 0.0>-", "move b 0.1>0.1"])
        #expect(replay(recorder.objectLines, on: ["a", "b", "c"]) == ["c", "b"])

        // c's rank changes but it stays before b: an update.
        recorder.lines = []
        let c = try #require(controller.fetchedObjects?.first)
        c.setValue(Int64(4), forKey: "rank")
        context.processPendingChanges()
        #expect(recorder.lines == ["will", "update c 0.0>0.0", "did"])

        // Equal ranks: a rename keeps the object among its equals.
        recorder.lines = []
        b.setValue(Int64(4), forKey: "rank")
        context.processPendingChanges()
        #expect(flatTitles(controller) == ["c", "b"])
        recorder.lines = []
        c.setValue("c2", forKey: "title")
        context.processPendingChanges()
        #expect(recorder.lines == ["will", "update c2 0.0>0.0", "did"])
        #expect(flatTitles(controller) == ["c2", "b"])
    }

    /// With sections, the same rule: the section changes come first (Core Data: "The fetched
    /// results controller reports changes to its section before changes to the fetched objects
    /// themselves"), and a renamed object shifted within its section is an update.
    @Test(arguments: StoreKind.everyStore)
    func aShiftedObjectIsUpdatedInASectionedController(_ kind: StoreKind) throws {
        let (_, context, controller, _, objects) = try setUp(kind)
        let recorder = ChangeRecorder()
        controller.delegate = recorder
        // Inbox: a, b; archive: c. A new first note in Inbox, b renamed, c leaves (and its section).
        _ = context.insert("Note", ["title": "e", "rank": Int64(0), "folder": objects["Inbox"]!])
        objects["b"]!.setValue("b2", forKey: "title")
        context.delete(objects["c"]!)
        context.processPendingChanges()
        #expect(titles(controller) == [["e", "a", "b2"]])
        let sectionLines = recorder.lines.filter { $0.hasPrefix("section") }
        #expect(sectionLines == ["section delete archive 1 (0 objects, 0 listed)"])
        let firstObjectLine = try #require(recorder.lines.firstIndex { recorder.objectLines.contains($0) })
        #expect(recorder.lines.firstIndex(of: sectionLines[0])! < firstObjectLine)
        #expect(Set(recorder.objectLines) == ["insert e ->0.0", "update b2 0.1>0.2", "delete c 1.0>-"])
    }

    /// Core Data: in `controller(_:didChange:atSectionIndex:for: .delete)`, the section's info has
    /// no objects left, with or without a section key path.
    @Test(arguments: StoreKind.everyStore)
    func aDeletedSectionsInfoHasNoObjects(_ kind: StoreKind) throws {
        let (_, context, controller, _, objects) = try setUp(kind)
        let recorder = ChangeRecorder()
        controller.delegate = recorder
        objects["c"]!.setValue(Int64(500), forKey: "rank")   // leaves the predicate, and archive empties
        context.processPendingChanges()
        #expect(recorder.lines.contains("section delete archive 1 (0 objects, 0 listed)"))
        #expect(recorder.lines.contains("delete c 1.0>-"))

        // A controller without sections whose last object goes.
        let (_, flatContext, flat, flatRecorder) = try rankedNotes(kind)
        for object in flat.fetchedObjects ?? [] { flatContext.delete(object) }
        flatContext.processPendingChanges()
        #expect(flat.sections?.isEmpty == true)
        #expect(flatRecorder.lines.contains("section delete  0 (0 objects, 0 listed)"))
        // The section that appears again lists its objects.
        flatRecorder.lines = []
        _ = flatContext.insert("Note", ["title": "n", "rank": Int64(1)])
        flatContext.processPendingChanges()
        #expect(flatRecorder.lines.contains("section insert  0 (1 objects, 1 listed)"))
    }

    /// A request whose list of sort descriptors is empty fetches, as in Core Data: the results are
    /// in object ID order (saved objects in the order they were first saved, then unsaved ones in
    /// the order they were inserted). A request without sort descriptors (nil) is still refused.
    @Test(arguments: StoreKind.everyStore)
    func anEmptyListOfSortDescriptorsFetchesInObjectIDOrder(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        let context = stack.context("view")
        for (title, rank) in [("c", 1), ("a", 3), ("b", 2)] {
            _ = context.insert("Note", ["title": title, "rank": Int64(rank)])
            try context.save()
        }
        let request = FetchRequest<ManagedObject>(entityName: "Note")
        request.predicate = FetchPredicate(format: "rank < 10")
        request.sortDescriptors = []
        let controller = FetchedResultsController(fetchRequest: request, managedObjectContext: context)
        let recorder = ChangeRecorder()
        controller.delegate = recorder
        try controller.performFetch()
        #expect(flatTitles(controller) == ["c", "a", "b"])
        let ids = try #require(controller.fetchedObjects?.map(\.objectID))
        #expect(ids == ids.sorted())

        // A new note goes after the saved ones; a changed one keeps its place.
        _ = context.insert("Note", ["title": "d", "rank": Int64(0)])
        controller.fetchedObjects?[1].setValue("a2", forKey: "title")
        context.processPendingChanges()
        #expect(flatTitles(controller) == ["c", "a2", "b", "d"])
        #expect(Set(recorder.objectLines) == ["insert d ->0.3", "update a2 0.1>0.1"])
        // A note that stops matching leaves; saving keeps the order.
        controller.fetchedObjects?[0].setValue(Int64(50), forKey: "rank")
        try context.save()
        #expect(flatTitles(controller) == ["a2", "b", "d"])
        let again = FetchedResultsController(fetchRequest: request, managedObjectContext: stack.context("fresh"))
        try again.performFetch()
        #expect(flatTitles(again) == ["a2", "b", "d"])

        let unsorted = FetchedResultsController(fetchRequest: FetchRequest<ManagedObject>(entityName: "Note"), managedObjectContext: context)
        #expect(throws: ObjectGraphError.invalidFetchRequest) { try unsorted.performFetch() }
    }

    /// A merged save that makes an object the context never loaded match the predicate inserts it;
    /// an object it makes stop matching is deleted.
    @Test(arguments: StoreKind.everyStore)
    func aMergedSaveThatMakesAnUnloadedObjectMatchInsertsIt(_ kind: StoreKind) throws {
        let (stack, context, controller, recorder) = try rankedNotes(kind, predicate: "rank < 10", extra: [("x", 50), ("y", 60)])
        #expect(flatTitles(controller) == ["a", "b", "c"])
        // x and y were never loaded by the controller's context.
        let ids = try stack.context("ids").all("Note", sortedBy: "rank").map(\.objectID)
        #expect(context.registeredObject(for: ids[3]) == nil)
        // Another context's controller whose results are faults (the merge does not read them).
        let unloaded = stack.context("unloaded")
        let request = FetchRequest<ManagedObject>(entityName: "Note")
        request.predicate = FetchPredicate(format: "rank < 10")
        request.sortDescriptors = [FetchSortDescriptor(key: "rank")]
        let fresh = FetchedResultsController(fetchRequest: request, managedObjectContext: unloaded)
        let freshRecorder = ChangeRecorder()
        fresh.delegate = freshRecorder
        try fresh.performFetch()
        for object in fresh.fetchedObjects ?? [] { unloaded.refresh(object, mergeChanges: false) }
        #expect(fresh.fetchedObjects?.count == 3)

        let background = stack.context("background")
        try background.existingObject(with: ids[3]).setValue(Int64(5), forKey: "rank")    // x enters, after c
        try background.existingObject(with: ids[1]).setValue(Int64(70), forKey: "rank")   // b leaves
        let saved = SavedNotification()
        let token = NotificationCenter.default.addObserver(forName: ManagedObjectContext.didSaveObjectsNotification, object: background, queue: nil) { saved.note = $0 }
        try background.save()
        NotificationCenter.default.removeObserver(token)
        let note = try #require(saved.note)
        context.mergeChanges(fromContextDidSave: note)

        #expect(flatTitles(controller) == ["a", "c", "x"])
        #expect(recorder.objectLines.contains("delete b 0.1>-"))
        #expect(recorder.objectLines.contains("insert x ->0.2"))
        #expect(recorder.objectLines.count == 2)
        // One merge, one batch: what the merge reported and what its IDs added reach the delegate together.
        #expect(recorder.lines.filter { $0 == "will" }.count == 1)

        // Into the context whose results are faults: b leaves, x enters, in one batch.
        unloaded.mergeChanges(fromContextDidSave: note)
        #expect(flatTitles(fresh) == ["a", "c", "x"])
        #expect(Set(freshRecorder.objectLines) == ["delete b 0.1>-", "insert x ->0.2"])
        #expect(freshRecorder.lines.filter { $0 == "will" }.count == 1)
    }

    /// The same through `automaticallyMergesChangesFromParent`: the saved note enters the results
    /// of a context that merges by itself.
    @Test(arguments: StoreKind.everyStore)
    func anAutomaticallyMergedSaveThatMakesAnUnloadedObjectMatchInsertsIt(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        let seed = stack.context("seed")
        for (title, rank) in [("a", 1), ("x", 50)] { _ = seed.insert("Note", ["title": title, "rank": Int64(rank)]) }
        try seed.save()
        let x = try #require(try seed.all("Note", sortedBy: "rank").last?.objectID)
        let main = stack.privateContext("main")
        main.automaticallyMergesChangesFromParent = true
        let request = FetchRequest<ManagedObject>(entityName: "Note")
        request.predicate = FetchPredicate(format: "rank < 10")
        request.sortDescriptors = [FetchSortDescriptor(key: "rank")]
        let recorder = ChangeRecorder()
        let controller = try main.performAndWait {
            let controller = FetchedResultsController(fetchRequest: request, managedObjectContext: main)
            controller.delegate = recorder
            try controller.performFetch()
            return controller
        }
        #expect(main.performAndWait { flatTitles(controller) } == ["a"])

        let background = stack.context("background")
        try background.existingObject(with: x).setValue(Int64(0), forKey: "rank")
        try background.save()
        #expect(eventually { main.performAndWait { flatTitles(controller) == ["x", "a"] } })
        main.performAndWait {
            #expect(recorder.objectLines == ["insert x ->0.0"])
        }
    }

    /// A merged delete of an object the results hold as a fault leaves the results once, whether
    /// the merge reports it in `objectsDidChangeNotification` or only lists it in
    /// `didMergeChangesObjectIDsNotification` (Core Data reports merged deletes of objects in use only).
    @Test(arguments: StoreKind.everyStore)
    func aMergedDeleteOfAFaultInTheResultsIsOneDelete(_ kind: StoreKind) throws {
        let (stack, context, controller, recorder) = try rankedNotes(kind)
        let objects = try #require(controller.fetchedObjects)
        for object in objects { context.refresh(object, mergeChanges: false) }
        #expect(objects.allSatisfy { $0.isFault })

        // The merge reports what it deletes.
        let background = stack.context("background")
        background.delete(try background.existingObject(with: objects[1].objectID))
        let saved = SavedNotification()
        let token = NotificationCenter.default.addObserver(forName: ManagedObjectContext.didSaveObjectsNotification, object: background, queue: nil) { saved.note = $0 }
        try background.save()
        context.mergeChanges(fromContextDidSave: try #require(saved.note))
        #expect(flatTitles(controller) == ["a", "c"])
        #expect(recorder.changes.map(\.0) == [.delete] && recorder.changes.map(\.1) == [objects[1].objectID])
        #expect(recorder.objectLines.map { $0.hasSuffix(" 0.1>-") } == [true])

        // A merge that only lists the deleted ID: the controller drops the object, then hears
        // nothing more when the context reports it.
        recorder.lines = []
        recorder.changes = []
        background.delete(try background.existingObject(with: objects[2].objectID))
        try background.save()
        NotificationCenter.default.removeObserver(token)
        NotificationCenter.default.post(name: ManagedObjectContext.didMergeChangesObjectIDsNotification, object: context, userInfo: [
            ManagedObjectContext.NotificationKey.deletedObjectIDs.rawValue: Set([objects[2].objectID]),
        ])
        #expect(flatTitles(controller) == ["a"])
        #expect(recorder.changes.map(\.0) == [.delete] && recorder.changes.map(\.1) == [objects[2].objectID])
        #expect(recorder.objectLines.map { $0.hasSuffix(" 0.1>-") } == [true])
        context.mergeChanges(fromContextDidSave: try #require(saved.note))
        #expect(flatTitles(controller) == ["a"])
        #expect(recorder.changes.count == 1)
    }
}
