import Foundation
import GRDB
import Testing
import ObjectGraph
import ObjectGraphCrashModels
@testable import ObjectGraphCore

/// A migration killed with SIGKILL at any point leaves the store either as it was or fully
/// migrated: never half, and always openable.
@Suite("Migration crash", .serialized)
struct MigrationCrashTests {
    static let rows = 200_000

    static func seed(_ url: URL) throws {
        try Migrating.with(MigrationCrashModel.v1(), .sqlite, at: url) { (context: ManagedObjectContext) throws in
            var next = 0
            let insert = BatchInsertRequest(entityName: "Item", dictionaryHandler: { (row: inout [String: any Sendable]) -> Bool in
                if next == rows { return true }
                row = ["name": "item \(next)", "value": Int64(next)]
                next += 1
                return false
            })
            try context.execute(insert)
        }
    }

    /// Checks the store holds every row, with V1 (untouched) or with V2 (migrated); returns which.
    static func check(_ url: URL) throws -> String {
        let integrity = try DatabaseQueue(path: url.path).read { try String.fetchOne($0, sql: "PRAGMA integrity_check") }
        #expect(integrity == "ok")
        do {
            var sum: Int64 = 0
            try Migrating.with(MigrationCrashModel.v1(), .sqlite, at: url) { (context: ManagedObjectContext) throws in
                let request = FetchRequest<[String: Any]>(entityName: "Item")
                request.propertiesToFetch = ["value"]
                let values = try context.fetch(request)
                #expect(values.count == rows)
                sum = values.reduce(0) { $0 + (($1["value"] as? Int64) ?? 0) }
                let request2 = FetchRequest<ManagedObject>(entityName: "Item")
                request2.predicate = FetchPredicate(format: "name == %@", "item 4242")
                #expect(try context.count(for: request2) == 1)
            }
            #expect(sum == Int64(rows) * Int64(rows - 1) / 2)
            return "v1"
        } catch ObjectGraphError.incompatibleModel {
            try Migrating.with(MigrationCrashModel.v2(), .sqlite, at: url) { (context: ManagedObjectContext) throws in
                #expect(try context.count(for: FetchRequest<ManagedObject>(entityName: "Item")) == rows)
                let request = FetchRequest<ManagedObject>(entityName: "Item")
                request.predicate = FetchPredicate(format: "label == %@ AND extra == 7", "item 4242")
                #expect(try context.count(for: request) == 1)
            }
            return "v2"
        }
    }

    @Test func aMigrationKilledAtAnyPointLeavesTheOldStoreOrTheNewOne() throws {
        let directory = TemporaryDirectory()
        let seeded = directory.file("seed.sqlite")
        try Self.seed(seeded)
        var outcomes: [String] = []
        for delay in [0.0, 0.01, 0.05, 0.15, 0.4, 30] {
            let url = directory.file("store-\(delay).sqlite")
            try FileManager.default.copyItem(at: seeded, to: url)
            let child = try ToolProcess(["_crash", "migrate", "--store", url.path])
            #expect(child.waitForOutput(timeout: 60) { $0.contains("migrating") })
            if delay < 30 {
                Thread.sleep(forTimeInterval: delay)
                child.signal(SIGKILL)
            }
            child.wait()
            if delay == 30 { #expect(child.output.contains("migrated"), "\(child.errors)") }
            outcomes.append(try Self.check(url))
        }
        #expect(outcomes.last == "v2")
        #expect(outcomes.contains("v1"), "at least one kill came before the commit: \(outcomes)")
    }
}
