import Foundation
import InMemoryTracing
import Logging
import Metrics
import MetricsTestKit
import Testing
import Tracing
import ObjectGraph
@testable import ObjectGraphCore

@Suite("Metrics, tracing and the slow-operation log")
struct InstrumentationTests {
    /// A coordinator reporting to its own metrics and tracer (so that tests running at the same time
    /// do not mix their figures), with one store of the given kind.
    private final class Instrumented: @unchecked Sendable {
        let metrics = TestMetrics()
        let tracer = InMemoryTracer()
        let box = CapturingLogHandler.Box()
        let directory = TemporaryDirectory()
        let coordinator: PersistentStoreCoordinator

        init(_ kind: StoreKind, name: String? = "instrumented") throws {
            let box = box
            var logger = Logger(label: "objectgraph") { _ in CapturingLogHandler(box: box) }
            logger.logLevel = .trace
            coordinator = PersistentStoreCoordinator(
                managedObjectModel: TestModels.notes(), name: name, logger: logger, metricsFactory: metrics, tracer: tracer)
            try coordinator.addPersistentStore(type: kind.type, at: kind == .inMemory ? nil : directory.file("store.\(kind.rawValue)"))
        }

        func context(_ name: String) -> ManagedObjectContext {
            let context = ManagedObjectContext(concurrencyType: .confinement)
            context.name = name
            context.persistentStoreCoordinator = coordinator
            return context
        }

        func counter(_ metric: ObjectGraphMetric) -> Int64 {
            metrics.counterTotal(label: metric.rawValue, dimensions: [("coordinator", "instrumented")])
        }

        func timings(_ metric: ObjectGraphMetric) throws -> [Int64] {
            try metrics.expectTimer(metric.rawValue, [("coordinator", "instrumented")]).values
        }

        var spans: [String] { tracer.finishedSpans.map(\.operationName) }
    }

    @Test(arguments: StoreKind.allCases)
    func countersMoveByWhatASaveAFetchAndAFaultDid(kind: StoreKind) throws {
        let stack = try Instrumented(kind)
        let writer = stack.context("writer")
        let notes = (0..<3).map { writer.insert("Note", ["title": "Note \($0)", "rank": Int64($0)]) }
        try writer.save()
        #expect(stack.counter(.saves) == 1)
        #expect(stack.counter(.savedObjects) == 3)
        #expect(try stack.timings(.saveDuration).count == 1)
        #expect(stack.counter(.fetches) == 0)

        let reader = stack.context("reader")
        let request = FetchRequest<ManagedObject>(entityName: "Note")
        request.predicate = FetchPredicate(format: "rank >= %d", 1)
        #expect(try reader.fetch(request).count == 2)
        #expect(stack.counter(.fetches) == 1)
        #expect(stack.counter(.fetchedRows) == 2)
        #expect(try reader.count(for: request) == 2)
        #expect(stack.counter(.fetches) == 2)
        #expect(stack.counter(.fetchedRows) == 2, "a count returns no rows")
        #expect(try stack.timings(.fetchDuration).count == 2)

        // A fault no context has read: a miss, then one object read from the store; the same
        // object in a third context: a hit (the second one's object holds the row).
        let first = stack.context("first").object(with: notes[0].objectID)
        #expect(first.value(forKey: "title") as? String == "Note 0")
        #expect(stack.counter(.rowCacheMisses) == 1)
        #expect(stack.counter(.rowCacheHits) == 0)
        #expect(stack.counter(.faultsFromStore) == 1)
        #expect(try stack.timings(.faultDuration).count == 1)
        let second = stack.context("second").object(with: notes[0].objectID)
        #expect(second.value(forKey: "title") as? String == "Note 0")
        #expect(stack.counter(.rowCacheHits) == 1)
        #expect(stack.counter(.faultsFromStore) == 1)
        withExtendedLifetime(first) {}

        // Updates and deletes count as saved objects too.
        notes[1].setValue("Changed", forKey: "title")
        writer.delete(notes[2])
        try writer.save()
        #expect(stack.counter(.saves) == 2)
        #expect(stack.counter(.savedObjects) == 5)
    }

