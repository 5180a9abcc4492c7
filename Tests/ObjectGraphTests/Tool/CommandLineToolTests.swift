import Foundation
import Testing
import ObjectGraph
@testable import ObjectGraphCore

/// The built `objectgraph` tool behaves as Unix tools do: results on standard output; usage errors
/// with the usage text and exit status 64; runtime failures as one `Error: …` line on standard
/// error with exit status 1; progress only on a terminal's standard error.
@Suite("The objectgraph tool behaves as Unix tools do")
struct CommandLineToolTests {
    /// Runs the tool to its end.
    static func run(_ arguments: [String], environment: [String: String] = [:]) throws -> (status: Int32, output: String, errors: String) {
        let tool = try ToolProcess(arguments, environment: environment)
        let (status, reason) = tool.wait()
        #expect(reason == .exit, "the tool was stopped by signal \(status): \(tool.errors)")
        return (status, tool.output, tool.errors)
    }

    /// A file that is not a database.
    static func textFile(in directory: TemporaryDirectory) throws -> URL {
        let url = directory.file("text.sqlite")
        try Data("this is not a database, just some text that is long enough".utf8).write(to: url)
        return url
    }

    @Test("--version prints the version on standard output and exits with 0")
    func versionIsPrinted() throws {
        let result = try Self.run(["--version"])
        #expect(result.status == 0)
        #expect(result.output == "0.1.0\n")
        #expect(result.errors == "")
    }

    @Test("A usage error prints its message and the usage text on standard error and exits with 64", arguments: [
        ["frobnicate"],
        ["inspect"],
        ["inspect", "--no-such-option", "store.sqlite"],
        ["export", "store.sqlite", "--page", "0"],
        ["migrate", "store.sqlite", "--model", "Model.xcdatamodel", "--type", "csv"],
    ])
    func usageErrorsExitWith64(arguments: [String]) throws {
        let result = try Self.run(arguments)
        #expect(result.status == 64, "\(result.errors)")
        #expect(result.output == "")
        #expect(result.errors.hasPrefix("Error: "), "\(result.errors)")
        #expect(result.errors.contains("Usage: objectgraph"), "\(result.errors)")
    }

    @Test("A bad option value found by a command's own validation is a usage error")
    func validationIsAUsageError() throws {
        let result = try Self.run(["demo", "--notes=-1"])
        #expect(result.status == 64)
        #expect(result.output == "")
        #expect(result.errors.hasPrefix("Error: --notes cannot be negative\nUsage: objectgraph demo "), "\(result.errors)")
    }

    @Test("inspect of a missing file exits with 1 and says so on standard error, naming the file")
    func inspectOfAMissingFile() throws {
        let directory = TemporaryDirectory()
        let missing = directory.file("missing.sqlite")
        let result = try Self.run(["inspect", missing.path])
        #expect(result.status == 1)
        #expect(result.output == "")
        #expect(result.errors == "Error: There is no file at \(missing.path)\n")
    }

    @Test("inspect of a file that is not a database exits with 1 and says so on standard error, naming the file")
    func inspectOfATextFile() throws {
        let directory = TemporaryDirectory()
        let text = try Self.textFile(in: directory)
        let result = try Self.run(["inspect", text.path])
        #expect(result.status == 1)
        #expect(result.output == "")
        #expect(result.errors == "Error: \(text.path) is not an SQLite database\n")
    }

    @Test("A store tool given a missing file or one that is not a database exits with 1 and one error line naming the file",
          arguments: ["inspect", "export", "verify", "checkpoint", "vacuum"], [false, true])
    func storeToolsReportRuntimeFailures(command: String, fileExists: Bool) throws {
        let directory = TemporaryDirectory()
        let url = fileExists ? try Self.textFile(in: directory) : directory.file("missing.sqlite")
        let result = try Self.run([command, url.path])
        #expect(result.status == 1, "\(result.errors)")
        #expect(result.output == "")
        #expect(result.errors.hasPrefix("Error: "), "\(result.errors)")
        #expect(result.errors.contains(url.path), "\(result.errors)")
        #expect(result.errors.hasSuffix("\n") && result.errors.dropLast().contains("\n") == false, "one line: \(result.errors)")
        #expect(!result.errors.contains("Usage:"))
    }

