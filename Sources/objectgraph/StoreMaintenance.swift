import ArgumentParser
import Foundation
import GRDB
import ObjectGraphCore

/// `objectgraph verify STORE`: SQLite's integrity check and the invariants of Core Data's layout
/// (versions, entity numbers, `Z_MAX`, to-ones and join tables pointing at rows). Reads only.
struct Verify: ToolCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check a Core Data SQLite store: integrity, versions, entity numbers, Z_MAX, to-ones and join tables.",
        discussion: "Reads only. Exits with 1 when anything is wrong. Without --model, the model cached in the store (Z_MODELCACHE) is used.")

    @Argument(help: "The store's .sqlite file.") var store: String
    @Option(help: "The model: an .xcdatamodeld, .xcdatamodel, .momd or .mom.") var model: String?
    @Flag(help: "Print the result as JSON.") var json = false

    func execute() throws {
        let url = URL(fileURLWithPath: store)
        let loaded = try model.map { try ManagedObjectModel(contentsOf: URL(fileURLWithPath: $0)) } ?? ManagedObjectModel(contentsOfStoreAt: url)
        let bar = TerminalProgress(enabled: !json)
        let result = try StoreTools.verify(at: url, model: loaded) { done, total in bar.show(done, of: total, "checking") }
        bar.finish()
        if json {
            print(String(decoding: try StoreTools.json(result), as: UTF8.self))
        } else {
            print("Integrity: \(result.integrity)")
            print("Checks: \(result.checks.count)")
            if result.problems.isEmpty {
                print("Invariants: ok")
            } else {
                print("Problems: \(result.problems.count)")
                for problem in result.problems { print("  \(problem)") }
            }
        }
        if !result.isValid { throw ExitCode(1) }
    }
}

/// `objectgraph vacuum STORE`: rebuilds the file without its free pages.
struct Vacuum: ToolCommand {
    static let configuration = CommandConfiguration(
        abstract: "Rebuild an SQLite store without its free pages (SQLite's VACUUM), after checkpointing its write-ahead log.",
        discussion: "Takes the store's write lock for as long as it runs: run it while no program writes the store.")

    @Argument(help: "The store's .sqlite file.") var store: String
    @Flag(help: "Print the result as JSON.") var json = false

    func execute() throws {
        let url = URL(fileURLWithPath: store)
        let bar = TerminalProgress(enabled: !json)
        let result = try StoreTools.vacuum(at: url) { done, total in bar.show(done, of: total, "vacuuming") }
        bar.finish()
        if json {
            print(String(decoding: try StoreTools.json(result), as: UTF8.self))
        } else {
            print("Vacuumed \(url.path): \(result.bytesBefore) bytes → \(result.bytesAfter) bytes (database and write-ahead log)")
        }
    }
}

/// `objectgraph checkpoint STORE`: moves the write-ahead log into the database and truncates it.
struct Checkpoint: ToolCommand {
    static let configuration = CommandConfiguration(
        abstract: "Move an SQLite store's write-ahead log into the database and truncate the log (wal_checkpoint(TRUNCATE)).",
        discussion: "Exits with 1 when a reader or writer of another program kept part of the log (busy).")

    @Argument(help: "The store's .sqlite file.") var store: String
    @Flag(help: "Print the result as JSON.") var json = false

    func execute() throws {
        let url = URL(fileURLWithPath: store)
        let bar = TerminalProgress(enabled: !json)
        bar.show(0, of: 1, "checkpointing")
        let result = try StoreTools.checkpoint(at: url)
        bar.show(1, of: 1, "checkpointing")
        bar.finish()
        if json {
            print(String(decoding: try StoreTools.json(result), as: UTF8.self))
        } else {
            print("Checkpointed \(url.path): \(result.framesCheckpointed) of \(result.framesInLog) log frames moved; log \(result.walBytesBefore) → \(result.walBytesAfter) bytes\(result.busy ? " (busy: another connection kept part of the log)" : "")")
        }
        if result.busy { throw ExitCode(1) }
    }
}