    @Test(arguments: StoreKind.allCases)
    func spansSurroundSavesFetchesFaultsAndBatchRequests(kind: StoreKind) throws {
        let stack = try Instrumented(kind)
        let writer = stack.context("writer")
        let note = writer.insert("Note", ["title": "Traced"])
        try writer.save()
        _ = try stack.context("reader").fetch(FetchRequest<ManagedObject>(entityName: "Note"))
        _ = stack.context("faulting").object(with: note.objectID).value(forKey: "title")
        let update = BatchUpdateRequest(entityName: "Note")
        update.propertiesToUpdate = ["rank": Int64(9)]
        _ = try writer.execute(update)
        #expect(stack.spans == ["ObjectGraph save", "ObjectGraph fetch", "ObjectGraph fault", "ObjectGraph batch request"])
        let save = try #require(stack.tracer.finishedSpans.first)
        #expect(save.attributes["objectgraph.inserted"]?.toSpanAttribute() == .int64(1))
        #expect(save.attributes["objectgraph.context"]?.toSpanAttribute() == .string("writer"))
        let fetch = stack.tracer.finishedSpans[1]
        #expect(fetch.attributes["objectgraph.entity"]?.toSpanAttribute() == .string("Note"))
        #expect(fetch.attributes["objectgraph.rows"]?.toSpanAttribute() == .int64(1))
        #expect(stack.counter(.batchRows) == 1)
    }

    @Test func aFailedSaveRecordsItsErrorOnTheSpanAndConflictsAreCounted() throws {
        let stack = try Instrumented(.sqlite)
        let setup = stack.context("setup")
        let note = setup.insert("Note", ["title": "Original"])
        try setup.save()
        let stale = stack.context("stale")
        let staleNote = stale.object(with: note.objectID)
        _ = staleNote.value(forKey: "title")
        note.setValue("First writer", forKey: "title")
        try setup.save()
        staleNote.setValue("Second writer", forKey: "title")
        #expect(throws: ObjectGraphError.self) { try stale.save() }
        #expect(stack.counter(.conflicts) == 1)
        #expect(stack.counter(.saves) == 2, "the failed save is not counted as written")
        let failed = try #require(stack.tracer.finishedSpans.last { $0.operationName == "ObjectGraph save" })
        #expect(failed.errors.count == 1)
    }

    @Test func historyRowsAreCounted() throws {
        let metrics = TestMetrics()
        let directory = TemporaryDirectory()
        let coordinator = PersistentStoreCoordinator(managedObjectModel: TestModels.notes(), name: "history", metricsFactory: metrics)
        try coordinator.addPersistentStore(
            type: .sqlite, at: directory.file("history.sqlite"), options: [PersistentStoreOption.persistentHistoryTracking: true])
        let context = ManagedObjectContext(concurrencyType: .confinement)
        context.persistentStoreCoordinator = coordinator
        for i in 0..<4 { context.insert("Note", ["title": "H\(i)"]) }
        try context.save()
        #expect(metrics.counterTotal(label: ObjectGraphMetric.historyRows.rawValue) == 4)
    }

    @Test func mergesAreCountedAndLogged() throws {
        let stack = try Instrumented(.inMemory)
        let writer = stack.context("writer")
        let reader = stack.context("reader")
        writer.insert("Note", ["title": "Merged"])
        try writer.save()
        #expect(stack.counter(.merges) == 0)
        reader.mergeChanges(ManagedObjectContext.SaveChanges(insertedObjectIDs: [], updatedObjectIDs: [], deletedObjectIDs: []))
        #expect(stack.counter(.merges) == 1)
        #expect(stack.box.messages.contains { $0.hasPrefix("debug merge into 'reader': 0 inserted") })
    }

    @Test func faultsFromTheStoreAreLoggedAtTraceLevel() throws {
        let stack = try Instrumented(.sqlite)
        let writer = stack.context("writer")
        let note = writer.insert("Note", ["title": "Logged"])
        try writer.save()
        _ = stack.context("reader").object(with: note.objectID).value(forKey: "title")
        #expect(stack.box.messages.contains { $0.hasPrefix("trace fault: 1 of 1 objects read from the store") })
    }

    @Test func operationsOverTheThresholdAreLoggedAsSlow() throws {
        let stack = try Instrumented(.sqlite)
        #expect(stack.coordinator.slowOperationLogThreshold == nil)
        let writer = stack.context("writer")
        writer.insert("Note", ["title": "Fast"])
        try writer.save()
        #expect(!stack.box.messages.contains { $0.contains("slow ") }, "no threshold, no slow log")

        stack.coordinator.slowOperationLogThreshold = .nanoseconds(1)
        #expect(stack.coordinator.slowOperationLogThreshold == .nanoseconds(1))
        writer.insert("Note", ["title": "Slow"])
        try writer.save()
        _ = try writer.fetch(FetchRequest<ManagedObject>(entityName: "Note"))
        let slow = stack.box.messages.filter { $0.hasPrefix("warning slow ") }
        #expect(slow.contains { $0.contains("save by 'writer': 1 inserted, 0 updated, 0 deleted") && $0.hasSuffix(" ms") })
        #expect(slow.contains { $0.contains("fetch of Note — 2 rows") })

        stack.coordinator.slowOperationLogThreshold = .seconds(3600)
        let before = stack.box.messages.count
        _ = try writer.fetch(FetchRequest<ManagedObject>(entityName: "Note"))
        #expect(stack.box.messages.count == before)
        stack.coordinator.slowOperationLogThreshold = nil
        #expect(stack.coordinator.slowOperationLogThreshold == nil)
    }

