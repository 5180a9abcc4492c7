import ArgumentParser
import Foundation
import ObjectGraphCore

@main
struct ObjectGraphCommand: ParsableCommand {
    /// The tool's version, printed by `objectgraph --version`: change it here at a release.
    static let version = "0.1.0"

    static let configuration = CommandConfiguration(
        commandName: "objectgraph",
        abstract: "Core Data's object graph, in Swift, on Linux.",
        version: version,
        subcommands: [Demo.self, Misuse.self, Crash.self, Hostile.self, MemoryProbe.self, Inspect.self, Export.self, Migrate.self, Verify.self, Vacuum.self, Checkpoint.self])
}

func temporaryStoreURL(_ name: String) throws -> (URL, URL) {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("objectgraph-\(name)-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    return (directory, directory.appendingPathComponent("\(name).sqlite"))
}

func seconds(_ body: () throws -> Void) rethrows -> Double {
    let start = DispatchTime.now().uptimeNanoseconds
    try body()
    return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
}

