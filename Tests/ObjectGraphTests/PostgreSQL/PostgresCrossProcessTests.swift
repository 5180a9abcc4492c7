import Foundation
import Testing
import ObjectGraph
@testable import ObjectGraphCore

/// Two processes on one PostgreSQL database: this test process and a second run of the test
/// bundle that plays ``PostgresPeer`` (chosen by the environment), as two machines of a service would.
@Suite("PostgreSQL store: two processes on one database", .needsPostgreSQL)
struct PostgresCrossProcessTests {
    /// Runs the peer in a process of its own: `command` on the database at `url`; its output lines.
    func peer(_ url: URL, _ command: [String]) throws -> [String] {
        var environment = ProcessInfo.processInfo.environment
        environment[PostgresPeer.urlVariable] = url.absoluteString
        environment[PostgresPeer.commandVariable] = command.joined(separator: "\u{1F}")
        environment["SWIFT_BACKTRACE"] = "enable=no"
        let child = try ChildProcess(
            URL(fileURLWithPath: CommandLine.arguments[0]), ["--testing-library", "swift-testing", "--filter", "PostgresPeer"],
            environment: environment, mergingErrors: true)
        let (status, signaled) = child.wait()
        let output = String(decoding: child.standardOutput, as: UTF8.self)
        try #require(status == 0 && !signaled, "the peer failed: \(output)")
        return output.split(separator: "\n").compactMap { line in
            line.hasPrefix(PostgresPeer.prefix) ? String(line.dropFirst(PostgresPeer.prefix.count)) : nil
        }
    }

    @Test func aWriteInAnotherProcessReachesThisProcesssContexts() throws {
        let url = try PostgresTestServer.shared.get().makeDatabase()
        let coordinator = PersistentStoreCoordinator(managedObjectModel: TestModels.notes())
        try coordinator.addPersistentStore(type: .postgres, at: url)
        let recorder = RemoteChangeRecorder(coordinator)
        let view = ManagedObjectContext(concurrencyType: .privateQueue)
        view.persistentStoreCoordinator = coordinator
        view.automaticallyMergesChangesFromParent = true
        view.performAndWait { view.retainsRegisteredObjects = true }
        let setup = ManagedObjectContext(concurrencyType: .confinement)
        setup.persistentStoreCoordinator = coordinator
        let note = setup.insert("Note", ["title": "here", "rank": 1])
        try setup.save()
        let id = note.objectID
        #expect(try view.performAndWait { try view.existingObject(with: id).value(forKey: "title") as? String } == "here")

        let inserted = try peer(url, ["update", id.uriRepresentation().absoluteString, "there", "2", "insert", "new in the peer"])
        #expect(inserted.count == 1)
        #expect(eventually { view.performAndWait { view.registeredObject(for: id)?.value(forKey: "title") as? String } == "there" })
        // This process's save, then the peer's two.
        #expect(eventually { recorder.tokens.count == 3 })
        #expect(try view.performAndWait { try view.all("Note", sortedBy: "rank").map { $0.value(forKey: "title") as? String } } == ["new in the peer", "there"])
    }

    @Test("a conflict with another process resolves by each merge policy", arguments: PostgresStoreTests.policyOutcomes)
    func conflictsWithAnotherProcess(_ policy: MergePolicy, _ expected: (String, Int64)?) throws {
        let url = try PostgresTestServer.shared.get().makeDatabase()
        let coordinator = PersistentStoreCoordinator(managedObjectModel: TestModels.notes())
        try coordinator.addPersistentStore(type: .postgres, at: url)
        let context = ManagedObjectContext(concurrencyType: .confinement)
        context.persistentStoreCoordinator = coordinator
        context.mergePolicy = policy
        let note = context.insert("Note", ["title": "base", "rank": 1])
        try context.save()
        _ = try peer(url, ["update", note.objectID.uriRepresentation().absoluteString, "theirs", "2"])
        note.setValue("mine", forKey: "title")
        let outcome = Result { try context.save() }
        let stored = try peer(url, ["read", note.objectID.uriRepresentation().absoluteString])
        if let expected {
            if case .failure(let error) = outcome { Issue.record("the save failed: \(error)") }
            #expect(stored == ["\(expected.0) \(expected.1)"])
        } else {
            guard case .failure(let error) = outcome else { Issue.record("expected a conflict"); return }
            #expect((error as? ObjectGraphError)?.code == .mergeConflict)
            #expect(stored == ["theirs 2"])
        }
    }
}

/// The other process of ``PostgresCrossProcessTests``: a run of this test bundle with
/// `OBJECTGRAPH_PEER_URL` and `OBJECTGRAPH_PEER_COMMAND` set does what the command says and prints
/// its answers; in every other run (the suites' own) it is skipped.
@Suite("PostgresPeer", .enabled(if: ProcessInfo.processInfo.environment["OBJECTGRAPH_PEER_URL"] != nil), .needsPostgreSQL)
struct PostgresPeer {
    static let urlVariable = "OBJECTGRAPH_PEER_URL"
    static let commandVariable = "OBJECTGRAPH_PEER_COMMAND"
    /// Before each answer line, to tell it from the test runner's output.
    static let prefix = "peer> "

    /// Commands, in order: `insert TITLE` (prints the new note's URI), `update URI TITLE RANK`,
    /// `read URI` (prints "TITLE RANK").
    @Test func run() throws {
        let environment = ProcessInfo.processInfo.environment
        let url = try #require(environment[Self.urlVariable].flatMap(URL.init(string:)))
        var words = (environment[Self.commandVariable] ?? "").split(separator: "\u{1F}").map(String.init)[...]
        let coordinator = PersistentStoreCoordinator(managedObjectModel: TestModels.notes())
        try coordinator.addPersistentStore(type: .postgres, at: url)
        let context = ManagedObjectContext(concurrencyType: .confinement)
        context.persistentStoreCoordinator = coordinator
        func next() throws -> String {
            guard let word = words.popFirst() else { throw ObjectGraphError(.invalidFetchRequest, "The peer's command ends too soon") }
            return word
        }
        func object() throws -> ManagedObject {
            let id = try #require(URL(string: try next()).flatMap(coordinator.managedObjectID(forURIRepresentation:)))
            return try context.existingObject(with: id)
        }
        while let command = words.popFirst() {
            switch command {
            case "insert":
                let note = context.insert("Note", ["title": try next(), "rank": Int64(0)])
                try context.save()
                print(Self.prefix + note.objectID.uriRepresentation().absoluteString)
            case "update":
                let note = try object()
                note.setValue(try next(), forKey: "title")
                let text = try next()
                guard let rank = Int64(text, radix: 10) else { throw ObjectGraphError(.invalidFetchRequest, "'\(text)' is not a rank") }
                note.setValue(rank, forKey: "rank")
                try context.save()
            case "read":
                let note = try object()
                print(Self.prefix + "\(note.value(forKey: "title") as? String ?? "nil") \(note.value(forKey: "rank") as? Int64 ?? -1)")
            default:
                Issue.record("unknown peer command \(command)")
            }
        }
    }
}
