import ArgumentParser
import Foundation
import ObjectGraph

@main
struct ObjectGraphCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "objectgraph",
        abstract: "Core Data's object graph, in Swift, on Linux.",
        subcommands: [Demo.self, Bench.self, Misuse.self, Crash.self])
}

/// The model the demo and the benchmark use.
enum DemoModel {
    static func make() -> ManagedObjectModel {
        ManagedObjectModel(entities: [
            EntityDescription(name: "Folder", properties: [
                .attribute("name", .string, isOptional: false),
                .relationship("notes", destination: "Note", toMany: true, inverse: "folder", deleteRule: .cascade),
            ]),
            EntityDescription(name: "Note", properties: [
                .attribute("title", .string, isOptional: false, defaultValue: ""),
                .attribute("rank", .integer64, defaultValue: Int64(0), isIndexed: true),
                .attribute("created", .date),
                .relationship("folder", destination: "Folder", toMany: false, inverse: "notes", deleteRule: .nullify),
            ]),
        ])
    }
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

