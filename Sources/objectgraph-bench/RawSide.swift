import Foundation
import ObjectGraphBenchCore

/// The workloads through the SQLite C API: prepared statements, one transaction per save, rows
/// read into plain structs. The floor ObjectGraph is held to.
final class RawSide: RowSide {
    let variant = BenchVariant.raw
    let directory: URL
    let synchronous: BenchSynchronous
    /// Open, seeded databases by file name.
    private var connections: [String: RawConnection] = [:]

    static let createItems = "CREATE TABLE item (id INTEGER PRIMARY KEY, "
        + BenchData.itemKeys.map { "\($0) INTEGER NOT NULL" }.joined(separator: ", ") + ")"
    static let insertItem = "INSERT INTO item (" + BenchData.itemKeys.joined(separator: ", ") + ") VALUES ("
        + Array(repeating: "?", count: 10).joined(separator: ", ") + ")"
    static let selectItems = "SELECT id, " + BenchData.itemKeys.joined(separator: ", ") + " FROM item"
    static let createEntries = """
        CREATE TABLE entry (id INTEGER PRIMARY KEY, name TEXT NOT NULL, score INTEGER NOT NULL);
        CREATE INDEX entry_name ON entry (name);
        """
    static let insertEntry = "INSERT INTO entry (name, score) VALUES (?, ?)"
    /// `name BEGINSWITH ?` as the index range `name >= ? AND name < ?`.
    static let selectEntries = "SELECT id, name, score FROM entry WHERE name >= ? AND name < ? ORDER BY score DESC LIMIT ?"

    /// An item row, read into a struct.
    struct Item: BenchItemRow {
        var id: Int64
        var i0, i1, i2, i3, i4, i5, i6, i7, i8, i9: Int64

        /// Reads columns `id, i0, …, i9` of the statement's current row.
        init(_ statement: RawStatement) {
            id = statement.int64(0)
            i0 = statement.int64(1); i1 = statement.int64(2); i2 = statement.int64(3); i3 = statement.int64(4)
            i4 = statement.int64(5); i5 = statement.int64(6); i6 = statement.int64(7); i7 = statement.int64(8)
            i8 = statement.int64(9); i9 = statement.int64(10)
        }

        var checksum: Int64 { BenchData.itemChecksum(of: (i0, i1, i2, i3, i4, i5, i6, i7, i8, i9)) }
    }