    @Test func withoutABackendNothingIsMeasured() throws {
        // Neither metrics nor tracing bootstrapped in this process: the coordinator keeps neither.
        let coordinator = PersistentStoreCoordinator(managedObjectModel: TestModels.notes())
        #expect(coordinator.instrumentation.metrics == nil)
        #expect(coordinator.instrumentation.tracer == nil)
        #expect(!coordinator.instrumentation.measuresTime)
    }

    @Test func aContainerPassesItsInstrumentationToItsCoordinator() throws {
        let metrics = TestMetrics()
        let container = PersistentContainer(name: "Instrumented", managedObjectModel: TestModels.notes(), metricsFactory: metrics)
        let description = PersistentStoreDescription()
        description.type = .inMemory
        container.persistentStoreDescriptions = [description]
        try container.loadPersistentStores()
        let context = container.newBackgroundContext()
        try context.performAndWait {
            context.insert("Note", ["title": "Contained"])
            try context.save()
        }
        #expect(metrics.counterTotal(label: ObjectGraphMetric.saves.rawValue, dimensions: [("coordinator", "Instrumented")]) == 1)
    }

    @Test func aMigrationIsTracedCountedAndLogged() throws {
        let directory = TemporaryDirectory()
        let url = directory.file("migrated.sqlite")
        try Migrating.with(NotesVersions.v1(), .sqlite, at: url) { context in
            context.insert("Note", ["title": "Before"])
        }
        let metrics = TestMetrics()
        let tracer = InMemoryTracer()
        let box = CapturingLogHandler.Box()
        let coordinator = PersistentStoreCoordinator(
            managedObjectModel: NotesVersions.v2(), name: "migrating",
            logger: Logger(label: "objectgraph") { _ in CapturingLogHandler(box: box) }, metricsFactory: metrics, tracer: tracer)
        try coordinator.addPersistentStore(type: .sqlite, at: url, options: Migrating.from(NotesVersions.v1()))
        #expect(metrics.counterTotal(label: ObjectGraphMetric.migrations.rawValue) == 1)
        #expect(tracer.finishedSpans.map(\.operationName) == ["ObjectGraph migration"])
        #expect(box.messages.contains { $0.hasPrefix("info migrating \(url.path): 1 step") })
        #expect(box.messages.contains { $0 == "info migrated \(url.path)" })
    }
}

@Suite("A merge that cannot read the store")
struct MergeReadFailureTests {
    @Test func theObjectsKeepTheirValuesAndTheFailureIsLogged() throws {
        let box = CapturingLogHandler.Box()
        let directory = TemporaryDirectory()
        let url = directory.file("broken.sqlite")
        let coordinator = PersistentStoreCoordinator(
            managedObjectModel: TestModels.notes(), name: "broken", logger: Logger(label: "objectgraph") { _ in CapturingLogHandler(box: box) })
        try coordinator.addPersistentStore(type: .sqlite, at: url)
        let context = ManagedObjectContext(concurrencyType: .confinement)
        context.name = "reader"
        context.persistentStoreCoordinator = coordinator
        let note = context.insert("Note", ["title": "Kept"])
        try context.save()
        // The store's file is replaced by bytes that are not a database: every read now fails.
        for suffix in ["-wal", "-shm"] { try? FileManager.default.removeItem(atPath: url.path + suffix) }
        try Data(repeating: 0x5A, count: 65_536).write(to: url)
        context.mergeChanges(ManagedObjectContext.SaveChanges(insertedObjectIDs: [], updatedObjectIDs: [note.objectID], deletedObjectIDs: []))
        #expect(note.value(forKey: "title") as? String == "Kept")
        let warning = try #require(box.messages.first { $0.hasPrefix("warning merge into 'reader': the changed objects could not be read") })
        #expect(warning.hasSuffix("1 keep their previous values"))
    }
}
