import Foundation
import Hummingbird
import Logging
import ObjectGraph
import ObjectGraphPostgres
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
    public static func container(_ configuration: NotesServerConfiguration) throws -> PersistentContainer {
        let container = PersistentContainer(name: "Notes", managedObjectModel: NotesModel.make())
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

    /// The HTTP application over a container. Every answer with a server error (5xx) is logged on
    /// `logger`, with its error.
    public static func application(
        _ configuration: NotesServerConfiguration, container: PersistentContainer, logger: Logger = Logger(label: "NotesServer")
    ) -> some ApplicationProtocol {
        let router = Router()
        router.add(middleware: ServerErrorLogging())
        router.get("health") { _, _ in "ok" }
        NotesAPI(container: container).register(on: router)
        return Application(
            router: router, configuration: .init(address: .hostname(configuration.host, port: configuration.port)), logger: logger)
    }

    /// Runs the server until SIGTERM or SIGINT: the HTTP application and the container in one
    /// service group, which stops taking requests first, then lets the saves under way finish.
    public static func run(_ configuration: NotesServerConfiguration) async throws {
        var logger = Logger(label: "NotesServer")
        logger.logLevel = .info
        let container = try container(configuration)
        let application = application(configuration, container: container, logger: logger)
        logger.info("Notes on \(configuration.postgres.map { "PostgreSQL \($0.host ?? "")\($0.path)" } ?? configuration.sqliteFile.path)")
        let group = ServiceGroup(configuration: .init(
            services: [container, application], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        try await group.run()
    }
}
