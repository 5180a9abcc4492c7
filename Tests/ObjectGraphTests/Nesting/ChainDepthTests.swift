import Foundation
import Testing
import ObjectGraph
@testable import ObjectGraphCore

/// The deepest chain ObjectGraph allows works from its deepest context, even on a thread with a
/// small stack: every read and save walks the chain, one level at a time.
@Suite("Chains of contexts at the depth limit")
struct ChainDepthTests {
    /// Runs a body on a thread with a 512 KiB stack (a dispatch worker's size) and waits for it.
    static func onSmallStack(_ body: @escaping @Sendable () -> Void) {
        ThreadOfItsOwn.run(stackSize: 512 * 1024, body)
    }

    @Test(arguments: StoreKind.sqliteInMemoryAndPostgres)
    func theDeepestContextOfAChainAtTheLimitFetchesFaultsAndSavesOnASmallStack(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        let seed = stack.context("seed")
        let folder = seed.insert("Folder", ["name": "inbox"])
        for i in 0..<5 { seed.insert("Note", ["title": "n\(i)", "rank": Int64(i)]).setValue(folder, forKey: "folder") }
        try seed.save()
        let folderID = folder.objectID
        // One fetch first, on this thread: the first read through an SQLite store's reader pool makes the
        // Swift runtime build GRDB's key path metadata (a one-time, deeply recursive job), which does not fit
        // at the bottom of the chain on a 512 KiB stack. Run alone, the test stopped there (signal 11).
        #expect(try stack.context("warm-up").all("Note", sortedBy: "rank").count == 5)
        let result = Recorder<String>()
        Self.onSmallStack {
            // Confinement contexts belong to the thread that creates them: make the chain here.
            let root = ManagedObjectContext(concurrencyType: .confinement)
            root.persistentStoreCoordinator = stack.coordinator
            var deepest = root
            for level in 1..<ManagedObjectContext.maximumNestingDepth {
                let child = ManagedObjectContext(concurrencyType: .confinement)
                child.name = "level \(level)"
                child.parent = deepest
                deepest = child
            }
            do {
                let request = FetchRequest<ManagedObject>(entityName: "Note")
                request.sortDescriptors = [FetchSortDescriptor(key: "rank")]
                let notes = try deepest.fetch(request)
                result.append("fetched \(notes.count)")
                let inbox = try deepest.existingObject(with: folderID)
                result.append("folder notes \((inbox.value(forKey: "notes") as? Set<ManagedObject>)?.count ?? -1)")
                notes[0].setValue("changed", forKey: "title")
                deepest.insert("Note", ["title": "new", "rank": Int64(9)]).setValue(inbox, forKey: "folder")
                // Save up the whole chain, level by level.
                var context: ManagedObjectContext? = deepest
                while let current = context {
                    try current.save()
                    context = current.parent
                }
                result.append("saved")
            } catch {
                result.append("error \(error)")
            }
        }
        #expect(result.values == ["fetched 5", "folder notes 5", "saved"])
        let check = stack.context("check")
        #expect(try check.all("Note", sortedBy: "rank").map { $0.value(forKey: "title") as! String } == ["changed", "n1", "n2", "n3", "n4", "new"])
    }
}
