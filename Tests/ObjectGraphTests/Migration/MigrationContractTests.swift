import Foundation
import Testing
import ObjectGraph
@testable import ObjectGraphCore

/// The migration API's contract: Core Data's option strings, references checked by checksum,
/// read-only stores left alone.
@Suite("Migration contract")
struct MigrationContractTests {
    @Test func theOptionKeysAreCoreDatasStrings() {
        #expect(PersistentStoreOption.migratePersistentStoresAutomatically == "NSMigratePersistentStoresAutomaticallyOption")
        #expect(PersistentStoreOption.inferMappingModelAutomatically == "NSInferMappingModelAutomaticallyOption")
        #expect(PersistentStoreOption.stagedMigrationManager == "NSPersistentStoreStagedMigrationManagerOptionKey")
        #expect(ObjectGraphError.migration.code == ObjectGraphError.Code.migration)
        let description = PersistentStoreDescription()
        #expect(description.shouldMigrateStoreAutomatically && description.shouldInferMappingModelAutomatically)
        description.shouldInferMappingModelAutomatically = false
        #expect(description.options[PersistentStoreOption.inferMappingModelAutomatically] as? Bool == false)
        #expect(!description.shouldInferMappingModelAutomatically)
    }

    @Test(.needsCoreDataFixtures) func aReferenceToAModelFileIsCheckedByItsChecksum() throws {
        let file = try CoreDataFixtures.url("coredataplus-samplemodel/SampleModel.xcdatamodeld/SampleModel2.xcdatamodel")
        let model = try ManagedObjectModel(contentsOf: file)
        let reference = ManagedObjectModelReference(fileURL: file, versionChecksum: model.versionChecksum)
        #expect(reference.resolvedModel.entityVersionHashesByName == model.entityVersionHashesByName)
        #expect(try reference.checkedModel(stage: "test") === reference.resolvedModel)
        #expect(ManagedObjectModelReference(model: model).versionChecksum == model.versionChecksum)

        let missing = ManagedObjectModelReference(fileURL: file.appendingPathComponent("nothing.xcdatamodel"), versionChecksum: "x")
        #expect(throws: ObjectGraphError.migration) { try missing.checkedModel(stage: "test") }
        let wrong = ManagedObjectModelReference(model: model, versionChecksum: "x")
        #expect(throws: ObjectGraphError.migration) { try wrong.checkedModel(stage: "test") }
    }

    @Test func aStageHasItsLabelAndItsHandlers() {
        let stage = CustomMigrationStage(migratingFrom: NotesVersions.v1(), to: NotesVersions.v2())
        #expect(stage.label == nil && stage.willMigrateHandler == nil && stage.didMigrateHandler == nil)
        stage.label = "v1 to v2"
        stage.willMigrateHandler = { _ in }
        #expect(stage.label == "v1 to v2" && stage.willMigrateHandler != nil)
        #expect(stage.currentModel.resolvedModel.entitiesByName["Folder"] != nil)
        #expect(stage.nextModel.resolvedModel.entitiesByName["Notebook"] != nil)
        let manager = StagedMigrationManager([stage, LightweightMigrationStage([NotesVersions.v2(), NotesVersions.v3()])])
        #expect(manager.stages.count == 2)
    }

    @Test(arguments: Migrating.fileTypes)
    func aReadOnlyStoreIsNeverMigrated(_ type: StoreType) throws {
        let directory = TemporaryDirectory()
        let url = directory.file("notes")
        try NotesVersions.seedV1(type, at: url)
        var options = Migrating.from(NotesVersions.v1())
        options[PersistentStoreOption.readOnly] = true
        Migrating.expectRefusal(.incompatibleModel, at: url, mentioning: []) {
            try Migrating.with(NotesVersions.v2(), type, at: url, options: options) { _ in }
        }
    }

    @Test func aMigrationOptionOfTheWrongTypeIsRefusedNamingTheKey() throws {
        let directory = TemporaryDirectory()
        let url = directory.file("notes.sqlite")
        try NotesVersions.seedV1(.sqlite, at: url)
        Migrating.expectRefusal(.unsupported, at: url, mentioning: [PersistentStoreOption.stagedMigrationManager]) {
            try Migrating.with(NotesVersions.v2(), .sqlite, at: url, options: [PersistentStoreOption.stagedMigrationManager: "v1"]) { _ in }
        }
    }
}
