import Foundation
import Logging
import Metrics
import NotesServerCore
import Prometheus

// swift run NotesServer                                         notes in ./Notes.sqlite, on 127.0.0.1:8080
// swift run NotesServer --postgres postgres://user@host/db --port 8081     notes in PostgreSQL
//
// The process's one logger, handed to the server, which hands it to ObjectGraph and Hummingbird.
let logger = {
    var logger = Logger(label: "NotesServer")
    logger.logLevel = .info
    return logger
}()

// The metrics backend, bootstrapped once for the process before the container exists: ObjectGraph
// records its `objectgraph_…` metrics into it, and `GET /metrics` answers them. A tracer
// bootstrapped here (`InstrumentationSystem.bootstrap`, e.g. swift-otel's) would get ObjectGraph's
// spans of saves, fetches and faults the same way.
let registry = PrometheusCollectorRegistry()
MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))

do {
    let configuration = try NotesServerConfiguration(arguments: Array(CommandLine.arguments.dropFirst()))
    try await NotesServer.run(configuration, logger: logger, metrics: registry)
} catch {
    FileHandle.standardError.write(Data("NotesServer: \(error)\n".utf8))
    exit(1)
}
