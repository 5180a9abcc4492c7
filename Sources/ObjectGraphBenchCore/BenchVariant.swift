import ArgumentParser

/// The three ways each workload runs.
package enum BenchVariant: String, CaseIterable, Codable, Sendable, ExpressibleByArgument {
    /// ObjectGraph's public API.
    case objectGraph = "objectgraph"
    /// The SQLite C API: prepared statements, one transaction — the floor.
    case raw
    /// GRDB's record API: what a Swift user would pick instead.
    case grdb

    package var title: String {
        switch self {
        case .objectGraph: "ObjectGraph"
        case .raw: "raw SQLite"
        case .grdb: "GRDB"
        }
    }
}
