import Foundation
import Testing
@testable import ObjectGraphCore

/// A saved insert's temporary ID keeps resolving, in its context and down its chain, for as long as
/// the program holds a copy of it, and the tables that resolve it forget it once nobody does.
@Suite struct TemporaryIDAliasTests {
    /// Inserts and saves `count` notes in saves of `chunk`, holding none of them.
    private func insertAndSave(_ count: Int, chunk: Int, in context: ManagedObjectContext) throws {
        for start in stride(from: 0, to: count, by: chunk) {
            for rank in start..<min(count, start + chunk) { context.insert("Note", ["title": "n\(rank)", "rank": Int64(rank)]) }
            try context.save()
        }
    }

    @Test(arguments: StoreKind.sqliteInMemoryAndPostgres)
    func aSavedInsertsTemporaryIDResolvesWhileHeldAndIsForgottenAfter(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        let context = stack.context()
        let kept: ManagedObject
        do {
            let note = context.insert("Note", ["title": "kept"])
            let temporary = note.objectID
            #expect(temporary.isTemporaryID)
            try context.save()
            try insertAndSave(5000, chunk: 500, in: context)

            // Still resolves, to the same object under its permanent ID.
            #expect(!note.objectID.isTemporaryID)
            #expect(context.canonical(temporary) == note.objectID)
            #expect(try context.existingObject(with: temporary) === note)
            #expect(context.object(with: temporary) === note)
            // The 5,000 notes nobody holds left no entries behind them, here or at the chain's
            // root (the table sweeps when it doubles: fewer than 1,024 may wait for the next sweep).
            #expect(context.aliases.count < 1024, "\(context.aliases.count) aliases after 5,001 saved inserts")
            #expect(context.nesting.permanentIDs.withLock { $0.count } < 1024)
            #expect(context.aliases[temporary] == note.objectID)
            kept = note
        }
        // Nothing holds the kept note's temporary ID any more: a sweep drops it.
        try insertAndSave(2048, chunk: 1024, in: context)
        context.aliases.sweep()
        context.nesting.permanentIDs.withLock { $0.sweep() }
        #expect(context.aliases.count == 0)
        #expect(context.nesting.permanentIDs.withLock { $0.count } == 0)
        #expect(try context.existingObject(with: kept.objectID) === kept)
    }

    @Test(arguments: StoreKind.sqliteInMemoryAndPostgres)
    func aHeldTemporaryIDNamesItsObjectInAChildCreatedAfterTheSave(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        let root = stack.privateContext("root")
        let (temporary, permanent) = try root.performAndWait {
            let note = root.insert("Note", ["title": "held"])
            let temporary = note.objectID
            try root.save()
            try insertAndSave(3000, chunk: 1000, in: root)
            return (temporary, note.objectID)
        }
        let child = ManagedObjectContext(concurrencyType: .privateQueue)
        child.parent = root
        try child.performAndWait {
            let object = try child.existingObject(with: temporary)
            #expect(object.objectID == permanent)
            #expect(object.value(forKey: "title") as? String == "held")
        }
    }

    @Test func anInsertMergedIntoAnExistingRowResolvesByItsTemporaryID() throws {
        let stack = try TestStack(.sqlite, model: TestModels.notes(uniqueTagNames: true))
        let first = stack.context("first")
        first.insert("Tag", ["name": "swift"])
        try first.save()
        let second = stack.context("second")
        second.mergePolicy = .mergeByPropertyObjectTrump
        let tag = second.insert("Tag", ["name": "swift"])
        let temporary = tag.objectID
        try second.save()
        #expect(!tag.objectID.isTemporaryID)
        #expect(second.canonical(temporary) == tag.objectID)
        #expect(try second.existingObject(with: temporary) === tag)
    }
}
