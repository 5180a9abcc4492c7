import Foundation
import GRDB
import GRDBSQLite

// Persistent history in Core Data's own tables, written in the transaction of the change it records:
//
//   ATRANSACTION       Z_PK (the transaction number), Z_ENT 16002, ZTIMESTAMP (seconds since 2001),
//                      ZAUTHORTS / ZCONTEXTNAMETS / ZPROCESSIDTS / ZBUNDLEIDTS (keys of ATRANSACTIONSTRING;
//                      ZAUTHOR… VARCHARs left NULL, as Core Data 1344 leaves them; both are read)
//   ACHANGE            Z_PK (the change ID), Z_ENT 16001, ZCHANGETYPE (0 insert, 1 update, 2 delete),
//                      ZENTITY (Z_PRIMARYKEY's entity number), ZENTITYPK, ZTRANSACTIONID, ZCOLUMNS
//                      (for an update, a bit mask of the entity's property indexes: byte i/8, bit i%8),
//                      ZTOMBSTONE0… (a delete's preserved attributes, in the order of their names)
//   ATRANSACTIONSTRING Z_PK, Z_ENT 16003, ZNAME (each author, context name, process and bundle once)
//
// Keys come from Z_PRIMARYKEY rows 16001–16003, as Core Data's do. ObjectGraph's consumer registry
// lives in a table of its own, Z_OGHISTORYCONSUMER, which Core Data ignores.
//
// Tombstones are read by temporary triggers on the writer connection (BEFORE DELETE on each table
// whose entities preserve attributes), so deletes by a save, a batch request or a cascade are all seen.

extension SQLiteStore {
    static let changeEntity = 16001
    static let transactionEntity = 16002
    static let stringEntity = 16003
    static let consumerTable = "Z_OGHISTORYCONSUMER"

    /// Creates the history tables a store lacks, and the tombstone columns its model needs.
    static func createHistoryTables(in db: Database, schema: CoreDataLayout) throws {
        let tombstones = schema.model.entities.map { HistoryRecording.preservedAttributes(of: $0).count }.max() ?? 0
        try db.execute(sql: """
            CREATE TABLE IF NOT EXISTS ACHANGE ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZCHANGETYPE INTEGER, ZENTITY INTEGER, ZENTITYPK INTEGER, ZTRANSACTIONID INTEGER, ZCOLUMNS BLOB );
            CREATE TABLE IF NOT EXISTS ATRANSACTION ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZAUTHORTS INTEGER, ZBUNDLEIDTS INTEGER, ZCONTEXTNAMETS INTEGER, ZPROCESSIDTS INTEGER, ZTIMESTAMP FLOAT, ZAUTHOR VARCHAR, ZBUNDLEID VARCHAR, ZCONTEXTNAME VARCHAR, ZPROCESSID VARCHAR, ZQUERYGEN BLOB );
            CREATE TABLE IF NOT EXISTS ATRANSACTIONSTRING ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZNAME VARCHAR );
            CREATE INDEX IF NOT EXISTS ACHANGE_ZTRANSACTIONID_INDEX ON ACHANGE (ZTRANSACTIONID);
            CREATE INDEX IF NOT EXISTS ATRANSACTION_ZAUTHORTS_INDEX ON ATRANSACTION (ZAUTHORTS);
            CREATE INDEX IF NOT EXISTS ATRANSACTION_ZBUNDLEIDTS_INDEX ON ATRANSACTION (ZBUNDLEIDTS);
            CREATE INDEX IF NOT EXISTS ATRANSACTION_ZCONTEXTNAMETS_INDEX ON ATRANSACTION (ZCONTEXTNAMETS);
            CREATE INDEX IF NOT EXISTS ATRANSACTION_ZPROCESSIDTS_INDEX ON ATRANSACTION (ZPROCESSIDTS);
            CREATE INDEX IF NOT EXISTS Z_TRANSACTION_TransactionAuthorIndex ON ATRANSACTION (ZAUTHOR COLLATE BINARY ASC);
            CREATE INDEX IF NOT EXISTS Z_TRANSACTION_TransactionTimestampIndex ON ATRANSACTION (ZTIMESTAMP COLLATE BINARY ASC);
            CREATE UNIQUE INDEX IF NOT EXISTS Z_TRANSACTIONSTRING_UNIQUE_NAME ON ATRANSACTIONSTRING (ZNAME COLLATE BINARY ASC);
            CREATE TABLE IF NOT EXISTS \(consumerTable) ( ZNAME VARCHAR PRIMARY KEY, ZTRANSACTION INTEGER, ZUPDATED FLOAT );
            INSERT OR IGNORE INTO Z_PRIMARYKEY (Z_ENT, Z_NAME, Z_SUPER, Z_MAX) VALUES (\(changeEntity), 'CHANGE', 0, 0);
            INSERT OR IGNORE INTO Z_PRIMARYKEY (Z_ENT, Z_NAME, Z_SUPER, Z_MAX) VALUES (\(transactionEntity), 'TRANSACTION', 0, 0);
            INSERT OR IGNORE INTO Z_PRIMARYKEY (Z_ENT, Z_NAME, Z_SUPER, Z_MAX) VALUES (\(stringEntity), 'TRANSACTIONSTRING', 0, 0);
            """)
        let existing = Set(try Row.fetchAll(db, sql: "PRAGMA table_info(ACHANGE)").map { ($0["name"] as String).uppercased() })
        for i in 0..<tombstones where !existing.contains("ZTOMBSTONE\(i)") {
            try db.execute(sql: "ALTER TABLE ACHANGE ADD COLUMN ZTOMBSTONE\(i)")
        }
    }