    init(directory: URL, synchronous: BenchSynchronous) throws {
        self.directory = directory
        self.synchronous = synchronous
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    // MARK: - Databases

    func open(_ name: String) throws -> RawConnection {
        try RawConnection(path: directory.appendingPathComponent(name).path, synchronous: synchronous)
    }

    /// A seeded database: `kind` (`items`, `update`, `merge`, `batch` or `entries`) of `rows` rows.
    func database(_ kind: String, rows: Int) throws -> RawConnection {
        let name = "\(kind)-\(rows).sqlite"
        if let connection = connections[name] { return connection }
        let connection = try open(name)
        let table = kind == "entries" ? "entry" : "item"
        if try connection.int64("SELECT COUNT(*) FROM sqlite_master WHERE name = '\(table)'") == 0 {
            try connection.execute(kind == "entries" ? Self.createEntries : Self.createItems)
            try connection.execute("BEGIN")
            if kind == "entries" {
                try Self.insertEntries(connection, rows: 0..<rows)
            } else {
                try Self.insertItems(connection, count: rows)
            }
            try connection.execute("COMMIT")
        }
        let existing = try connection.int64("SELECT COUNT(*) FROM \(table)")
        guard existing == rows else { throw BenchError("\(name) holds \(existing) rows, not \(rows); remove the benchmark's folder") }
        connections[name] = connection
        return connection
    }

    static func insertItems(_ connection: RawConnection, count: Int) throws {
        let insert = try connection.prepare(insertItem)
        for row in 0..<count {
            for k in 1...10 { insert.bind(Int32(k), Int64(row)) }
            try insert.run()
        }
    }

    /// Inserts entry rows; the sum of their scores.
    @discardableResult
    private static func insertEntries(_ connection: RawConnection, rows: some Sequence<Int>) throws -> Int64 {
        let insert = try connection.prepare(insertEntry)
        var checksum: Int64 = 0
        for row in rows {
            let entry = BenchData.entry(row)
            insert.bind(1, entry.name)
            insert.bind(2, entry.score)
            try insert.run()
            checksum &+= entry.score
        }
        return checksum
    }

    // MARK: - Workloads

    /// Inserts items 0..<count through a prepared statement, in one transaction.
    func insertItems(into connection: RawConnection, count: Int) throws {
        try connection.execute("BEGIN")
        try Self.insertItems(connection, count: count)
        try connection.execute("COMMIT")
    }

    /// Every item, read into structs in one transaction, and the checksum of their ten values.
    func readAllItems(_ connection: RawConnection) throws -> (Int, Int64) {
        let select = try connection.prepare(Self.selectItems)
        var items: [Item] = []
        while try select.step() { items.append(Item(select)) }
        return (items.count, items.reduce(0) { $0 &+ $1.checksum })
    }

    /// Reads the rows `picks` (row numbers) by primary key, in one transaction.
    func pointLookups(_ connection: RawConnection, picks: [Int]) throws -> [Item] {
        let select = try connection.prepare(Self.selectItems + " WHERE id = ?")
        var items: [Item] = []
        items.reserveCapacity(picks.count)
        try connection.execute("BEGIN")
        for row in picks {
            select.bind(1, Int64(row + 1))
            guard try select.step() else { throw BenchError("no item with id \(row + 1)") }
            items.append(Item(select))
            select.reset()
        }
        try connection.execute("COMMIT")
        return items
    }

    func batched(rows: Int, batchSize: Int) throws -> BenchSample {
        let connection = try database("items", rows: rows)
        let (seconds, (count, checksum)) = try BenchClock.measure {
            let select = try connection.prepare(Self.selectItems)
            var count = 0
            var checksum: Int64 = 0
            while try select.step() {
                checksum &+= Item(select).checksum
                count += 1
            }
            return (count, checksum)
        }
        return BenchSample(seconds: seconds, rows: count, checksum: checksum)
    }

    /// `name BEGINSWITH prefix` sorted by score, descending: results and the sum of their scores.
    private static func queryEntries(_ select: RawStatement, prefix: String, limit: Int) throws -> (Int, Int64) {
        select.bind(1, prefix)
        select.bind(2, BenchData.prefixUpperBound(prefix))
        select.bind(3, Int64(limit > 0 ? limit : -1))
        var count = 0
        var checksum: Int64 = 0
        while try select.step() {
            BenchSink.consume(select.text(1))
            checksum &+= select.int64(2)
            count += 1
        }
        select.reset()
        return (count, checksum)
    }

    func predicate(rows: Int, prefixes: [String], limit: Int) throws -> BenchSample {
        let connection = try database("entries", rows: rows)
        let (seconds, (count, checksum)) = try BenchClock.measure {
            let select = try connection.prepare(Self.selectEntries)
            return try BenchData.sum(over: prefixes) { prefix in try Self.queryEntries(select, prefix: prefix, limit: limit) }
        }
        return BenchSample(seconds: seconds, rows: count, checksum: checksum)
    }

    /// The ids and `i0` of the update store's rows, in row order.
    private func currentI0(_ connection: RawConnection) throws -> [(id: Int64, i0: Int64)] {
        let select = try connection.prepare("SELECT id, i0 FROM item ORDER BY id")
        var rows: [(id: Int64, i0: Int64)] = []
        while try select.step() { rows.append((select.int64(0), select.int64(1))) }
        return rows
    }

    func updateInOneSave(rows: Int, access: BenchAccess) throws -> BenchSample {
        let connection = try database(BenchStores.update(access), rows: rows)
        let current = try currentI0(connection)
        let (seconds, checksum) = try BenchClock.measure {
            let update = try connection.prepare("UPDATE item SET i0 = ? WHERE id = ?")
            var checksum: Int64 = 0
            try connection.execute("BEGIN")
            for (id, i0) in current {
                update.bind(1, i0 + 1)
                update.bind(2, id)
                try update.run()
                checksum &+= i0 + 1
            }
            try connection.execute("COMMIT")
            return checksum
        }
        return BenchSample(seconds: seconds, rows: current.count, checksum: checksum)
    }

    func updateInSeparateSaves(rows: Int, saves: Int) throws -> BenchSample {
        let connection = try database("update", rows: rows)
        let current = try currentI0(connection).prefix(saves)
        let (seconds, checksum) = try BenchClock.measure {
            let begin = try connection.prepare("BEGIN")
            let update = try connection.prepare("UPDATE item SET i0 = ? WHERE id = ?")
            let commit = try connection.prepare("COMMIT")
            var checksum: Int64 = 0
            for (id, i0) in current {
                try begin.run()
                update.bind(1, i0 + 1)
                update.bind(2, id)
                try update.run()
                try commit.run()
                checksum &+= i0 + 1
            }
            return checksum
        }
        return BenchSample(seconds: seconds, rows: current.count, checksum: checksum)
    }

    func updateStoreChecksum(rows: Int, access: BenchAccess) throws -> Int64 {
        try database(BenchStores.update(access), rows: rows).int64("SELECT SUM(i0) FROM item")
    }

    func readWriteParticipants(rows: Int, readers: Int, batchSize: Int) throws -> BenchReadWriteParticipants {
        let name = "entries-\(rows).sqlite"
        _ = try database("entries", rows: rows)
        let readerStatements = try (0..<readers).map { _ in
            let connection = try open(name)
            return (connection, try connection.prepare(Self.selectEntries))
        }
        let writer = try open(name)
        return BenchReadWriteParticipants(
            readers: readerStatements.map { reader in
                let box = RawReader(connection: reader.0, select: reader.1)
                return { @Sendable prefix in try box.query(prefix) }
            },
            writeBatch: { @Sendable batch in
                try writer.execute("BEGIN")
                let checksum = try Self.insertEntries(writer, rows: BenchReadWrite.rows(ofBatch: batch, size: batchSize, after: rows))
                try writer.execute("COMMIT")
                return checksum
            })
    }

    /// A reader connection and its prepared query, used by one reader thread only.
    private final class RawReader: @unchecked Sendable {  // used by one thread at a time
        let connection: RawConnection
        let select: RawStatement

        init(connection: RawConnection, select: RawStatement) {
            self.connection = connection
            self.select = select
        }

        func query(_ prefix: String) throws -> Int {
            try RawSide.queryEntries(select, prefix: prefix, limit: 7).0
        }
    }

    func merge(rows: Int) throws -> BenchSample? {
        let reader = try database("merge", rows: rows)
        var items = try pointLookups(reader, picks: Array(0..<rows))
        // Another connection changes every row.
        let writer = try open("merge-\(rows).sqlite")
        try writer.execute("UPDATE item SET i0 = i0 + 1")
        // The reader re-fetches the changed rows by primary key.
        let (seconds, checksum) = try BenchClock.measure {
            let fresh = try pointLookups(reader, picks: items.map { Int($0.id) - 1 })
            for index in items.indices { items[index] = fresh[index] }
            return items.reduce(Int64(0)) { $0 &+ $1.i0 }
        }
        return BenchSample(seconds: seconds, rows: items.count, checksum: checksum)
    }
}
