import Foundation
import Testing
import ObjectGraph
@testable import ObjectGraphCore

@Suite("Nesting: relationships through pushes, and a seeded stress of the three-level stack")
struct NestingStressTests {
    @Test(arguments: StoreKind.sqliteInMemoryAndPostgres)
    func manyToManyChangesTravelThroughPushes(_ kind: StoreKind) throws {
        let chain = try ContextChain(kind)
        let (_, notes) = try chain.seed()
        let middle = chain.child(of: chain.root, "middle")
        let worker = chain.child(of: middle, "worker")
        let tagID = try worker.performAndWait {
            let tag = worker.insert("Tag", ["name": "urgent"])
            tag.setValue(Set([worker.object(with: notes[0]), worker.object(with: notes[1])]), forKey: "notes")
            try worker.save()
            return tag.objectID
        }
        try middle.performAndWait {
            let tagged = middle.object(with: notes[0]).value(forKey: "tags") as! Set<ManagedObject>
            #expect(tagged.map(\.objectID) == [tagID])
            // The parent's change to the same relationship goes on top.
            let tag = middle.object(with: tagID)
            let current = tag.value(forKey: "notes") as! Set<ManagedObject>
            tag.setValue(current.filter { $0.objectID != notes[1] }.union([middle.object(with: notes[2])]), forKey: "notes")
            try middle.saveChainNow()
        }
        let reader = chain.stack.context()
        let tag = try #require(try reader.all("Tag").first)
        let titles = Set((tag.value(forKey: "notes") as! Set<ManagedObject>).map { $0.value(forKey: "title") as! String })
        #expect(titles == ["n1", "n3"])
    }

    /// Workers (children of a main-queue context) insert, move, rename and delete their own notes
    /// and push, while the main context pushes into an autosaving root. At the end every change
    /// that was pushed is in the store once, and the relationships agree on both sides.
    @Test(arguments: StoreKind.sqliteInMemoryAndPostgres)
    func workersMainAndAnAutosavingRootAgreeWithTheStore(_ kind: StoreKind) async throws {
        let chain = try ContextChain(kind)
        let failures = Recorder<String>()
        chain.root.startAutosaving(every: .milliseconds(15)) { failures.append("autosave: \($0)") }
        let main = chain.child(of: chain.root, "main", .mainQueue)
        main.automaticallyMergesChangesFromParent = true
        let seed = UInt64.random(in: 0..<1_000_000)
        let stop = Recorder<Bool>()

        async let mainSaves: Void = {
            while stop.values.isEmpty {
                await main.perform {
                    do { try main.save() } catch { failures.append("main: \(error)") }
                }
                try? await Task.sleep(for: .milliseconds(5))
            }
        }()
        let expected = await withTaskGroup(of: Int.self) { group in
            for index in 0..<4 {
                group.addTask {
                    var random = SeededRandom(seed: seed &+ UInt64(index))
                    let worker = ManagedObjectContext(concurrencyType: .privateQueue)
                    worker.name = "worker \(index)"
                    worker.parent = main
                    var folders: [ManagedObjectID] = []
                    var notes: [ManagedObjectID] = []
                    for round in 0..<12 {
                        let roll = random.next()
                        (folders, notes) = await worker.perform { [folders, notes] in
                            var folders = folders, notes = notes
                            if folders.count < 2 || roll % 7 == 0 {
                                folders.append(worker.insert("Folder", ["name": "w\(index)-f\(round)"]).objectID)
                            }
                            let folder = worker.object(with: folders[Int(roll % UInt64(folders.count))])
                            switch roll % 4 {
                            case 0, 1:
                                for i in 0..<Int(roll % 5 + 1) {
                                    notes.append(worker.insert("Note", ["title": "w\(index)-r\(round)-\(i)", "rank": round, "folder": folder]).objectID)
                                }
                            case 2 where !notes.isEmpty:
                                let note = worker.object(with: notes[Int(roll / 4 % UInt64(notes.count))])
                                note.setValue(folder, forKey: "folder")
                                note.setValue("moved in \(round)", forKey: "title")
                            case 3 where !notes.isEmpty:
                                worker.delete(worker.object(with: notes.remove(at: Int(roll / 4 % UInt64(notes.count)))))
                            default:
                                break
                            }
                            do { try worker.save() } catch { failures.append("worker \(index) seed \(seed): \(error)") }
                            // Whatever the root saved meanwhile, the IDs held stay valid here.
                            return (folders.map { worker.object(with: $0).objectID }, notes.map { worker.object(with: $0).objectID })
                        }
                    }
                    return notes.count
                }
            }
            return await group.reduce(0, +)
        }
        stop.append(true)
        await mainSaves
        chain.root.stopAutosaving()
        try await main.saveChain()
        #expect(failures.values.isEmpty, "seed \(seed): \(failures.values.prefix(3))")

        let reader = chain.stack.context()
        let notes = try reader.all("Note")
        #expect(notes.count == expected, "seed \(seed)")
        for note in notes {
            let folder = try #require(note.value(forKey: "folder") as? ManagedObject, "seed \(seed)")
            #expect((folder.value(forKey: "notes") as! Set<ManagedObject>).contains(note), "seed \(seed)")
        }
        let listed = try reader.all("Folder").reduce(0) { $0 + ($1.value(forKey: "notes") as! Set<ManagedObject>).count }
        #expect(listed == expected, "seed \(seed)")
        let temporary = await main.perform { main.registeredObjects.filter(\.objectID.isTemporaryID).count }
        #expect(temporary == 0, "seed \(seed)")
    }
}
