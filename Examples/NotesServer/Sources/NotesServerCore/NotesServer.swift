import Foundation
import Hummingbird
import Logging
import Metrics
import ObjectGraph
import ObjectGraphPostgres
import Prometheus
import ServiceLifecycle

/// Where the server keeps its notes, and where it listens.
public struct NotesServerConfiguration: Sendable {
    /// A `postgres://` URL (several instances share its database), or nil for an SQLite file.
    public var postgres: URL?
    /// The SQLite file when there is no PostgreSQL URL.
    public var sqliteFile: URL
    public var host: String
    /// 0: a free port, the system's choice.
    public var port: Int

    public init(postgres: URL? = nil, sqliteFile: URL = URL(fileURLWithPath: "Notes.sqlite"), host: String = "127.0.0.1", port: Int = 8080) {
        self.postgres = postgres
        self.sqliteFile = sqliteFile
        self.host = host
        self.port = port
    }

    /// From the command line: `[--postgres URL] [--sqlite FILE] [--host HOST] [--port PORT]`.
    public init(arguments: [String]) throws {
        self.init()
        var rest = arguments[...]
        while let option = rest.popFirst() {
            guard let value = rest.popFirst() else { throw ConfigurationError("\(option) needs a value") }
            switch option {
            case "--postgres":
                guard let url = URL(string: value), url.scheme?.hasPrefix("postgres") == true else { throw ConfigurationError("--postgres needs a postgres:// URL") }
                postgres = url
            case "--sqlite": sqliteFile = URL(fileURLWithPath: value)
            case "--host": host = value
            case "--port":
                guard let number = Int(value), (0...65535).contains(number) else { throw ConfigurationError("--port needs a port number") }
                port = number
            default: throw ConfigurationError("Unknown option \(option) (known: --postgres, --sqlite, --host, --port)")
            }
        }
    }
}

public struct ConfigurationError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}

public enum NotesServer {
    /// The container, its store loaded: the PostgreSQL database, or the SQLite file.
    ///
    /// ObjectGraph logs on `logger` (the application's: store migrations, slow operations, merge
    /// failures), records its metrics (`objectgraph_…`) with `metricsFactory`, or with the backend
    /// the app bootstrapped (`MetricsSystem.bootstrap`) when nil, and traces with the tracer the
    /// app bootstrapped (`InstrumentationSystem.bootstrap`), if any.
    public static func container(
        _ configuration: NotesServerConfiguration, logger: Logger, metricsFactory: (any MetricsFactory)? = nil
    ) throws -> PersistentContainer {
        let container = PersistentContainer(name: "Notes", managedObjectModel: NotesModel.make(), logger: logger, metricsFactory: metricsFactory)
        let description: PersistentStoreDescription
        if let postgres = configuration.postgres {
            PersistentStoreCoordinator.registerPostgresStore()
            description = PersistentStoreDescription(url: postgres)
            description.type = .postgres
        } else {
            description = PersistentStoreDescription(url: configuration.sqliteFile)
        }
        container.persistentStoreDescriptions = [description]
        try container.loadPersistentStores()
        return container
    }

    /// The HTTP application over a container, logging on `logger` (the application's). Every
    /// answer with a server error (5xx) is logged there, with its error. With `metrics`,
    /// `GET /metrics` answers the registry's metrics in Prometheus's text format.
    ///
    /// - Parameter onServerRunning: called with the port once the server listens (the system's
    ///   choice when the configuration's port is 0).
    public static func application(
        _ configuration: NotesServerConfiguration, container: PersistentContainer, logger: Logger,
        metrics: PrometheusCollectorRegistry? = nil, onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
    ) -> some ApplicationProtocol {
        application(configuration, api: NotesAPI(container: container), logger: logger, metrics: metrics, onServerRunning: onServerRunning)
    }

    /// The HTTP application over `api` (whose hooks tests set).
    static func application(
        _ configuration: NotesServerConfiguration, api: NotesAPI, logger: Logger,
        metrics: PrometheusCollectorRegistry? = nil, onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
    ) -> some ApplicationProtocol {
        let router = Router()
        router.add(middleware: ServerErrorLogging())
        // Inside the logging: a 503 is a server error, and logged with the store's error.
        router.add(middleware: StoreUnavailable())
        router.get("health") { _, _ in "ok" }
        if let metrics { router.get("metrics") { _, _ in PrometheusText(registry: metrics) } }
        api.register(on: router)
        return Application(
            router: router, configuration: .init(address: .hostname(configuration.host, port: configuration.port)),
            onServerRunning: { channel in await onServerRunning(channel.localAddress?.port ?? configuration.port) },
            logger: logger)
    }

    /// The HTTP application and the container as one service group, which on SIGTERM or SIGINT
    /// (or `triggerGracefulShutdown()`) stops taking connections first, answers the requests under
    /// way, then lets the container finish the saves under way and close its store.
    public static func serviceGroup(container: PersistentContainer, application: some ApplicationProtocol, logger: Logger) -> ServiceGroup {
        // Shut down in reverse order: the application, then the container it saves through.
        ServiceGroup(configuration: .init(services: [container, application], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
    }

    /// Runs the server until SIGTERM or SIGINT, logging on `logger` and answering `GET /metrics`
    /// from `metrics` (the registry of the metrics backend the app bootstrapped, which ObjectGraph
    /// records into).
    public static func run(_ configuration: NotesServerConfiguration, logger: Logger, metrics: PrometheusCollectorRegistry? = nil) async throws {
        let container = try container(configuration, logger: logger)
        let application = application(configuration, container: container, logger: logger, metrics: metrics)
        logger.info("Notes on \(configuration.postgres.map { "PostgreSQL \($0.host ?? "")\($0.path)" } ?? configuration.sqliteFile.path)")
        try await serviceGroup(container: container, application: application, logger: logger).run()
    }
}