    @Test("demo that cannot create its store folder exits with 1 and names the folder on standard error")
    func demoReportsARuntimeFailure() throws {
        let directory = TemporaryDirectory()
        let notAFolder = try Self.textFile(in: directory)
        let result = try Self.run(["demo", "--notes", "10"], environment: ["TMPDIR": notAFolder.path])
        #expect(result.status == 1, "\(result.errors)")
        #expect(result.output == "")
        let line = #/Error: (.+)/objectgraph-demo-[0-9A-F-]+: Not a directory\n/#
        let match = try #require(result.errors.wholeMatch(of: line), "\(result.errors)")
        #expect(match.1 == notAFolder.path)
    }

    @Test("export writes JSON on standard output without --json, and the same with it", .needsCoreDataFixtures)
    func exportWritesJSONWithoutTheFlag() throws {
        let copy = try CoreDataFixtures.copyOfStore(try CoreDataFixtures.url("artsy-folio/stores/ArtsyPartner_1.4.sqlite"))
        defer { try? FileManager.default.removeItem(at: copy.deletingLastPathComponent()) }
        let model = try CoreDataFixtures.url("artsy-folio/ArtsyPartner.xcdatamodeld/ArtsyFolio v1.4.xcdatamodel")

        let plain = try Self.run(["export", copy.path, "--model", model.path])
        #expect(plain.status == 0, "\(plain.errors)")
        #expect(plain.errors == "")
        let objects = try #require(try JSONSerialization.jsonObject(with: Data(plain.output.utf8)) as? [[String: Any]])
        #expect(objects.count > 100)
        #expect(objects.allSatisfy { $0["entity"] is String && $0["id"] is String && $0["attributes"] is [String: Any] })

        let flagged = try Self.run(["export", copy.path, "--model", model.path, "--json"])
        #expect(flagged.status == 0, "\(flagged.errors)")
        #expect(flagged.errors == "")
        #expect(flagged.output == plain.output)
    }

    @Test("migrate with standard error not a terminal prints no progress bar: the plan and counts on standard output, nothing on standard error",
          .needsCoreDataFixtures)
    func migrateDrawsNoProgressOffATerminal() throws {
        let store = try CoreDataFixtures.copyOfStore(try CoreDataFixtures.url("coredataplus-samplemodel/stores/SampleModel_V1.sqlite"))
        defer { try? FileManager.default.removeItem(at: store.deletingLastPathComponent()) }
        let model = try CoreDataFixtures.url("coredataplus-samplemodel/SampleModel.xcdatamodeld/SampleModel2.xcdatamodel")
        let result = try Self.run(["migrate", store.path, "--model", model.path])
        #expect(result.status == 0, "\(result.errors)")
        #expect(result.errors == "")
        #expect(result.output.hasPrefix("Store: \(store.path) (SQLite)\n"), "\(result.output)")
        #expect(result.output.contains("Car: 115 → 115"), "\(result.output)")
        #expect(!result.output.contains("\r"))
        #expect(result.output.range(of: #"\[[#-]+\]"#, options: .regularExpression) == nil, "a progress bar in:\n\(result.output)")
    }

    @Test("migrate of a file that is not a database exits with 1, its error on standard error and nothing on standard output",
          .needsCoreDataFixtures)
    func migrateReportsErrorsOnStandardError() throws {
        let directory = TemporaryDirectory()
        let text = try Self.textFile(in: directory)
        let before = Migrating.bytes(text)
        let model = try CoreDataFixtures.url("coredataplus-samplemodel/SampleModel.xcdatamodeld/SampleModel2.xcdatamodel")
        let result = try Self.run(["migrate", text.path, "--model", model.path])
        #expect(result.status == 1)
        #expect(result.output == "")
        #expect(result.errors.hasPrefix("Error: Cannot migrate \(text.path): "), "\(result.errors)")
        #expect(!result.errors.contains("Usage:") && !result.errors.contains("\r"))
        #expect(Migrating.bytes(text) == before)
    }
}
