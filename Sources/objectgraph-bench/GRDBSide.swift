import Foundation
import GRDB
import ObjectGraphBenchCore

/// The workloads through GRDB's record API and a `DatabasePool` (WAL), as a Swift user would
/// write them: `fetchAll`, `fetchOne(key:)`, cursors, the query interface, `insert`, `updateChanges`.
final class GRDBSide: RowSide {
    let variant = BenchVariant.grdb
    let directory: URL
    private let synchronous: BenchSynchronous
    /// Open, seeded databases by file name.
    private var pools: [String: DatabasePool] = [:]

    init(directory: URL, synchronous: BenchSynchronous) throws {
        self.directory = directory
        self.synchronous = synchronous
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    // MARK: - Databases

    func open(_ name: String) throws -> DatabasePool {
        var configuration = Configuration()
        let synchronous = self.synchronous.pragmaValue
        configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = \(synchronous)") }
        let pool = try DatabasePool(path: directory.appendingPathComponent(name).path, configuration: configuration)
        // DatabasePool turns WAL on after `prepareDatabase` has run, and sets `synchronous = NORMAL`
        // on its writer as it does so: the pragma is set again on the writer, the connection that
        // commits, and checked.
        let effective = try pool.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA synchronous = \(synchronous)")
            return try Int.fetchOne(db, sql: "PRAGMA synchronous")
        }
        guard effective == self.synchronous.pragmaNumber else {
            throw BenchError("GRDB: synchronous is \(effective.map(String.init) ?? "unknown"), not \(synchronous)")
        }
        return pool
    }

    static func createItems(_ db: Database) throws {
        try db.create(table: "item") { t in
            t.autoIncrementedPrimaryKey("id")
            for key in BenchData.itemKeys { t.column(key, .integer).notNull() }
        }
    }

    /// A seeded database: `kind` (`items`, `update`, `merge`, `batch` or `entries`) of `rows` rows.
    func database(_ kind: String, rows: Int) throws -> DatabasePool {
        let name = "\(kind)-\(rows).sqlite"
        if let pool = pools[name] { return pool }
        let pool = try open(name)
        let existing = try pool.write { db -> Int in
            if kind == "entries" {
                if try !db.tableExists("entry") {
                    try db.create(table: "entry") { t in
                        t.autoIncrementedPrimaryKey("id")
                        t.column("name", .text).notNull().indexed()
                        t.column("score", .integer).notNull()
                    }
                    try Self.insertEntries(db, rows: 0..<rows)
                }
                return try GRDBEntry.fetchCount(db)
            }
            if try !db.tableExists("item") {
                try Self.createItems(db)
                for row in 0..<rows {
                    var item = GRDBItem(row: row)
                    try item.insert(db)
                }
            }
            return try GRDBItem.fetchCount(db)
        }
        guard existing == rows else { throw BenchError("\(name) holds \(existing) rows, not \(rows); remove the benchmark's folder") }
        pools[name] = pool
        return pool
    }

    /// Inserts entry rows; the sum of their scores.
    @discardableResult
    private static func insertEntries(_ db: Database, rows: some Sequence<Int>) throws -> Int64 {
        var checksum: Int64 = 0
        for row in rows {
            let entry = BenchData.entry(row)
            var record = GRDBEntry(name: entry.name, score: entry.score)
            try record.insert(db)
            checksum &+= entry.score
        }
        return checksum
    }

    // MARK: - Workloads

    /// Inserts items 0..<count as records, in one write.
    func insertItems(into pool: DatabasePool, count: Int) throws {
        try pool.write { db in
            for row in 0..<count {
                var item = GRDBItem(row: row)
                try item.insert(db)
            }
        }
    }

    /// Every item, as records read in one transaction, and the checksum of their ten values.
    func readAllItems(_ pool: DatabasePool) throws -> (Int, Int64) {
        let items = try pool.read { db in try GRDBItem.fetchAll(db) }
        return (items.count, items.reduce(0) { $0 &+ $1.checksum })
    }

    /// The rows `picks` (row numbers), each fetched by primary key, in one read transaction.
    func pointLookups(_ pool: DatabasePool, picks: [Int]) throws -> [GRDBItem] {
        try pool.read { db in
            try picks.map { row in
                guard let item = try GRDBItem.fetchOne(db, key: row + 1) else { throw BenchError("no item with id \(row + 1)") }
                return item
            }
        }
    }

