import Foundation
import Testing
import ObjectGraph
@testable import ObjectGraphCore

@Suite("Saving, validation and delete rules")
struct SaveTests {
    static func validatedModel() -> ManagedObjectModel {
        ManagedObjectModel(entities: [
            EntityDescription(name: "Account", properties: [
                .attribute("name", .string, isOptional: false, minimumLength: 2, maximumLength: 8, regularExpression: "[a-z]+"),
                .attribute("age", .integer16, minimum: 0, maximum: 150),
                .attribute("joined", .date, minimum: Date(timeIntervalSinceReferenceDate: 0)),
                .relationship("owner", destination: "Account", isOptional: true),
                .relationship("members", destination: "Member", toMany: true, inverse: "account", deleteRule: .deny, minimumCount: 0, maximumCount: 2),
            ]),
            EntityDescription(name: "Member", properties: [
                .attribute("name", .string),
                .relationship("account", destination: "Account", inverse: "members", isOptional: false),
            ]),
        ])
    }

    @Test(arguments: StoreKind.everyStore)
    func validationReportsEveryFailureAndWritesNothing(_ kind: StoreKind) throws {
        let stack = try TestStack(kind, model: Self.validatedModel())
        let context = stack.context()
        let account = context.insert("Account", ["name": "X1", "age": 200, "joined": Date(timeIntervalSinceReferenceDate: -10)])
        let members = (0..<3).map { _ in context.insert("Member", ["name": "m"]) }
        account.setValue(Set(members), forKey: "members")
        _ = context.insert("Member", [:])  // no account: required to-one
        let error = try #require(throws: ObjectGraphError.self) { try context.save() }
        #expect(error.code == .validation)
        let text = error.underlyingErrors.map(\.message).joined(separator: "\n")
        #expect(text.contains("Account.name"), "regex: \(text)")
        #expect(text.contains("Account.age"), "maximum: \(text)")
        #expect(text.contains("Account.joined"), "minimum date: \(text)")
        #expect(text.contains("Account.members"), "maximum count: \(text)")
        #expect(text.contains("Member.account"), "required to-one: \(text)")
        #expect(error.underlyingErrors.count == 5)
        // Nothing reached the store, and the context kept its changes.
        #expect(try stack.context("reader").all("Account").isEmpty)
        #expect(context.insertedObjects.count == 5)
        // Fix everything and retry.
        account.setValue("abc", forKey: "name")
        account.setValue(30, forKey: "age")
        account.setValue(Date(), forKey: "joined")
        account.setValue(Set(members.prefix(2)), forKey: "members")
        for member in context.insertedObjects where member.entity.name == "Member" && member.value(forKey: "account") == nil {
            context.delete(member)
        }
        try context.save()
        #expect(try stack.context("reader").all("Member").count == 2)
    }

    @Test(arguments: StoreKind.everyStore)
    func cascadeAndNullifyRulesFollowTheGraph(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        let context = stack.context()
        let folder = context.insert("Folder", ["name": "Inbox"])
        let notes = (0..<3).map { context.insert("Note", ["title": "n\($0)", "folder": folder]) }
        let tag = context.insert("Tag", ["name": "t"])
        tag.setValue(Set(notes), forKey: "notes")
        try context.save()

        let worker = stack.context("worker")
        let readTag = try #require(try worker.all("Tag").first)
        let readNote = try #require((readTag.value(forKey: "notes") as? Set<ManagedObject>)?.first)
        // Nullify: deleting a note takes it out of its folder and its tags.
        worker.delete(readNote)
        worker.processPendingChanges()
        #expect((readTag.value(forKey: "notes") as? Set<ManagedObject>)?.count == 2)
        try worker.save()
        #expect(try stack.context().all("Note").count == 2)
        // Cascade: deleting the folder deletes its notes.
        let folderAgain = try #require(try worker.all("Folder").first)
        worker.delete(folderAgain)
        try worker.save()
        let check = stack.context("check")
        #expect(try check.all("Note").isEmpty)
        #expect(try check.all("Folder").isEmpty)
        #expect((try check.all("Tag").first?.value(forKey: "notes") as? Set<ManagedObject>)?.isEmpty == true)
    }

    @Test(arguments: StoreKind.everyStore)
    func theDenyRuleRefusesTheDeleteUntilTheRelationshipIsEmpty(_ kind: StoreKind) throws {
        let stack = try TestStack(kind, model: Self.validatedModel())
        let context = stack.context()
        let account = context.insert("Account", ["name": "abc"])
        let member = context.insert("Member", ["name": "m", "account": account])
        try context.save()
        context.delete(account)
        let error = try #require(throws: ObjectGraphError.self) { try context.save() }
        #expect(error.code == .validation)
        #expect(error.message.contains("deny"))
        context.rollback()
        #expect(!account.isDeleted)
        context.delete(member)
        context.delete(account)
        try context.save()
        #expect(try stack.context().all("Account").isEmpty)
    }

