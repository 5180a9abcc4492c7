import Foundation
import Logging
import Testing
import ObjectGraph
@testable import ObjectGraphCore

/// A swift-log handler that keeps every message.
struct CapturingLogHandler: LogHandler {
    final class Box: @unchecked Sendable {  // `lines` is guarded by `lock`
        private let lock = NSLock()
        private var lines: [String] = []
        func append(_ line: String) { lock.withLock { lines.append(line) } }
        var messages: [String] { lock.withLock { lines } }
    }

    let box: Box
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .info

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        box.append("\(event.level) \(event.message)")
    }
}

@Suite("SQL debug log")
struct SQLDebugLogTests {
    private func stack(level: Int) throws -> (PersistentStoreCoordinator, CapturingLogHandler.Box, TemporaryDirectory) {
        let box = CapturingLogHandler.Box()
        let directory = TemporaryDirectory()
        let coordinator = PersistentStoreCoordinator(
            managedObjectModel: TestModels.notes(), logger: Logger(label: "objectgraph") { _ in CapturingLogHandler(box: box) })
        try coordinator.addPersistentStore(
            type: .sqlite, at: directory.file("log.sqlite"), options: [PersistentStoreOption.sqlDebugLevel: level])
        return (coordinator, box, directory)
    }

    private func saveAndFetch(_ coordinator: PersistentStoreCoordinator) throws {
        let context = ManagedObjectContext(concurrencyType: .confinement)
        context.persistentStoreCoordinator = coordinator
        context.insert("Note", ["title": "Secret title", "rank": Int64(7)])
        try context.save()
        let request = FetchRequest<ManagedObject>(entityName: "Note")
        request.predicate = FetchPredicate(format: "rank > %d", 3)
        #expect(try context.fetch(request).count == 1)
    }

    @Test func levelOneLogsASavesSQLWithoutItsValues() throws {
        let (coordinator, box, directory) = try stack(level: 1)
        try withExtendedLifetime(directory) { try saveAndFetch(coordinator) }
        let messages = box.messages
        let insert = try #require(messages.first { $0.contains("INSERT INTO \"ZNOTE\"") || $0.contains("INSERT INTO ZNOTE") })
        #expect(insert.hasPrefix("info "))
        #expect(insert.contains(" ms"))
        #expect(!messages.contains { $0.contains("Secret title") })
        #expect(messages.contains { $0.contains("save: 1 inserted, 0 updated, 0 deleted") })
        #expect(messages.contains { $0.contains("SELECT") && $0.contains("ZNOTE") })
        #expect(!messages.contains { $0.contains("QUERY PLAN") })
    }

    @Test func levelThreeShowsTheValuesAndLevelTwoTheRowsChanged() throws {
        let (two, twoBox, twoDirectory) = try stack(level: 2)
        try withExtendedLifetime(twoDirectory) { try saveAndFetch(two) }
        #expect(twoBox.messages.contains { $0.contains("INSERT INTO") && $0.contains("1 row changed") })
        #expect(!twoBox.messages.contains { $0.contains("Secret title") })
        let (three, threeBox, threeDirectory) = try stack(level: 3)
        try withExtendedLifetime(threeDirectory) { try saveAndFetch(three) }
        #expect(threeBox.messages.contains { $0.contains("INSERT INTO") && $0.contains("'Secret title'") })
    }

    @Test func levelFourLogsTheQueryPlanOfAFetch() throws {
        let (coordinator, box, directory) = try stack(level: 4)
        try withExtendedLifetime(directory) { try saveAndFetch(coordinator) }
        let plan = try #require(box.messages.first { $0.contains("QUERY PLAN of SELECT") })
        #expect(plan.contains("SCAN") || plan.contains("SEARCH"))
    }

    @Test(.enabled(if: SQLDebugLog.environmentLevel == 0, "OBJECTGRAPH_SQL_DEBUG is set for this run"))
    func levelZeroLogsNothing() throws {
        let (coordinator, box, directory) = try stack(level: 0)
        try withExtendedLifetime(directory) { try saveAndFetch(coordinator) }
        #expect(box.messages.isEmpty)
    }

    @Test func aLevelOutOfRangeIsRefused() throws {
        let coordinator = PersistentStoreCoordinator(managedObjectModel: TestModels.notes())
        let directory = TemporaryDirectory()
        let error = try #require(throws: ObjectGraphError.self) {
            try coordinator.addPersistentStore(type: .sqlite, at: directory.file("s.sqlite"), options: [PersistentStoreOption.sqlDebugLevel: 9])
        }
        #expect(error.code == .unsupported)
        #expect(error.message.contains(PersistentStoreOption.sqlDebugLevel))
    }

    @Test func theEnvironmentTurnsItOnInAChildProcess() throws {
        let result = try runTool(["demo", "--notes", "200", "--batch", "100"], environment: ["OBJECTGRAPH_SQL_DEBUG": "1"])
        #expect(result.status == 0, "\(result.output.suffix(2000))")
        #expect(result.output.contains("INSERT INTO"))
    }
}
