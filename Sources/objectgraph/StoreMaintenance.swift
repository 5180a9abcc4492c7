import ArgumentParser
import Foundation
import GRDB
import ObjectGraphCore

/// `objectgraph verify STORE`: SQLite's integrity check and the invariants of Core Data's layout
/// (versions, entity numbers, `Z_MAX`, to-ones and join tables pointing at rows), of an SQLite file
/// or a PostgreSQL store (the layout's invariants: the server keeps its own pages). Reads only.
struct Verify: ToolCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check a Core Data store: integrity, versions, entity numbers, Z_MAX, to-ones and join tables.",
        discussion: """
            The store is an SQLite file or a postgres:// URL (with the tool built with the PostgreSQL trait; the server's own pages \
            are PostgreSQL's to check). Reads only. Exits with 1 when anything is wrong. Without --model, the model cached in the \
            store (Z_MODELCACHE) is used.
            """)

    @OptionGroup var file: StoreFileOptions
    @Option(help: "The model: an .xcdatamodeld, .xcdatamodel, .momd or .mom.") var model: String?

    func execute() throws {
        let location = try StoreLocation(file.store)
        let url = location.url
        let loaded = try model.map { try ManagedObjectModel(contentsOf: URL(fileURLWithPath: $0)) } ?? ManagedObjectModel(contentsOfStoreAt: url)
        let result = try report(json: file.json, progress: "checking") { progress in
            location.isPostgreSQL
                ? try StoreTools.verifyPostgres(at: url, model: loaded, progress: progress)
                : try StoreTools.verify(at: url, model: loaded, progress: progress)
        } text: { result in
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

    @OptionGroup var file: StoreFileOptions

    func execute() throws {
        try report(on: file, progress: "vacuuming", StoreTools.vacuum(at:progress:)) { url, result in
            print("Vacuumed \(url.path): \(result.bytesBefore) bytes → \(result.bytesAfter) bytes (database and write-ahead log)")
        }
    }
}

/// `objectgraph checkpoint STORE`: moves the write-ahead log into the database and truncates it.
struct Checkpoint: ToolCommand {
    static let configuration = CommandConfiguration(
        abstract: "Move an SQLite store's write-ahead log into the database and truncate the log (wal_checkpoint(TRUNCATE)).",
        discussion: "Exits with 1 when a reader or writer of another program kept part of the log (busy).")

    @OptionGroup var file: StoreFileOptions

    func execute() throws {
        let result = try report(on: file, progress: "checkpointing", { url, progress in
            progress(0, 1)
            defer { progress(1, 1) }
            return try StoreTools.checkpoint(at: url)
        }) { url, result in
            print("Checkpointed \(url.path): \(result.framesCheckpointed) of \(result.framesInLog) log frames moved; log \(result.walBytesBefore) → \(result.walBytesAfter) bytes\(result.busy ? " (busy: another connection kept part of the log)" : "")")
        }
        if result.busy { throw ExitCode(1) }
    }
}

/// The store file a maintenance command works on, and how it prints its result.
struct StoreFileOptions: ParsableArguments {
    @Argument(help: "The store's .sqlite file (verify: or a postgres:// URL).") var store: String
    @Flag(help: "Print the result as JSON.") var json = false

    /// The SQLite file of a command that works on files only.
    ///
    /// - Throws: ``CommandFailure`` for a PostgreSQL store's URL, saying what the server does instead.
    func file(for command: String) throws -> URL {
        if store.hasPrefix("postgres://") || store.hasPrefix("postgresql://") {
            throw CommandFailure(
                "\(command) works on SQLite store files; a PostgreSQL server vacuums its tables and checkpoints its log itself (autovacuum, checkpoints), or on demand with VACUUM and CHECKPOINT in psql")
        }
        return URL(fileURLWithPath: store)
    }
}

extension ToolCommand {
    /// Runs `work` under a progress bar labelled `label` (none with `--json`), then prints its
    /// result: as JSON when `json`, else as `text` writes it.
    @discardableResult
    func report<Result: Encodable>(
        json: Bool, progress label: String, _ work: (_ progress: (Int, Int) -> Void) throws -> Result, text: (Result) -> Void
    ) throws -> Result {
        let bar = TerminalProgress(enabled: !json)
        let result = try work { done, total in bar.show(done, of: total, label) }
        bar.finish()
        if json {
            print(String(decoding: try StoreTools.json(result), as: UTF8.self))
        } else {
            text(result)
        }
        return result
    }

    /// ``report(json:progress:_:text:)`` for a command that works on one store file: `work` and
    /// `text` get the file's URL.
    @discardableResult
    func report<Result: Encodable>(
        on file: StoreFileOptions, progress label: String, _ work: (URL, _ progress: (Int, Int) -> Void) throws -> Result,
        text: (URL, Result) -> Void
    ) throws -> Result {
        let url = try file.file(for: Self._commandName)
        return try report(json: file.json, progress: label, { progress in try withoutActuallyEscaping(progress) { try work(url, $0) } }, text: { text(url, $0) })
    }
}
