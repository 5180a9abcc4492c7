// swift-tools-version:6.1
import CompilerPluginSupport
import PackageDescription

/// Scripts/fuzz builds with OBJECTGRAPH_FUZZ=1: ObjectGraphCore and objectgraph-fuzz are then
/// instrumented for libFuzzer with the address sanitizer (the macro and the dependencies are not).
let fuzzing = Context.environment["OBJECTGRAPH_FUZZ"] == "1"
let fuzzSwiftSettings: [SwiftSetting] = fuzzing ? [.unsafeFlags(["-sanitize=fuzzer,address"]), .define("OBJECTGRAPH_FUZZ")] : []

/// .ci/run's ThreadSanitizer pass builds with OBJECTGRAPH_TSAN=1: this package's own targets (the
/// library, the PostgreSQL driver, the tool and the tests) are then compiled and linked with
/// `-sanitize=thread`, and the dependencies are not, so that pass reuses their plain build.
let threadSanitizing = Context.environment["OBJECTGRAPH_TSAN"] == "1"
let tsanSwiftSettings: [SwiftSetting] = threadSanitizing ? [.unsafeFlags(["-sanitize=thread"])] : []
let tsanLinkerSettings: [LinkerSetting] = threadSanitizing ? [.unsafeFlags(["-sanitize=thread"])] : []

