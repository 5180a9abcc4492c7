import Foundation
import Testing
import ObjectGraph
@testable import ObjectGraphCore

/// Staged migrations: a chain of model versions with custom stages, run from wherever the store
/// is, all or nothing; and dry runs.
@Suite("Staged migration")
struct StagedMigrationTests {
    /// V1 → V2 lightweight, V2 → V3 custom: willMigrate upper-cases V2's texts, didMigrate ranks V3's checklists.
    private func manager(log: Protected<[String]>, failing: Bool = false) -> StagedMigrationManager {
        let lightweight = LightweightMigrationStage([NotesVersions.v1(), NotesVersions.v2()])
        lightweight.label = "v1-v2"
        let custom = CustomMigrationStage(
            migratingFrom: NotesVersions.v2(), to: NotesVersions.v3(),
            willMigrate: { context in
                #expect(context.model?.entitiesByName["Tag"] != nil && context.model?.entitiesByName["Checklist"] == nil)
                let notes = try Migrating.fetch("Note", in: context)
                log.withLock { $0.append("will \(notes.count)") }
                for note in notes { note.setValue((note.value(forKey: "text") as? String)?.uppercased(), forKey: "text") }
                try context.save()
                if failing { throw CancellationError() }
            },
            didMigrate: { context in
                #expect(context.model?.entitiesByName["Checklist"] != nil)
                let notes = try Migrating.fetch("Note", in: context)
                log.withLock { $0.append("did \(notes.count)") }
                for note in notes { note.setValue(Int64(100), forKey: "rank") }
                try context.save()
            })
        custom.label = "v2-v3"
        return StagedMigrationManager([lightweight, custom])
    }

    @Test(arguments: Migrating.fileTypes)
    func aV1StoreRunsEveryStage(_ type: StoreType) throws {
        let directory = TemporaryDirectory()
        let url = directory.file("notes")
        try NotesVersions.seedV1(type, at: url)
        let log = Protected<[String]>([])
        try Migrating.with(NotesVersions.v3(), type, at: url, options: Migrating.staged(manager(log: log))) { (context: ManagedObjectContext) throws in
            let notes = try Migrating.fetch("Note", in: context, sortedBy: "title")
            #expect(notes.map { $0.value(forKey: "content") as? String } == ["BODY A", "BODY B", "BODY C"])
            #expect(notes.map { $0.value(forKey: "rank") as? Int64 } == [100, 100, 100])
            #expect(notes.map { $0.value(forKey: "priority") as? Int32 } == [3, 3, 3])
        }
        #expect(log.withLock { $0 } == ["will 3", "did 3"])
    }

    @Test(arguments: Migrating.fileTypes)
    func aV2StoreRunsOnlyTheStagesAfterItsVersion(_ type: StoreType) throws {
        let directory = TemporaryDirectory()
        let url = directory.file("notes")
        try Migrating.with(NotesVersions.v2(), type, at: url) { (context: ManagedObjectContext) throws in
            let note = context.insertNewObject(forEntityName: "Note")
            note.setValue("only", forKey: "title")
            note.setValue("v2 text", forKey: "text")
            note.setValue(Int32(7), forKey: "priority")
        }
        let log = Protected<[String]>([])
        let options = Migrating.staged(manager(log: log))
        let plan = try PersistentStoreCoordinator.migrationPlan(forStoreAt: url, type: type, to: NotesVersions.v3(), options: options)
        #expect(plan.steps.map(\.kind) == [.custom])
        #expect(plan.steps.map(\.label) == ["v2-v3"])
        try Migrating.with(NotesVersions.v3(), type, at: url, options: options) { (context: ManagedObjectContext) throws in
            let notes = try Migrating.fetch("Note", in: context)
            #expect(notes.map { $0.value(forKey: "content") as? String } == ["V2 TEXT"])
            #expect(notes.map { $0.value(forKey: "priority") as? Int32 } == [7])
        }
        #expect(log.withLock { $0 } == ["will 1", "did 1"])
        // Now at V3: nothing more runs.
        #expect(try PersistentStoreCoordinator.migrationPlan(forStoreAt: url, type: type, to: NotesVersions.v3(), options: options).steps.isEmpty)
    }

