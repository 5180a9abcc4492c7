import Foundation
import ObjectGraphBenchCore
import PostgresNIO

/// The floor on PostgreSQL (`--store postgres`): the workloads as PostgresNIO's prepared
/// statements run them, one connection per store (a schema of its own), the statements the raw
/// SQLite side runs in the same order and transactions. Each timed block runs inside one task, so
/// the times are PostgresNIO's and the server's, not the benchmark's hand-over to async code.
///
/// The ObjectGraph-only workloads (`readwrite`, `merge`, `frc_merge`) are not run on PostgreSQL
/// (``BenchStore/runs(_:)``); their methods here say so if called.
final class RawPostgresSide: BenchSide {
    let variant = BenchVariant.raw
    let postgres: BenchPostgres
    private var connections: [String: PostgresConnection] = [:]

    init(postgres: BenchPostgres) {
        self.postgres = postgres
    }

    deinit {
        for connection in connections.values { try? connection.close().wait() }
    }

    private var logger: Logger { postgres.requestLogger }

    // MARK: - Databases

    /// The connection of store `kind` of `rows` rows, seeded (untimed) on first use.
    private func database(_ kind: String, rows: Int) throws -> PostgresConnection {
        let name = "\(kind)-\(rows)"
        if let connection = connections[name] { return connection }
        let connection = try postgres.connect(schema: postgres.schema(variant, name))
        let table = kind == "entries" ? "entry" : "item"
        let exists = try postgres.int64(connection, "SELECT COUNT(*) FROM pg_tables WHERE schemaname = current_schema() AND tablename = '\(table)'")
        if exists == 0 {
            try seed(connection, kind: kind, rows: rows)
        }
        let existing = try postgres.int64(connection, "SELECT COUNT(*) FROM \(table)")
        guard existing == rows else { throw BenchError("schema \(postgres.schema(variant, name)) holds \(existing) rows, not \(rows)") }
        connections[name] = connection
        return connection
    }

    private func seed(_ connection: PostgresConnection, kind: String, rows: Int) throws {
        if kind == "entries" {
            for sql in RawPostgres.createEntries { try postgres.run(connection, sql) }
            let logger = self.logger
            try postgres.blocking {
                try await connection.query("BEGIN", logger: logger)
                for row in 0..<rows {
                    let entry = BenchData.entry(row)
                    try await RawPostgres.run(RawPostgres.InsertEntry(name: entry.name, score: entry.score), on: connection, logger: logger)
                }
                try await connection.query("COMMIT", logger: logger)
            }
        } else {
            try postgres.run(connection, RawPostgres.createItems)
            try insertItems(connection, count: rows)
        }
    }

    /// A new, empty item store and a function that drops it.
    private func newDatabase(_ name: String) throws -> (PostgresConnection, remove: () -> Void) {
        let schema = postgres.schema(variant, "\(name)-\(UUID().uuidString.prefix(8))")
        let connection = try postgres.connect(schema: schema)
        try postgres.run(connection, RawPostgres.createItems)
        let postgres = self.postgres
        return (connection, {
            try? connection.close().wait()
            try? postgres.dropSchema(schema)
        })
    }

    /// Inserts items 0..<count, one prepared INSERT each, in one transaction.
    private func insertItems(_ connection: PostgresConnection, count: Int) throws {
        let logger = self.logger
        try postgres.blocking {
            try await Self.insertItems(connection, count: count, logger: logger)
        }
    }

    private static func insertItems(_ connection: PostgresConnection, count: Int, logger: Logger) async throws {
        try await connection.query("BEGIN", logger: logger)
        for row in 0..<count {
            try await RawPostgres.run(RawPostgres.InsertItem(value: Int64(row)), on: connection, logger: logger)
        }
        try await connection.query("COMMIT", logger: logger)
    }

    private static func readAllItems(_ connection: PostgresConnection, logger: Logger) async throws -> (Int, Int64) {
        var count = 0
        var checksum: Int64 = 0
        for try await item in try await connection.execute(RawPostgres.SelectItems(), logger: logger) {
            checksum &+= item.checksum
            count += 1
        }
        return (count, checksum)
    }

    func prepare(_ metric: Metric, sizes: BenchSizes) throws {
        switch metric.workload {
        case .readwrite, .merge, .frcMerge: throw Self.notOnPostgres(metric.rawValue)
        default: if let store = BenchStores.kept(by: metric, sizes: sizes) { _ = try database(store.kind, rows: store.rows) }
        }
    }

