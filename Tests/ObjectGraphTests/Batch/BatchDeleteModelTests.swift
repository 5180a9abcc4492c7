import Foundation
import Testing
import ObjectGraph
@testable import ObjectGraphCore

@Suite("delete(model:where:) deletes typed models in the stores")
struct BatchDeleteModelTests {
    @Test(arguments: StoreKind.everyStore)
    func itDeletesWhatThePredicateMatchesAndMergesTheDeletionsHere(_ kind: StoreKind) throws {
        let stack = try TestStack(kind, model: ManagedObjectModel(types: [Folder.self, Note.self, Tag.self]))
        let context = stack.context()
        let folder = Folder(context: context)
        folder.name = "f"
        for rank in [-2, -1, 3] {
            let note = Note(context: context)
            note.title = "r\(rank)"
            note.slug = "s\(rank)"
            note.rank = Int64(rank)
            note.folder = folder
        }
        try context.save()
        let notes = try context.fetch(FetchDescriptor<Note>(sortBy: [SortDescriptor(\.rank)]))
        let unsaved = Folder(context: context)
        unsaved.name = "pending"

        try context.delete(model: Note.self, where: #Predicate { $0.rank < 0 })
        #expect(notes[0].isDeleted && notes[1].isDeleted)
        #expect(!notes[2].isDeleted)
        #expect(context.insertedObjects == [unsaved])
        #expect(try stack.stored("Note", sortedBy: "rank").map { $0.value(forKey: "rank") as? Int64 } == [3])

        // Another context that merges automatically hears the deletions; one that does not, does not.
        let follower = stack.context("follower")
        follower.automaticallyMergesChangesFromParent = true
        let bystander = stack.context("bystander")
        let followed = try follower.existingObject(with: notes[2].objectID)
        let ignored = try bystander.existingObject(with: notes[2].objectID)

        // Cascade: deleting every folder takes the remaining note with it.
        try context.delete(model: Folder.self)
        #expect(try stack.stored("Note", sortedBy: "rank").isEmpty)
        #expect(try stack.stored("Folder", sortedBy: "name").isEmpty)
        #expect(notes[2].isDeleted)
        #expect(followed.isDeleted)
        #expect(!ignored.isDeleted)
    }

    @Test func aPrivateContextThatMergesAutomaticallySeesItsDeletionsAtOnce() throws {
        let stack = try TestStack(.sqlite, model: ManagedObjectModel(types: [Folder.self, Note.self, Tag.self]))
        let context = stack.privateContext()
        context.automaticallyMergesChangesFromParent = true
        try context.performAndWait {
            let note = Note(context: context)
            note.slug = "a"
            try context.save()
            try context.delete(model: Note.self)
            #expect(note.isDeleted)
        }
    }
}
