import ArgumentParser
import Foundation
import ObjectGraphCore
#if PostgreSQL
import ObjectGraphPostgres
#endif

/// The store a command works on: a file's path, or a PostgreSQL store's URL
/// (`postgres://user@host:port/database[?schema=NAME]`).
///
/// The tool opens PostgreSQL stores when it is built with the package's `PostgreSQL` trait, which
/// links ObjectGraphPostgres (SwiftNIO, TLS, cryptography); without it, so that a first
/// `swift run -c release objectgraph demo` builds none of them, a `postgres://` URL is refused
/// with the command that builds the tool with it.
enum StoreLocation {
    case file(URL)
    case postgres(URL)

    /// What a `postgres://` URL gets from a tool built without the trait.
    static let builtWithoutPostgreSQL = """
        this objectgraph was built without PostgreSQL; build it with the package's PostgreSQL trait to open postgres:// stores: \
        swift run -c release --traits PostgreSQL objectgraph <command> postgres://…
        """

    /// - Throws: ``CommandFailure`` for a `postgres://` URL the tool cannot open.
    init(_ argument: String) throws {
        guard argument.hasPrefix("postgres://") || argument.hasPrefix("postgresql://") else {
            self = .file(URL(fileURLWithPath: argument))
            return
        }
        guard let url = URL(string: argument) else { throw CommandFailure("\(argument) is not a valid PostgreSQL URL") }
        #if PostgreSQL
        _ = Self.registerPostgreSQL
        self = .postgres(url)
        #else
        throw CommandFailure(Self.builtWithoutPostgreSQL)
        #endif
    }

    #if PostgreSQL
    /// The PostgreSQL store, registered once, the first time a command names one.
    private static let registerPostgreSQL: Void = PersistentStoreCoordinator.registerPostgresStore()
    #endif

    var url: URL {
        switch self {
        case .file(let url), .postgres(let url): url
        }
    }

    var isPostgreSQL: Bool {
        if case .postgres = self { true } else { false }
    }

    /// How messages name the store: the file's path, or the URL without its password.
    var shown: String {
        switch self {
        case .file(let url): return url.path
        case .postgres(let url):
            var components = URLComponents(url: url, resolvingAgainstBaseURL: false)
            if components?.password != nil { components?.password = "…" }
            return components?.string ?? url.absoluteString
        }
    }
}