    @Test(arguments: StoreKind.everyStore)
    func rollbackDiscardsEveryUnsavedChange(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        let context = stack.context()
        let note = context.insert("Note", ["title": "kept", "rank": 1])
        try context.save()
        note.setValue("changed", forKey: "title")
        let extra = context.insert("Note", ["title": "extra"])
        context.rollback()
        #expect(note.value(forKey: "title") as? String == "kept")
        #expect(!note.hasChanges && !context.hasChanges)
        #expect(extra.managedObjectContext == nil)
        #expect(try context.all("Note").count == 1)
    }

    @Test(arguments: StoreKind.everyStore)
    func resetForgetsEverythingAndRefreshRereads(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        let writer = stack.context("writer")
        let note = writer.insert("Note", ["title": "v1"])
        try writer.save()
        let reader = stack.context("reader")
        let readNote = try reader.existingObject(with: note.objectID)
        #expect(readNote.value(forKey: "title") as? String == "v1")
        note.setValue("v2", forKey: "title")
        try writer.save()
        // The reader still sees its snapshot until it refreshes.
        #expect(readNote.value(forKey: "title") as? String == "v1")
        reader.refresh(readNote, mergeChanges: false)
        #expect(readNote.isFault)
        #expect(readNote.value(forKey: "title") as? String == "v2")
        reader.reset()
        #expect(reader.registeredObject(for: note.objectID) == nil)
        #expect(try reader.existingObject(with: note.objectID).value(forKey: "title") as? String == "v2")
    }

    @Test(arguments: StoreKind.everyStore)
    func refreshingWithMergeKeepsUnsavedChangesInTheSave(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        let writer = stack.context("writer")
        let note = writer.insert("Note", ["title": "v1", "rank": 1])
        try writer.save()
        let other = stack.context("other")
        try other.existingObject(with: note.objectID).setValue("v2", forKey: "title")
        try other.save()
        note.setValue(7, forKey: "rank")
        writer.refresh(note, mergeChanges: true)
        #expect(note.value(forKey: "title") as? String == "v2")
        #expect(note.value(forKey: "rank") as? Int64 == 7)
        #expect(note.isUpdated && writer.updatedObjects.contains(note))
        try writer.save()
        let stored = try stack.context("check").existingObject(with: note.objectID)
        #expect(stored.value(forKey: "title") as? String == "v2")
        #expect(stored.value(forKey: "rank") as? Int64 == 7)
    }

    @Test(arguments: StoreKind.everyStore)
    func aConflictingSaveThrowsAndWritesNothing(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        let setup = stack.context("setup")
        let note = setup.insert("Note", ["title": "base"])
        try setup.save()
        let first = stack.context("first"), second = stack.context("second")
        let a = try first.existingObject(with: note.objectID)
        let b = try second.existingObject(with: note.objectID)
        a.setValue("first", forKey: "title")
        b.setValue("second", forKey: "title")
        try first.save()
        let error = try #require(throws: ObjectGraphError.self) { try second.save() }
        #expect(error.code == .mergeConflict)
        #expect(error.message.contains("second"))
        #expect(second.hasChanges)
        #expect(try stack.context().existingObject(with: note.objectID).value(forKey: "title") as? String == "first")
    }

    @Test(arguments: StoreKind.everyStore)
    func addingToASharedParentFromTwoContextsDoesNotConflict(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        let setup = stack.context("setup")
        let folder = setup.insert("Folder", ["name": "Shared"])
        let tag = setup.insert("Tag", ["name": "shared"])
        try setup.save()
        let first = stack.context("first"), second = stack.context("second")
        for (i, context) in [first, second].enumerated() {
            let sharedFolder = try context.existingObject(with: folder.objectID)
            let sharedTag = try context.existingObject(with: tag.objectID)
            _ = sharedFolder.value(forKey: "notes")
            let note = context.insert("Note", ["title": "from \(i)", "folder": sharedFolder])
            note.setValue(Set([sharedTag]), forKey: "tags")
        }
        try first.save()
        try second.save()
        let reader = stack.context("reader")
        let readFolder = try reader.existingObject(with: folder.objectID)
        #expect((readFolder.value(forKey: "notes") as? Set<ManagedObject>)?.count == 2)
        #expect((try reader.existingObject(with: tag.objectID).value(forKey: "notes") as? Set<ManagedObject>)?.count == 2)
        // Changing the parent's own attributes in both still conflicts.
        let a = try first.existingObject(with: folder.objectID), b = try second.existingObject(with: folder.objectID)
        first.refresh(a, mergeChanges: false)
        second.refresh(b, mergeChanges: false)
        a.setValue("A", forKey: "name")
        b.setValue("B", forKey: "name")
        try first.save()
        #expect(throws: ObjectGraphError.mergeConflict) { try second.save() }
    }

