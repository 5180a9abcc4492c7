import Foundation
import GRDB
import Testing

import ObjectGraph
@testable import ObjectGraphCore

/// `objectgraph inspect` and `objectgraph export` on copies of fixture stores.
@Suite("objectgraph inspect and export", .needsCoreDataFixtures)
struct CoreDataStoreToolTests {
    @Test("inspect prints the metadata, the cached model's match, each entity's count and the integrity check")
    func inspectAStore() throws {
        let copy = try CoreDataFixtures.copyOfStore(try CoreDataFixtures.url("coredataplus-samplemodel2-storeonly/stores/SampleModel2_V2.sqlite"))
        defer { try? FileManager.default.removeItem(at: copy.deletingLastPathComponent()) }
        let tool = try ToolProcess(["inspect", copy.path])
        #expect(tool.wait().status == 0, "\(tool.errors)")
        let output = tool.output
        #expect(output.contains("Written by: Core Data (framework version 1344)"))
        #expect(output.contains("Model: cached in the store (Z_MODELCACHE)"))
        #expect(output.contains("Version hashes match the store: yes"))
        #expect(output.contains("Persistent history: ATRANSACTION"))
        #expect(output.range(of: #"Page\s+119"#, options: .regularExpression) != nil, "\(output)")
        #expect(output.contains("Integrity: ok"))
    }

    @Test("inspect with another model version lists the entities that differ and exits with 1")
    func inspectWithAnotherModel() throws {
        let copy = try CoreDataFixtures.copyOfStore(try CoreDataFixtures.url("coredataplus-samplemodel3/stores/SampleModel3_V1.sqlite"))
        defer { try? FileManager.default.removeItem(at: copy.deletingLastPathComponent()) }
        let other = try CoreDataFixtures.url("coredataplus-samplemodel3/SampleModel3.xcdatamodeld/SampleModel3_v2.xcdatamodel")
        let tool = try ToolProcess(["inspect", copy.path, "--model", other.path])
        #expect(tool.wait().status == 1)
        #expect(tool.output.contains("Version hashes match the store: no") && tool.output.contains("User: differs"))
    }

    @Test("export writes every object as JSON, with its attributes and relationships as URIs")
    func exportAStore() throws {
        let store = try CoreDataFixtures.url("artsy-folio/stores/ArtsyPartner_1.4.sqlite")
        let copy = try CoreDataFixtures.copyOfStore(store)
        defer { try? FileManager.default.removeItem(at: copy.deletingLastPathComponent()) }
        let model = try CoreDataFixtures.url("artsy-folio/ArtsyPartner.xcdatamodeld/ArtsyFolio v1.4.xcdatamodel")
        let output = copy.deletingLastPathComponent().appendingPathComponent("export.json")
        let tool = try ToolProcess(["export", copy.path, "--model", model.path, "--json", "--output", output.path, "--page", "7"])
        #expect(tool.wait().status == 0, "\(tool.errors)")
        let objects = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: output)) as? [[String: Any]])
        let rows = try DatabaseQueue(path: copy.path).read { db in
            try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'Z%' AND name NOT LIKE 'Z\\_%' ESCAPE '\\'")
                .reduce(0) { $0 + (try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM \($1)") ?? 0) }
        }
        #expect(objects.count == rows)
        let album = try #require(objects.first { $0["entity"] as? String == "Album" })
        #expect((album["attributes"] as? [String: Any])?["name"] != nil)
        let artists = try #require((album["relationships"] as? [String: Any])?["artists"] as? [String])
        #expect(artists.allSatisfy { $0.contains("/Artist/p") })
    }
}
