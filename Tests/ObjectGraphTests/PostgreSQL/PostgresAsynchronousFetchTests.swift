import Foundation
import Logging
import Testing
import ObjectGraph
@testable import ObjectGraphCore

/// An asynchronous fetch on PostgreSQL reads without blocking its context's queue: the queue runs
/// other blocks while the server answers, and the objects are registered back on it, as a
/// synchronous fetch registers them.
@Suite("PostgreSQL asynchronous fetches leave the context's queue free", .needsPostgreSQL)
struct PostgresAsynchronousFetchTests {
    /// Five notes in two folders.
    private func seeded() throws -> TestStack {
        let stack = try TestStack(.postgres)
        let context = stack.context("seed")
        let folders = [context.insert("Folder", ["name": "inbox"]), context.insert("Folder", ["name": "archive"])]
        for i in 0..<5 { context.insert("Note", ["title": "n\(i)", "rank": Int64(i), "folder": folders[i % 2]]) }
        try context.save()
        return stack
    }

    /// What happened, in order, on the context's queue.
    final class Events: @unchecked Sendable {  // appended to on the context's queue only; read after `done`
        var list: [String] = []
        var titles: [String]?
        var folders: [String]?
        var error: (any Error)?
        let done = DispatchSemaphore(value: 0)
    }

    private func execute(
        _ request: FetchRequest<ManagedObject>, on context: ManagedObjectContext, events: Events, readFolders: Bool = false
    ) throws {
        let fetch = AsynchronousFetchRequest(fetchRequest: request) { result in
            events.list.append("completion")
            events.titles = result.finalResult?.compactMap { $0.value(forKey: "title") as? String }
            if readFolders {
                events.folders = result.finalResult?.compactMap { ($0.value(forKey: "folder") as? ManagedObject)?.value(forKey: "name") as? String }
            }
            events.error = result.operationError
            events.done.signal()
        }
        try context.performAndWait { _ = try context.execute(fetch) }
    }

    /// While the server holds the fetch back (its table locked by another transaction), a block
    /// submitted to the context after the fetch runs at once; the fetch completes once the lock
    /// goes. A fetch that blocked the queue would run that block only after its completion.
    @Test(.timeLimit(.minutes(10)))
    func theQueueRunsOtherBlocksWhileTheServerReads() throws {
        let stack = try seeded()
        let driver = try PostgresDrivers.factory().connect(url: stack.storeURL, maximumConnections: 1, logger: Logger(label: "test"))
        defer { driver.close() }
        let locked = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let holder = Thread {
            try? driver.transaction(isolation: .readCommitted, readOnly: false) { session in
                try session.execute("LOCK TABLE \"ZNOTE\" IN ACCESS EXCLUSIVE MODE", [])
                locked.signal()
                // Let go after a while whatever happens, so that a blocking fetch fails the test
                // rather than hanging it.
                _ = release.wait(timeout: .now() + 3)
            }
        }
        holder.start()
        locked.wait()

        let context = stack.privateContext()
        let events = Events()
        let request = FetchRequest<ManagedObject>(entityName: "Note")
        request.sortDescriptors = [FetchSortDescriptor(key: "rank")]
        try execute(request, on: context, events: events)
        context.performAndWait { events.list.append("another block") }
        release.signal()
        #expect(events.done.wait(timeout: .now() + 30) == .success)
        #expect(events.list == ["another block", "completion"])
        #expect(events.titles == ["n0", "n1", "n2", "n3", "n4"])
        #expect(events.error == nil)
    }

    /// The folders a prefetch names come in the fetch's one statement, filled: reading their names
    /// afterwards reads nothing.
    @Test func aToOnePrefetchIsReadWithTheRows() throws {
        let stack = try seeded()
        let context = stack.privateContext()
        let events = Events()
        let request = FetchRequest<ManagedObject>(entityName: "Note")
        request.sortDescriptors = [FetchSortDescriptor(key: "rank")]
        request.relationshipKeyPathsForPrefetching = ["folder"]
        request.returnsObjectsAsFaults = false
        let before = stack.coordinator.statistics.sqlStatements
        try execute(request, on: context, events: events, readFolders: true)
        #expect(events.done.wait(timeout: .now() + 30) == .success)
        #expect(events.titles == ["n0", "n1", "n2", "n3", "n4"])
        #expect(events.folders == ["inbox", "archive", "inbox", "archive", "inbox"])
        #expect(stack.coordinator.statistics.sqlStatements - before == 1)
    }

    /// Unsaved changes the fetch must see, and a fetch PostgreSQL does not answer in one
    /// statement, are fetched on the queue as before, with the same answers.
    @Test func unsavedChangesAndFetchesOfSeveralStatementsGetTheSameAnswers() throws {
        let stack = try seeded()
        let context = stack.privateContext()
        context.performAndWait { _ = context.insert("Note", ["title": "unsaved", "rank": Int64(10)]) }
        let events = Events()
        let request = FetchRequest<ManagedObject>(entityName: "Note")
        request.predicate = FetchPredicate(format: "rank >= 3")
        request.sortDescriptors = [FetchSortDescriptor(key: "rank")]
        try execute(request, on: context, events: events)
        #expect(events.done.wait(timeout: .now() + 30) == .success)
        #expect(events.titles == ["n3", "n4", "unsaved"])

        let batched = Events()
        let inBatches = FetchRequest<ManagedObject>(entityName: "Note")
        inBatches.sortDescriptors = [FetchSortDescriptor(key: "rank")]
        inBatches.fetchBatchSize = 2
        try execute(inBatches, on: stack.privateContext(), events: batched)
        #expect(batched.done.wait(timeout: .now() + 30) == .success)
        #expect(batched.titles == ["n0", "n1", "n2", "n3", "n4"])
    }

    /// A store error reaches the completion as the result's error.
    @Test func aStoreErrorReachesTheCompletion() throws {
        let stack = try seeded()
        _ = try PostgresTestServer.shared.get().psql("DROP TABLE \"ZNOTE\" CASCADE", database: stack.storeURL.lastPathComponent)
        let events = Events()
        try execute(FetchRequest<ManagedObject>(entityName: "Note"), on: stack.privateContext(), events: events)
        #expect(events.done.wait(timeout: .now() + 30) == .success)
        #expect(events.titles == nil)
        #expect((events.error as? ObjectGraphError)?.message.contains("ZNOTE") == true, "\(String(describing: events.error))")
    }
}
