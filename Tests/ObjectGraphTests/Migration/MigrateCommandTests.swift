import Foundation
import Testing
import ObjectGraph
@testable import ObjectGraphCore

/// `objectgraph migrate`: the plan, a dry run that writes nothing, and the counts before and after.
@Suite("objectgraph migrate", .needsCoreDataFixtures, .serialized)
struct MigrateCommandTests {
    @Test func aDryRunPrintsThePlanAndWritesNothingThenTheMigrationReportsCounts() throws {
        let store = try CoreDataFixtures.copyOfStore(try CoreDataFixtures.url("coredataplus-samplemodel/stores/SampleModel_V1.sqlite"))
        defer { try? FileManager.default.removeItem(at: store.deletingLastPathComponent()) }
        let model = try CoreDataFixtures.url("coredataplus-samplemodel/SampleModel.xcdatamodeld/SampleModel2.xcdatamodel")
        let before = Migrating.bytes(store)

        let dry = try ToolProcess(["migrate", store.path, "--model", model.path, "--dry-run"])
        #expect(dry.wait().status == 0, "\(dry.errors)")
        for text in ["Plan: 1 step", "LuxuryCar: renamed from ExpensiveSportCar", "ALTER TABLE", "Dry run: nothing was written."] {
            #expect(dry.output.contains(text), "\(text) in:\n\(dry.output)")
        }
        #expect(Migrating.bytes(store) == before)

        let run = try ToolProcess(["migrate", store.path, "--model", model.path])
        #expect(run.wait().status == 0, "\(run.errors)")
        for text in ["Car: 115 → 115", "ExpensiveSportCar: 5 → -", "LuxuryCar: - → 5", "Person: 20 → 20"] {
            #expect(run.output.contains(text), "\(text) in:\n\(run.output)")
        }
        let again = try ToolProcess(["migrate", store.path, "--model", model.path])
        #expect(again.wait().status == 0)
        #expect(again.output.contains("nothing to do"))
    }

    @Test func aMigrationThatCannotRunExitsWithOneAndLeavesTheStore() throws {
        let directory = TemporaryDirectory()
        let url = directory.file("items.sqlite")
        try Migrating.with(NotesVersions.v1(), .sqlite, at: url) { (context: ManagedObjectContext) throws in
            context.insertNewObject(forEntityName: "Folder").setValue("x", forKey: "name")
        }
        try Migrating.forgetModel(.sqlite, at: url)
        let before = Migrating.bytes(url)
        // The store does not keep its model and none is given: the plan is refused.
        let model = try CoreDataFixtures.url("coredataplus-samplemodel/SampleModel.xcdatamodeld/SampleModel2.xcdatamodel")
        let run = try ToolProcess(["migrate", url.path, "--model", model.path])
        #expect(run.wait().status == 1)
        #expect(run.output == "")
        #expect(run.errors.hasPrefix("Error: Cannot migrate \(url.path): "), "\(run.errors)")
        #expect(Migrating.bytes(url) == before)
    }
}
