import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import NotesServerCore
import ObjectGraph
import Prometheus
import Testing

@Suite("Logs and metrics")
struct ObservabilityTests {
    @Test func objectGraphAndHummingbirdBothLogOnTheLoggerTheServerIsGiven() async throws {
        let store = try TestStore(.sqlite)
        defer { store.remove() }
        let records = LogRecords()
        let container = try NotesServer.container(store.configuration, logger: records.logger())
        // Every operation is slow enough to be logged, so that ObjectGraph has something to say.
        container.persistentStoreCoordinator.slowOperationLogThreshold = .nanoseconds(1)
        try await NotesServer.application(store.configuration, container: container, logger: records.logger()).test(.live) { client in
            _ = try await client.send(.post, "/folders", #"{"name": "Inbox"}"#, as: FolderAnswer.self, expect: .created)
        }
        try await container.shutdown()
        let messages = records.all.map(\.message)
        #expect(records.all.contains { $0.level == .warning && $0.message.hasPrefix("slow ") && $0.metadata["coordinator"] == "Notes" }, "\(messages)")
        #expect(messages.contains { $0.hasPrefix("Server started") }, "\(messages)")
    }

    @Test func metricsAnswersObjectGraphsMetricsInPrometheusText() async throws {
        let store = try TestStore(.sqlite)
        defer { store.remove() }
        // A registry of this test's own: the process-wide metrics system is bootstrapped only by main.swift.
        let registry = PrometheusCollectorRegistry()
        let container = try NotesServer.container(store.configuration, logger: .quiet, metricsFactory: PrometheusMetricsFactory(registry: registry))
        let application = NotesServer.application(store.configuration, container: container, logger: .quiet, metrics: registry)
        try await application.test(.router) { client in
            _ = try await client.send(.post, "/folders", #"{"name": "Inbox"}"#, as: FolderAnswer.self, expect: .created)
            _ = try await client.send(.post, "/folders", #"{"name": "Work"}"#, as: FolderAnswer.self, expect: .created)
            let answer = try await client.execute(uri: "/metrics", method: .get)
            #expect(answer.status == .ok)
            #expect(answer.headers[.contentType]?.hasPrefix("text/plain; version=0.0.4") == true)
            let text = String(buffer: answer.body)
            let saves = text.split(separator: "\n").filter { $0.hasPrefix(ObjectGraphMetric.saves.rawValue + "{") }
            #expect(saves == [#"objectgraph_saves{coordinator="Notes"} 2"#], "\(text)")
            #expect(text.contains("# TYPE \(ObjectGraphMetric.fetchDuration.rawValue) histogram"), "\(text)")
        }
        try await container.shutdown()
    }

    @Test func withoutARegistryThereIsNoMetricsRoute() async throws {
        let store = try TestStore(.sqlite)
        defer { store.remove() }
        let container = try NotesServer.container(store.configuration, logger: .quiet)
        try await NotesServer.application(store.configuration, container: container, logger: .quiet).test(.router) { client async throws in
            #expect(try await client.execute(uri: "/metrics", method: .get).status == .notFound)
        }
        try await container.shutdown()
    }
}