    @Test(arguments: Migrating.fileTypes)
    func aHandlerThatThrowsLeavesTheStoreAsItWas(_ type: StoreType) throws {
        let directory = TemporaryDirectory()
        let url = directory.file("notes")
        try NotesVersions.seedV1(type, at: url)
        let before = Migrating.bytes(url)
        let log = Protected<[String]>([])
        #expect(throws: CancellationError.self) {
            try Migrating.with(NotesVersions.v3(), type, at: url, options: Migrating.staged(manager(log: log, failing: true))) { _ in }
        }
        #expect(Migrating.bytes(url) == before)
        #expect(log.withLock { $0 } == ["will 3"])
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url.path).filter { $0.contains("migrating") }.isEmpty, "the working copy is removed")
        // The store still opens with V1, its data intact.
        try Migrating.with(NotesVersions.v1(), type, at: url) { (context: ManagedObjectContext) throws in
            #expect(try Migrating.fetch("Note", in: context, sortedBy: "title").map { $0.value(forKey: "body") as? String } == ["body a", "body b", "body c"])
        }
    }

    @Test(arguments: Migrating.fileTypes)
    func aStageNamingAModelByAWrongChecksumIsRefused(_ type: StoreType) throws {
        let directory = TemporaryDirectory()
        let url = directory.file("notes")
        try NotesVersions.seedV1(type, at: url)
        let stage = LightweightMigrationStage([
            ManagedObjectModelReference(model: NotesVersions.v1()),
            ManagedObjectModelReference(model: NotesVersions.v2(), versionChecksum: "not-the-checksum"),
        ])
        #expect(stage.versionChecksums.last == "not-the-checksum")
        Migrating.expectRefusal(.migration, at: url, mentioning: ["not-the-checksum"]) {
            try Migrating.with(NotesVersions.v2(), type, at: url, options: Migrating.staged(StagedMigrationManager([stage]))) { _ in }
        }
    }

    @Test func aDryRunListsTheStepsAndTheirSQLWithoutWriting() throws {
        let directory = TemporaryDirectory()
        let url = directory.file("notes.sqlite")
        try NotesVersions.seedV1(.sqlite, at: url)
        let before = Migrating.bytes(url)
        let log = Protected<[String]>([])
        let plan = try PersistentStoreCoordinator.migrationPlan(
            forStoreAt: url, type: .sqlite, to: NotesVersions.v3(), options: Migrating.staged(manager(log: log)))
        #expect(plan.steps.map(\.kind) == [.lightweight, .custom])
        #expect(plan.steps.map(\.label) == ["v1-v2", "v2-v3"])
        #expect(plan.steps[0].sourceModel.entitiesByName["Folder"] != nil)
        #expect(plan.steps[1].destinationModel.entitiesByName["Checklist"] != nil)
        let first = plan.steps[0].description
        for text in ["Notebook: renamed from Folder", "Note.text: renamed from body", "Note.rank: widened from integer16 to integer64",
                     "Note.priority: new attribute", "Note.obsolete: removed", "Tag: new entity",
                     "INSERT INTO \"ZNOTE\"", "ALTER TABLE \"ZFOLDER\" RENAME TO", "CREATE TABLE \"ZTAG\""] {
            #expect(first.contains(text), "the plan should say \(text):\n\(first)")
        }
        #expect(plan.steps[1].description.contains("Note.content: renamed from text"))
        #expect(plan.steps[1].description.contains("willMigrate"))
        #expect(log.withLock { $0 }.isEmpty, "a dry run runs no handler")
        #expect(Migrating.bytes(url) == before)
        // The store already at the model: no steps.
        #expect(try PersistentStoreCoordinator.migrationPlan(forStoreAt: url, type: .sqlite, to: NotesVersions.v1()).steps.isEmpty)
    }

    @Test func aDryRunOfAnInferenceThatFailsThrowsTheSameError() throws {
        let directory = TemporaryDirectory()
        let url = directory.file("notes.binary")
        try NotesVersions.seedV1(.binary, at: url)
        let v2 = ManagedObjectModel(entities: [
            EntityDescription(name: "Folder", properties: [.attribute("name", .date)]),
        ])
        #expect(throws: ObjectGraphError.migration) {
            try PersistentStoreCoordinator.migrationPlan(forStoreAt: url, type: .binary, to: v2, options: Migrating.from(NotesVersions.v1()))
        }
    }
}

/// Two coordinators adding the same old store at once: one migrates it, the other finds it migrated.
@Suite("Concurrent migration")
struct ConcurrentMigrationTests {
    @Test func twoCoordinatorsAddingTheSameOldStoreAtOnceBothOpenTheMigratedStore() throws {
        let directory = TemporaryDirectory()
        let url = directory.file("notes.sqlite")
        try NotesVersions.seedV1(.sqlite, at: url)
        let results = Protected<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 2) { _ in
            do {
                try Migrating.with(NotesVersions.v2(), .sqlite, at: url, options: Migrating.from(NotesVersions.v1())) { (context: ManagedObjectContext) throws in
                    let count = try context.count(for: FetchRequest<ManagedObject>(entityName: "Note"))
                    results.withLock { $0.append("\(count)") }
                }
            } catch {
                results.withLock { $0.append("\(error)") }
            }
        }
        #expect(results.withLock { $0 } == ["3", "3"])
    }
}