    private static func notOnPostgres(_ workload: String) -> BenchError {
        BenchError("\(workload) is not run on PostgreSQL")
    }

    // MARK: - Workloads

    func insert(count: Int, access: BenchAccess) throws -> BenchSample {
        let (connection, remove) = try newDatabase("insert")
        defer { remove() }
        let logger = self.logger
        return try postgres.blocking {
            let seconds = try await BenchClock.seconds { try await Self.insertItems(connection, count: count, logger: logger) }
            let (rows, checksum) = try await Self.readAllItems(connection, logger: logger)
            return BenchSample(seconds: seconds, rows: rows, checksum: checksum)
        }
    }

    func fetch(rows: Int, access: BenchAccess) throws -> BenchSample {
        try readAllItemsTimed(rows: rows)
    }

    /// Every item of the `rows`-item store, read in one statement. Timed: the statement and reading its rows.
    private func readAllItemsTimed(rows: Int) throws -> BenchSample {
        let connection = try database("items", rows: rows)
        let logger = self.logger
        return try postgres.blocking {
            let (seconds, (count, checksum)) = try await BenchClock.measure { try await Self.readAllItems(connection, logger: logger) }
            return BenchSample(seconds: seconds, rows: count, checksum: checksum)
        }
    }

    /// The items at `picks`, one prepared point lookup each, in one read transaction.
    private static func pointLookups(_ connection: PostgresConnection, picks: [Int], logger: Logger) async throws -> [RawPostgres.Item] {
        var items: [RawPostgres.Item] = []
        items.reserveCapacity(picks.count)
        try await connection.query("BEGIN", logger: logger)
        for row in picks {
            var found: RawPostgres.Item?
            for try await item in try await connection.execute(RawPostgres.SelectItem(id: Int64(row + 1)), logger: logger) { found = item }
            guard let found else { throw BenchError("no item with id \(row + 1)") }
            items.append(found)
        }
        try await connection.query("COMMIT", logger: logger)
        return items
    }

    func fault(rows: Int, picks: [Int]) throws -> BenchSample {
        let connection = try database("items", rows: rows)
        let logger = self.logger
        return try postgres.blocking {
            let (seconds, checksum) = try await BenchClock.measure {
                try await Self.pointLookups(connection, picks: picks, logger: logger).reduce(Int64(0)) { $0 &+ $1.values.0 }
            }
            return BenchSample(seconds: seconds, rows: picks.count, checksum: checksum)
        }
    }

    func cacheHit(rows: Int, picks: [Int]) throws -> BenchSample {
        let connection = try database("items", rows: rows)
        let logger = self.logger
        return try postgres.blocking {
            let (seconds, checksum) = try await BenchClock.measure {
                try await Self.pointLookups(connection, picks: picks, logger: logger).reduce(Int64(0)) { $0 &+ $1.checksum }
            }
            return BenchSample(seconds: seconds, rows: picks.count, checksum: checksum)
        }
    }

    /// One statement whose rows PostgresNIO streams (with back pressure): the cursor of the others.
    func batched(rows: Int, batchSize: Int) throws -> BenchSample {
        try readAllItemsTimed(rows: rows)
    }

    func predicate(rows: Int, prefixes: [String], limit: Int) throws -> BenchSample {
        let connection = try database("entries", rows: rows)
        let logger = self.logger
        return try postgres.blocking {
            let (seconds, (count, checksum)) = try await BenchClock.measure {
                var count = 0
                var checksum: Int64 = 0
                for prefix in prefixes {
                    for try await (_, name, score) in try await connection.execute(
                        RawPostgres.SelectEntries(prefix: prefix, limit: limit), logger: logger)
                    {
                        BenchSink.consume(name)
                        checksum &+= score
                        count += 1
                    }
                }
                return (count, checksum)
            }
            return BenchSample(seconds: seconds, rows: count, checksum: checksum)
        }
    }

    private static func currentI0(_ connection: PostgresConnection, logger: Logger) async throws -> [(id: Int64, i0: Int64)] {
        var rows: [(id: Int64, i0: Int64)] = []
        for try await (id, i0) in try await connection.execute(RawPostgres.SelectI0(), logger: logger) { rows.append((id, i0)) }
        return rows
    }