    func batched(rows: Int, batchSize: Int) throws -> BenchSample {
        let pool = try database("items", rows: rows)
        let (seconds, (count, checksum)) = try BenchClock.measure {
            try pool.read { db -> (Int, Int64) in
                let cursor = try GRDBItem.fetchCursor(db)
                var count = 0
                var checksum: Int64 = 0
                while let item = try cursor.next() {
                    checksum &+= item.checksum
                    count += 1
                }
                return (count, checksum)
            }
        }
        return BenchSample(seconds: seconds, rows: count, checksum: checksum)
    }

    /// `name BEGINSWITH prefix` sorted by score, descending: results and the sum of their scores.
    private static func queryEntries(_ db: Database, prefix: String, limit: Int) throws -> (Int, Int64) {
        let name = Column("name")
        var request = GRDBEntry
            .filter(name >= prefix && name < BenchData.prefixUpperBound(prefix))
            .order(Column("score").desc)
        if limit > 0 { request = request.limit(limit) }
        let entries = try request.fetchAll(db)
        var checksum: Int64 = 0
        for entry in entries {
            BenchSink.consume(entry.name)
            checksum &+= entry.score
        }
        return (entries.count, checksum)
    }

    func predicate(rows: Int, prefixes: [String], limit: Int) throws -> BenchSample {
        let pool = try database("entries", rows: rows)
        let (seconds, (count, checksum)) = try BenchClock.measure {
            try pool.read { db in
                try BenchData.sum(over: prefixes) { prefix in try Self.queryEntries(db, prefix: prefix, limit: limit) }
            }
        }
        return BenchSample(seconds: seconds, rows: count, checksum: checksum)
    }

    func updateInOneSave(rows: Int, access: BenchAccess) throws -> BenchSample {
        let pool = try database(BenchStores.update(access), rows: rows)
        var items = try pool.read { db in try GRDBItem.order(Column("id")).fetchAll(db) }
        let (seconds, checksum) = try BenchClock.measure {
            try pool.write { db -> Int64 in
                var checksum: Int64 = 0
                for index in items.indices {
                    try items[index].updateChanges(db) { $0.i0 += 1 }
                    checksum &+= items[index].i0
                }
                return checksum
            }
        }
        return BenchSample(seconds: seconds, rows: items.count, checksum: checksum)
    }

    func updateInSeparateSaves(rows: Int, saves: Int) throws -> BenchSample {
        let pool = try database("update", rows: rows)
        var items = try pool.read { db in try GRDBItem.order(Column("id")).limit(saves).fetchAll(db) }
        let (seconds, checksum) = try BenchClock.measure {
            var checksum: Int64 = 0
            for index in items.indices {
                _ = try pool.write { db in try items[index].updateChanges(db) { $0.i0 += 1 } }
                checksum &+= items[index].i0
            }
            return checksum
        }
        return BenchSample(seconds: seconds, rows: items.count, checksum: checksum)
    }

    func updateStoreChecksum(rows: Int, access: BenchAccess) throws -> Int64 {
        try database(BenchStores.update(access), rows: rows).read { db in try Int64.fetchOne(db, sql: "SELECT SUM(i0) FROM item") ?? 0 }
    }

    func readWriteParticipants(rows: Int, readers: Int, batchSize: Int) throws -> BenchReadWriteParticipants {
        let pool = try database("entries", rows: rows)
        return BenchReadWriteParticipants(
            readers: (0..<readers).map { _ in
                { @Sendable prefix in try pool.read { db in try Self.queryEntries(db, prefix: prefix, limit: 7).0 } }
            },
            writeBatch: { @Sendable batch in
                try pool.write { db in
                    try Self.insertEntries(db, rows: BenchReadWrite.rows(ofBatch: batch, size: batchSize, after: rows))
                }
            })
    }

    func merge(rows: Int) throws -> BenchSample? {
        let pool = try database("merge", rows: rows)
        var items = try pool.read { db in try GRDBItem.order(Column("id")).fetchAll(db) }
        // The pool's writer changes every row.
        try pool.write { db in try db.execute(sql: "UPDATE item SET i0 = i0 + 1") }
        // The reader re-fetches the changed rows by primary key.
        let (seconds, checksum) = try BenchClock.measure {
            let fresh = try pool.read { db in try GRDBItem.fetchAll(db, keys: items.compactMap(\.id)) }
            let byID = Dictionary(uniqueKeysWithValues: fresh.map { ($0.id!, $0) })
            for index in items.indices { items[index] = byID[items[index].id!] ?? items[index] }
            return items.reduce(Int64(0)) { $0 &+ $1.i0 }
        }
        return BenchSample(seconds: seconds, rows: items.count, checksum: checksum)
    }
}