    // MARK: Recording

    typealias RecordedChange = HistoryRecording.Change

    /// Creates the temporary triggers that keep deleted rows' preserved attributes for their
    /// tombstones (none when no entity preserves an attribute). Run in the write, before it deletes.
    func prepareTombstones(_ db: Database) throws {
        guard historyTracking, let tombstoneSQL else { return }
        try db.execute(sql: tombstoneSQL)
    }

    /// The SQL of the tombstone triggers, or nil when no entity preserves an attribute.
    static func tombstoneTriggerSQL(schema: CoreDataLayout) -> String? {
        var sql = "CREATE TEMP TABLE IF NOT EXISTS og_tombstone (pk INTEGER, ent INTEGER, name TEXT, value);\n"
        var any = false
        for root in schema.model.entities where root.superentity == nil {
            var attributes: [AttributeDescription] = []
            for entity in root.selfAndDescendants {
                for attribute in HistoryRecording.preservedAttributes(of: entity) where !attributes.contains(where: { $0.name == attribute.name }) {
                    attributes.append(attribute)
                }
            }
            guard !attributes.isEmpty else { continue }
            any = true
            let table = schema.tableName(for: root)
            let selects = attributes.map { attribute in
                "SELECT OLD.Z_PK, OLD.Z_ENT, '\(attribute.name)', OLD.\(CoreDataLayout.quote(schema.columnName(for: attribute)))"
            }.joined(separator: " UNION ALL ")
            sql += "CREATE TEMP TRIGGER IF NOT EXISTS og_tombstone_\(table) BEFORE DELETE ON main.\(CoreDataLayout.quote(table)) BEGIN INSERT INTO og_tombstone \(selects); END;\n"
        }
        return any ? sql : nil
    }