    func updateInOneSave(rows: Int, access: BenchAccess) throws -> BenchSample {
        let connection = try database(BenchStores.update(access), rows: rows)
        let logger = self.logger
        return try postgres.blocking {
            let current = try await Self.currentI0(connection, logger: logger)
            let (seconds, checksum) = try await BenchClock.measure {
                var checksum: Int64 = 0
                try await connection.query("BEGIN", logger: logger)
                for (id, i0) in current {
                    try await RawPostgres.run(RawPostgres.UpdateI0(value: i0 + 1, id: id), on: connection, logger: logger)
                    checksum &+= i0 + 1
                }
                try await connection.query("COMMIT", logger: logger)
                return checksum
            }
            return BenchSample(seconds: seconds, rows: current.count, checksum: checksum)
        }
    }

    func updateInSeparateSaves(rows: Int, saves: Int) throws -> BenchSample {
        let connection = try database("update", rows: rows)
        let logger = self.logger
        return try postgres.blocking {
            let current = try await Self.currentI0(connection, logger: logger).prefix(saves)
            let (seconds, checksum) = try await BenchClock.measure {
                var checksum: Int64 = 0
                for (id, i0) in current {
                    try await connection.query("BEGIN", logger: logger)
                    try await RawPostgres.run(RawPostgres.UpdateI0(value: i0 + 1, id: id), on: connection, logger: logger)
                    try await connection.query("COMMIT", logger: logger)
                    checksum &+= i0 + 1
                }
                return checksum
            }
            return BenchSample(seconds: seconds, rows: current.count, checksum: checksum)
        }
    }

    func updateStoreChecksum(rows: Int, access: BenchAccess) throws -> Int64 {
        try postgres.int64(try database(BenchStores.update(access), rows: rows), "SELECT SUM(i0)::int8 FROM item")
    }

    func readWriteParticipants(rows: Int, readers: Int, batchSize: Int) throws -> BenchReadWriteParticipants {
        throw Self.notOnPostgres("readwrite")
    }

    func merge(rows: Int) throws -> BenchSample? {
        throw Self.notOnPostgres("merge")
    }

    // MARK: - Batch

    /// The bulk path of PostgreSQL: the rows' values as ten arrays, unnested by one INSERT.
    func batchInsert(count: Int, access _: BenchAccess) throws -> BenchSample {
        let (connection, remove) = try newDatabase("batch-insert")
        defer { remove() }
        let values = (0..<count).map(Int64.init)
        let logger = self.logger
        return try postgres.blocking {
            let seconds = try await BenchClock.seconds {
                try await RawPostgres.run(RawPostgres.InsertItems(values: values), on: connection, logger: logger)
            }
            let (rows, checksum) = try await Self.readAllItems(connection, logger: logger)
            return BenchSample(seconds: seconds, rows: rows, checksum: checksum)
        }
    }

    func batchUpdate(rows: Int, run: Int) throws -> BenchSample {
        let connection = try database("batch", rows: rows)
        let value = BenchData.batchUpdateValue(run: run)
        let logger = self.logger
        let (seconds, updated) = try postgres.blocking {
            try await BenchClock.measure {
                try await RawPostgres.count(RawPostgres.UpdateRange(value: value, range: BenchData.batchRange(of: rows)), on: connection, logger: logger)
            }
        }
        let holding = try postgres.int64(connection, "SELECT COUNT(*) FROM item WHERE i0 = \(value)")
        return BenchSample(seconds: seconds, rows: updated, checksum: holding)
    }

    func batchStoreChecksum(rows: Int) throws -> Int64 {
        try postgres.int64(try database("batch", rows: rows), "SELECT SUM(i0)::int8 FROM item")
    }

    func batchDelete(rows: Int) throws -> BenchSample {
        let (connection, remove) = try newDatabase("batch-delete")
        defer { remove() }
        try insertItems(connection, count: rows)
        let logger = self.logger
        let (seconds, deleted) = try postgres.blocking {
            try await BenchClock.measure {
                try await RawPostgres.count(RawPostgres.DeleteRange(range: BenchData.batchRange(of: rows)), on: connection, logger: logger)
            }
        }
        return BenchSample(seconds: seconds, rows: deleted, checksum: try postgres.int64(connection, "SELECT COUNT(*) FROM item"))
    }

    func resultsMerge(rows: Int, changes: BenchResultsChanges) throws -> BenchSample? {
        throw Self.notOnPostgres("frc_merge")
    }
}