    @Test(arguments: StoreKind.everyStore)
    func uniquenessConstraintsRefuseDuplicates(_ kind: StoreKind) throws {
        let model = ManagedObjectModel(entities: [
            EntityDescription(name: "User", properties: [.attribute("email", .string)], uniquenessConstraints: [["email"]]),
        ])
        let stack = try TestStack(kind, model: model)
        let context = stack.context()
        _ = context.insert("User", ["email": "a@x"])
        try context.save()
        let other = context.insert("User", ["email": "a@x"])
        let error = try #require(throws: ObjectGraphError.self) { try context.save() }
        #expect(error.code == .constraintConflict)
        #expect(error.message.contains("a@x"))
        other.setValue("b@x", forKey: "email")
        try context.save()
        #expect(try stack.context().all("User").count == 2)
    }

    @Test(arguments: StoreKind.everyStore)
    func objectIDsArePermanentAfterSaveAndRoundTripThroughURIs(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        let context = stack.context()
        let note = context.insert("Note", ["title": "a"])
        let temporary = note.objectID
        #expect(temporary.isTemporaryID)
        try context.obtainPermanentIDs(for: [note])
        #expect(!note.objectID.isTemporaryID)
        #expect(context.object(with: temporary) === note)
        try context.save()
        let uri = note.objectID.uriRepresentation()
        let id = try #require(stack.coordinator.managedObjectID(forURIRepresentation: uri))
        #expect(id == note.objectID)
        let reader = stack.context("reader")
        let held = try reader.existingObject(with: id)
        #expect(held.value(forKey: "title") as? String == "a")
        #expect(throws: ObjectGraphError.temporaryObjectID) { try reader.existingObject(with: temporary) }
        context.delete(note)
        try context.save()
        #expect(throws: ObjectGraphError.objectNotFound) { try stack.context("late").existingObject(with: id) }
        #expect(reader.registeredObject(for: id) === held)
        #expect(stack.context("fresh").registeredObject(for: id) == nil)
    }

    @Test(arguments: StoreKind.everyStore)
    func aFaultOfADeletedRowBecomesDeletedWhenAllowed(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        let context = stack.context()
        let note = context.insert("Note", ["title": "gone", "rank": 5])
        try context.save()
        let reader = stack.context("reader")
        reader.shouldDeleteInaccessibleFaults = true
        let fault = reader.object(with: note.objectID)
        #expect(fault.isFault)
        context.delete(note)
        try context.save()
        #expect(fault.value(forKey: "rank") as? Int64 == 0)
        #expect(fault.isDeleted)
    }

    @Test(arguments: StoreKind.everyStore)
    func entityInheritanceFetchesSubentitiesFromOneTable(_ kind: StoreKind) throws {
        let model = ManagedObjectModel(entities: [
            EntityDescription(name: "Shape", isAbstract: true, properties: [
                .attribute("name", .string),
                .relationship("canvas", destination: "Canvas", inverse: "shapes"),
            ]),
            EntityDescription(name: "Circle", superentity: "Shape", properties: [.attribute("radius", .double)]),
            EntityDescription(name: "Square", superentity: "Shape", properties: [.attribute("side", .double)]),
            EntityDescription(name: "Canvas", properties: [.relationship("shapes", destination: "Shape", toMany: true, inverse: "canvas")]),
        ])
        let stack = try TestStack(kind, model: model)
        let context = stack.context()
        let canvas = context.insert("Canvas", [:])
        _ = context.insert("Circle", ["name": "c", "radius": 2.0, "canvas": canvas])
        _ = context.insert("Square", ["name": "s", "side": 3.0, "canvas": canvas])
        try context.save()
        let reader = stack.context("reader")
        let shapes = try reader.all("Shape")
        #expect(shapes.map(\.entity.name).sorted() == ["Circle", "Square"])
        #expect(try reader.all("Circle").count == 1)
        let onlyShape = FetchRequest<ManagedObject>(entityName: "Circle")
        onlyShape.includesSubentities = false
        #expect(try reader.fetch(onlyShape).first?.value(forKey: "radius") as? Double == 2.0)
        let readCanvas = try #require(try reader.all("Canvas").first)
        let entities = (readCanvas.value(forKey: "shapes") as? Set<ManagedObject>)?.map(\.entity.name).sorted()
        #expect(entities == ["Circle", "Square"])
    }
}