    /// Writes one transaction and its changes, in the write that made them; returns its number.
    @discardableResult
    func recordHistory(_ changes: [RecordedChange], db: Database) throws -> Int64? {
        guard historyTracking else { return nil }
        var changes = changes
        if tombstoneSQL != nil {
            var values: [String: [String: Value]] = [:]  // "pk:rootCode" → name → value
            // Values read as a fetch reads them (GRDB's rows would end a text at a U+0000 in it).
            let statement = try db.makeStatement(sql: "SELECT pk, ent, name, value FROM temp.og_tombstone")
            let cursor = try Row.fetchCursor(statement)
            while let row = try cursor.next() {
                let code: Int = row[1]
                guard let entity = schema.entity(forNumber: code), let attribute = entity.attributesByName[row[2]] else { continue }
                values["\(row[0] as Int64):\(entity.rootEntity.entityCode)", default: [:]][attribute.name] =
                    Value(statement.sqliteStatement, column: 3, type: attribute.attributeType)
            }
            try db.execute(sql: "DELETE FROM temp.og_tombstone")
            for i in changes.indices where changes[i].type == .delete {
                let id = changes[i].id
                let preserved = HistoryRecording.preservedAttributes(of: id.entity)
                guard !preserved.isEmpty, let pk = id.primaryKey, let row = values["\(pk):\(id.entity.rootEntity.entityCode)"] else { continue }
                changes[i].tombstone = preserved.map { row[$0.name] ?? .null }
            }
        }
        let number = try reserveHistoryKeys(Self.transactionEntity, 1, db)
        let info = TransactionInfo.current
        var addedNow: Set<String> = []
        let strings = try [info.author, info.contextName, HistoryRecording.processIdentifier, HistoryRecording.processName].map { text in
            try text.map { try internString($0, added: &addedNow, db) }
        }
        count()
        try db.cachedStatement(sql: """
            INSERT INTO ATRANSACTION (Z_PK, Z_ENT, Z_OPT, ZAUTHORTS, ZCONTEXTNAMETS, ZPROCESSIDTS, ZBUNDLEIDTS, ZTIMESTAMP) VALUES (?, \(Self.transactionEntity), 1, ?, ?, ?, ?, ?)
            """).execute(arguments: [number, strings[0], strings[1], strings[2], strings[3], Date().timeIntervalSinceReferenceDate])
        guard !changes.isEmpty else { return number }
        var key = try reserveHistoryKeys(Self.changeEntity, changes.count, db)
        let width = changes.map { $0.tombstone?.count ?? 0 }.max() ?? 0
        let tombstoneColumns = (0..<width).map { ", ZTOMBSTONE\($0)" }.joined()
        let statement = try db.cachedStatement(sql: """
            INSERT INTO ACHANGE (Z_PK, Z_ENT, ZCHANGETYPE, ZENTITY, ZENTITYPK, ZTRANSACTIONID, ZCOLUMNS\(tombstoneColumns)) \
            VALUES (?, \(Self.changeEntity), ?, ?, ?, ?, ?\(String(repeating: ", ?", count: width)))
            """)
        // Stepped through the C API: a save of many objects records as many changes.
        let sqlite = statement.sqliteStatement
        var lastEntity: EntityDescription?
        var entityNumber = 0
        for change in changes {
            guard let pk = change.id.primaryKey else { continue }
            if change.id.entity !== lastEntity {
                lastEntity = change.id.entity
                entityNumber = schema.entityNumber(for: change.id.entity)
            }
            sqlite3_bind_int64(sqlite, 1, key)
            sqlite3_bind_int64(sqlite, 2, Int64(change.type.rawValue))
            sqlite3_bind_int64(sqlite, 3, Int64(entityNumber))
            sqlite3_bind_int64(sqlite, 4, pk)
            sqlite3_bind_int64(sqlite, 5, number)
            try bind(change.columns.map { .data(HistoryRecording.columnMask($0)) } ?? .null, to: sqlite, at: 6, db)
            for i in 0..<width {
                try bind(change.tombstone.flatMap { i < $0.count ? $0[i] : nil } ?? .null, to: sqlite, at: CInt(7 + i), db)
            }
            count()
            try step(sqlite, db)
            key += 1
        }
        ownTransactions.withLock { _ = $0?.insert(number) }
        return number
    }

    /// Reserves `n` keys of a history table from its Z_PRIMARYKEY row; returns the first.
    private func reserveHistoryKeys(_ entity: Int, _ n: Int, _ db: Database) throws -> Int64 {
        count()
        guard let last = try Int64.fetchOne(
            db.cachedStatement(sql: "UPDATE Z_PRIMARYKEY SET Z_MAX = Z_MAX + ? WHERE Z_ENT = ? RETURNING Z_MAX"), arguments: [n, entity])
        else {
            throw ObjectGraphError(.io, "The store at \(url.path) has no Z_PRIMARYKEY row \(entity) for its history", url: url)
        }
        return last - Int64(n) + 1
    }

    /// The key of a string in ATRANSACTIONSTRING, added when new (and then listed in `added`).
    ///
    /// Keys found committed are remembered (``internedStrings``): a string's row never changes
    /// key, and no one deletes them (history purges keep the strings, as Core Data's do). A key
    /// added in this write is not, since the write may yet roll back.
    private func internString(_ text: String, added: inout Set<String>, _ db: Database) throws -> Int64 {
        if let key = internedStrings.withLock({ $0[text] }) { return key }
        count()
        if let key = try Int64.fetchOne(db.cachedStatement(sql: "SELECT Z_PK FROM ATRANSACTIONSTRING WHERE ZNAME = ?"), arguments: [text]) {
            if !added.contains(text) { internedStrings.withLock { $0[text] = key } }
            return key
        }
        let key = try reserveHistoryKeys(Self.stringEntity, 1, db)
        count()
        try db.cachedStatement(sql: "INSERT INTO ATRANSACTIONSTRING (Z_PK, Z_ENT, Z_OPT, ZNAME) VALUES (?, \(Self.stringEntity), 1, ?)")
            .execute(arguments: [key, text])
        added.insert(text)
        return key
    }

}