let package = Package(
    name: "ObjectGraph",
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
    products: [
        .library(name: "ObjectGraph", targets: ["ObjectGraph"]),
        // Everything but the macros, for a program that builds without swift-syntax.
        .library(name: "ObjectGraphCore", targets: ["ObjectGraphCore"]),
        // The PostgreSQL store's driver (over PostgresNIO): only a program that uses PostgreSQL
        // depends on it (and calls `PersistentStoreCoordinator.registerPostgresStore()`), so an app
        // on SQLite alone builds no SwiftNIO, TLS or cryptography module.
        .library(name: "ObjectGraphPostgres", targets: ["ObjectGraphPostgres"]),
        .executable(name: "objectgraph", targets: ["objectgraph"]),
        .executable(name: "objectgraph-bench", targets: ["objectgraph-bench"]),
        .executable(name: "objectgraph-fuzz", targets: ["objectgraph-fuzz"]),
    ],
    traits: [
        .trait(
            name: "PostgreSQL",
            description: "The objectgraph tool opens PostgreSQL stores (postgres:// URLs): it then links ObjectGraphPostgres, and with it SwiftNIO, TLS and cryptography"
        ),
    ],
    dependencies: [
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-distributed-tracing", from: "1.7.3"),
        // 600 (Swift 6.0) to 603 (Swift 6.3): the majors the macros build and pass their tests with
        // (Scripts/check-swift-syntax runs both ends), so that an app resolves beside other macro
        // packages; 604 follows Swift 6.4, untested.
        .package(url: "https://github.com/swiftlang/swift-syntax", "600.0.1"..<"604.0.0"),
        // The PostgreSQL store's driver (ObjectGraphPostgres), and the SwiftNIO parts it names itself.
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        // `swift package generate-documentation` (CI builds the docs); a plugin, not linked into anything.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        // The object graph, its stores and tools: everything but the macros' declarations.
        .target(
            name: "ObjectGraphCore",
            dependencies: [
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "GRDBSQLite", package: "GRDB.swift"),  // the C API, for the hot paths
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ],
            swiftSettings: fuzzSwiftSettings + tsanSwiftSettings,
            linkerSettings: tsanLinkerSettings
        ),
        // The PostgreSQL store's connections, over PostgresNIO, registered by the program that uses them.
        .target(
            name: "ObjectGraphPostgres",
            dependencies: [
                "ObjectGraphCore",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                // The pool's errors (`ConnectionPoolError`), which PostgresNIO does not export.
                .product(name: "_ConnectionPoolModule", package: "postgres-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: tsanSwiftSettings
        ),
        // What apps import: the core, re-exported, and the macros (@Managed, @Attribute, ...).
        .target(
            name: "ObjectGraph",
            dependencies: ["ObjectGraphCore", "ObjectGraphMacros"],
            swiftSettings: tsanSwiftSettings
        ),
        // The compiler plug-in: the macros' names, each handing its expansion to ObjectGraphMacroExpansions.
        .macro(
            name: "ObjectGraphMacros",
            dependencies: [
                "ObjectGraphMacroExpansions",
                .product(name: "SwiftSyntax", package: "swift-syntax"),
                .product(name: "SwiftSyntaxMacros", package: "swift-syntax"),
                .product(name: "SwiftCompilerPlugin", package: "swift-syntax"),
            ]
        ),
        // The macros' expansions, a library that the plug-in and the macro tests share. The tests
        // import it rather than the macro target: a test target that depends on a macro makes SwiftPM
        // build the whole test product, and everything it links, a second time for the host.
        .target(
            name: "ObjectGraphMacroExpansions",
            dependencies: [
                .product(name: "SwiftSyntax", package: "swift-syntax"),
                .product(name: "SwiftSyntaxBuilder", package: "swift-syntax"),
                .product(name: "SwiftSyntaxMacros", package: "swift-syntax"),
                .product(name: "SwiftDiagnostics", package: "swift-syntax"),
            ]
        ),
        .executableTarget(
            name: "objectgraph",
            dependencies: [
                // Not the macros: a first `swift run -c release objectgraph demo` compiles no swift-syntax.
                "ObjectGraphCore",
                // Nor SwiftNIO, unless the PostgreSQL trait asks for postgres:// URLs
                // (`swift run -c release --traits PostgreSQL objectgraph inspect postgres://…`).
                .target(name: "ObjectGraphPostgres", condition: .when(traits: ["PostgreSQL"])),
                "ObjectGraphCrashModels",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: tsanSwiftSettings
        ),
        // The benchmark (ObjectGraph against the raw SQLite C API and GRDB, or PostgresNIO): not part of the shipped tool.
        .executableTarget(
            name: "objectgraph-bench",
            dependencies: [
                "ObjectGraph",
                "ObjectGraphPostgres",
                "ObjectGraphBenchCore",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                // The floor of `--store postgres`: PostgresNIO's prepared statements.
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The libFuzzer targets (Scripts/fuzz, with OBJECTGRAPH_FUZZ=1); built plainly, a runner
        // of their corpus and crash files.
        .executableTarget(
            name: "objectgraph-fuzz",
            dependencies: ["ObjectGraphCore"],
            swiftSettings: fuzzSwiftSettings,
            linkerSettings: fuzzing ? [.unsafeFlags(["-sanitize=fuzzer,address"])] : []
        ),
        // The crash tests' models, shared by the tool's `_crash` commands and the tests that check the stores they leave.
        .target(name: "ObjectGraphCrashModels", dependencies: ["ObjectGraphCore"], swiftSettings: tsanSwiftSettings),
        // The benchmark's metrics, sizes, cross-checks, statistics and report: a library so that tests can reach them.
        .target(
            name: "ObjectGraphBenchCore",
            dependencies: [.product(name: "ArgumentParser", package: "swift-argument-parser")]
        ),
        .testTarget(
            name: "ObjectGraphTests",
            dependencies: [
                "ObjectGraph",
                "ObjectGraphCore",
                "ObjectGraphPostgres",
                "ObjectGraphCrashModels",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: tsanSwiftSettings
        ),
        .testTarget(
            name: "ObjectGraphBenchCoreTests",
            dependencies: ["ObjectGraphBenchCore"]
        ),
        .testTarget(
            name: "ObjectGraphMacrosTests",
            dependencies: [
                "ObjectGraphMacroExpansions",
                .product(name: "SwiftParser", package: "swift-syntax"),
                .product(name: "SwiftSyntaxMacroExpansion", package: "swift-syntax"),
                .product(name: "SwiftSyntaxMacrosGenericTestSupport", package: "swift-syntax"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
