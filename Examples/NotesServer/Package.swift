// swift-tools-version:6.1
import PackageDescription

// A small HTTP service that keeps notes and folders with ObjectGraph: on SQLite by default, on
// PostgreSQL when given a URL (several instances then share one database).
let package = Package(
    name: "NotesServer",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "NotesServer", targets: ["NotesServer"]),
        // The routes and the service group, for packages that start servers of their own (Examples/LoadTest).
        .library(name: "NotesServerCore", targets: ["NotesServerCore"]),
    ],
    dependencies: [
        .package(name: "ObjectGraph", path: "../.."),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
    ],
    targets: [
        .executableTarget(
            name: "NotesServer",
            dependencies: [
                "NotesServerCore",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ]
        ),
        // The model, the routes and the service group: a library, so that the tests start servers of their own.
        .target(
            name: "NotesServerCore",
            dependencies: [
                .product(name: "ObjectGraph", package: "ObjectGraph"),
                .product(name: "ObjectGraphPostgres", package: "ObjectGraph"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ]
        ),
        .testTarget(
            name: "NotesServerTests",
            dependencies: [
                "NotesServerCore",
                .product(name: "ObjectGraph", package: "ObjectGraph"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