// MARK: - Reading and purging

extension SQLiteStore: HistoryBackend {
    var tracksHistory: Bool { historyTracking }

    func historyTransactions(after number: Int64?, orAfter date: Date?, withChanges: Bool, store: PersistentStore) throws
        -> [PersistentHistoryTransaction] {
        try read("reading persistent history") { db in
            guard try db.tableExists("ATRANSACTION") else { return [] }
            var after = number ?? 0
            if let number {
                // History must still hold every transaction after `number`.
                let last = try lastNumber(db) ?? 0
                let first = try Int64.fetchOne(db, sql: "SELECT MIN(Z_PK) FROM ATRANSACTION")
                let covered = number >= last || (first.map { $0 <= number + 1 } ?? false)
                if !covered {
                    throw ObjectGraphError(
                        .historyTokenExpired,
                        "Persistent history of the store at \(url.path) after transaction \(number) was deleted (it now starts at \(first.map(String.init) ?? "none"), and the last is \(last)): changes were missed; fetch the objects again and take a new token",
                        url: url)
                }
            } else if let date {
                after = try Int64.fetchOne(
                    db, sql: "SELECT MIN(Z_PK) - 1 FROM ATRANSACTION WHERE ZTIMESTAMP > ?", arguments: [date.timeIntervalSinceReferenceDate])
                    ?? Int64.max
            }
            return try transactions(after: after, withChanges: withChanges, store: store, db)
        }
    }

    /// The transactions with numbers above `after`, oldest first.
    private func transactions(after: Int64, withChanges: Bool, store: PersistentStore, _ db: Database) throws -> [PersistentHistoryTransaction] {
        count()
        let strings = Dictionary(
            uniqueKeysWithValues: try Row.fetchAll(db, sql: "SELECT Z_PK, ZNAME FROM ATRANSACTIONSTRING").map { ($0[0] as Int64, $0[1] as String? ?? "") })
        var changesByTransaction: [Int64: [PersistentHistoryChange]] = [:]
        if withChanges {
            let columns = Set(try Row.fetchAll(db, sql: "PRAGMA table_info(ACHANGE)").map { ($0["name"] as String).uppercased() })
            let width = (0..<64).prefix { columns.contains("ZTOMBSTONE\($0)") }.count
            let tombstoneColumns = (0..<width).map { ", ZTOMBSTONE\($0)" }.joined()
            count()
            let statement = try db.makeStatement(sql: """
                SELECT Z_PK, ZCHANGETYPE, ZENTITY, ZENTITYPK, ZTRANSACTIONID, ZCOLUMNS\(tombstoneColumns) FROM ACHANGE WHERE ZTRANSACTIONID > ? ORDER BY Z_PK
                """)
            let rows = try Row.fetchCursor(statement, arguments: [after])
            while let row = try rows.next() {
                guard let entity = schema.entity(forNumber: row[2]), let type = PersistentHistoryChangeType(rawValue: row[1]) else { continue }
                let id = ManagedObjectID(entity: entity, store: store, primaryKey: row[3])
                var properties: Set<PropertyDescription>?
                if type == .update, let mask = row[5] as Data? {
                    properties = Set(HistoryRecording.columnIndices(mask).compactMap { $0 < entity.properties.count ? entity.properties[$0] : nil })
                }
                var tombstone: [String: any Sendable]?
                if type == .delete {
                    let preserved = HistoryRecording.preservedAttributes(of: entity)
                    if !preserved.isEmpty {
                        var values: [String: any Sendable] = [:]
                        for (i, attribute) in preserved.enumerated() where i < width {
                            // Read as a fetch reads it (GRDB's rows would end a text at a U+0000 in it).
                            let value = Value(statement.sqliteStatement, column: CInt(6 + i), type: attribute.attributeType)
                            if let kept = value.publicValue(for: attribute.attributeType) { values[attribute.name] = kept }
                        }
                        tombstone = values
                    }
                }
                changesByTransaction[row[4], default: []].append(PersistentHistoryChange(
                    changeID: row[0], changeType: type, changedObjectID: id, updatedProperties: properties, tombstone: tombstone))
            }
        }
        count()
        let rows = try Row.fetchAll(db, sql: """
            SELECT Z_PK, ZTIMESTAMP, ZAUTHORTS, ZCONTEXTNAMETS, ZPROCESSIDTS, ZBUNDLEIDTS, ZAUTHOR, ZCONTEXTNAME, ZPROCESSID, ZBUNDLEID
            FROM ATRANSACTION WHERE Z_PK > ? ORDER BY Z_PK
            """, arguments: [after])
        return rows.map { row in
            func text(_ interned: Int, _ plain: Int) -> String? {
                if let key = row[interned] as Int64?, let text = strings[key] { return text }
                return row[plain] as String?
            }
            let number: Int64 = row[0]
            let transaction = PersistentHistoryTransaction(
                token: PersistentHistoryToken(store: identifier, transactionNumber: number),
                timestamp: Date(timeIntervalSinceReferenceDate: row[1] as Double? ?? 0),
                author: text(2, 6), contextName: text(3, 7), storeID: identifier, processID: text(4, 8) ?? "", bundleID: text(5, 9),
                transactionNumber: number, changes: withChanges ? changesByTransaction[number] ?? [] : nil)
            transaction.adoptChanges()
            return transaction
        }
    }

    private func lastNumber(_ db: Database) throws -> Int64? {
        count()
        let last = try Int64.fetchOne(db, sql: "SELECT Z_MAX FROM Z_PRIMARYKEY WHERE Z_ENT = \(Self.transactionEntity)") ?? 0
        return last > 0 ? last : nil
    }

    func deleteHistory(before number: Int64?, orBefore date: Date?) throws -> Int {
        try write("deleting persistent history") { db in
            guard try db.tableExists("ATRANSACTION") else { return 0 }
            var boundary: Int64
            if let date {
                let after = try lastNumber(db) ?? 0
                boundary = try Int64.fetchOne(
                    db, sql: "SELECT MIN(Z_PK) FROM ATRANSACTION WHERE ZTIMESTAMP >= ?", arguments: [date.timeIntervalSinceReferenceDate])
                    ?? (after + 1)
            } else if let number {
                boundary = number
            } else {
                boundary = (try lastNumber(db) ?? 0) + 1
            }
            // What a registered consumer has not read stays (its own last transaction too, so its token stays valid).
            if try db.tableExists(Self.consumerTable) {
                for read in try Optional<Int64>.fetchAll(db, sql: "SELECT ZTRANSACTION FROM \(Self.consumerTable)") {
                    boundary = min(boundary, read ?? 1)
                }
            }
            count(2)
            try db.execute(sql: "DELETE FROM ACHANGE WHERE ZTRANSACTIONID < ?", arguments: [boundary])
            try db.execute(sql: "DELETE FROM ATRANSACTION WHERE Z_PK < ?", arguments: [boundary])
            return db.changesCount
        }
    }

    func lastTransactionNumber() throws -> Int64? {
        try read("reading the persistent history token") { db in
            try db.tableExists("ATRANSACTION") ? try lastNumber(db) : nil
        }
    }

    func setConsumer(_ name: String, transactionNumber: Int64?, registered: Bool) throws {
        try write("recording history consumer \(name)") { db in
            try Self.createHistoryTables(in: db, schema: schema)
            count()
            if registered {
                try db.execute(
                    sql: "INSERT OR REPLACE INTO \(Self.consumerTable) (ZNAME, ZTRANSACTION, ZUPDATED) VALUES (?, ?, ?)",
                    arguments: [name, transactionNumber, Date().timeIntervalSinceReferenceDate])
            } else {
                try db.execute(sql: "DELETE FROM \(Self.consumerTable) WHERE ZNAME = ?", arguments: [name])
            }
        }
    }

    func consumer(_ name: String) throws -> (registered: Bool, transactionNumber: Int64?) {
        try read("reading history consumer \(name)") { db in
            guard try db.tableExists(Self.consumerTable) else { return (false, nil) }
            guard let row = try Row.fetchOne(db, sql: "SELECT ZTRANSACTION FROM \(Self.consumerTable) WHERE ZNAME = ?", arguments: [name]) else {
                return (false, nil)
            }
            return (true, row[0] as Int64?)
        }
    }
}
