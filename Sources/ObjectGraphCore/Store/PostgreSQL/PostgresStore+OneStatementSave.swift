import Foundation

// A small save as one statement outside a transaction: its rows' INSERTs and UPDATEs and its
// change-log row as data-modifying common table expressions, which PostgreSQL runs atomically, in
// one round trip, where the transaction path sends BEGIN, a statement per row, the log's row and
// COMMIT.

extension PostgresStore {
    /// The most objects a save sends as one statement; a larger save runs in a transaction, where
    /// the statements per object no longer count.
    static let oneStatementObjectLimit = 64

    /// Saves `request` with one statement when it can, and returns nil when the save runs in a
    /// transaction instead (``save(_:store:)``).
    ///
    /// A save goes as one statement when it inserts and updates objects (no deletion, no to-many
    /// change kept in a join table, no ordering), each update has a version to check (and the
    /// `UPDATE`s run in the order the transaction path locks rows in, so the two never deadlock),
    /// the store's unique indexes enforce its uniqueness constraints, and it records no history.
    /// Its new objects' keys come from the reserve (``PostgresKeyReserve``); when it has too few,
    /// a statement of their own reserves them first, and a block more for later saves. Every write returns
    /// one row (an INSERT a unique index refuses returns none: `ON CONFLICT DO NOTHING`); the change
    /// log's count is incremented only when all of them did, and the statement divides by zero
    /// otherwise, which rolls it back whole. A save whose statement fails for any reason the server
    /// gives (a version conflict, a unique index, a deadlock) then runs in a transaction, which
    /// reports the failure as every save does.
    ///
    /// A statement whose connection is lost may have committed: it is found by the nonce its text
    /// and its change-log row carry (``committedOneStatement(nonce:lost:)``). If it committed, the
    /// save succeeded; if not, nothing was written and the save runs in a transaction.
    func saveInOneStatement(_ request: StoreSaveRequest, store: PersistentStore) throws -> StoreSaveResult? {
        guard !readOnly, !historyTracking, !request.isEmpty, request.deleted.isEmpty, request.joinInserts.isEmpty, request.joinDeletes.isEmpty,
              request.orderings.isEmpty, request.inserted.count + request.updated.count <= Self.oneStatementObjectLimit
        else { return nil }
        let writes = PostgresOneStatementSave(store: self)
        let result: StoreSaveResult
        do {
            result = try SavePlan(
                request, schema: schema, tables: layouts, checksUniqueness: !uniqueIndexesEnforceConstraints, checksEveryVersionInUpdate: true
            ).run(on: writes, store: store)
        } catch {
            // A step that needs a transaction, or an error the transaction path reports as it always does.
            writes.giveBackKeys()
            return nil
        }
        let nonce = UUID().uuidString
        let changes = PostgresChangeLog.encode(request, permanentIDs: result.permanentIDs, schema: schema)
        let (sql, parameters) = writes.statement(nonce: nonce, changes: changes)
        count()
        do {
            let number = try PostgresChangeLog.numbered(try driver.writeOneStatement { try $0.query(sql, parameters) }, backend: self).number
            if number % 1000 == 0 { _ = try? write("purging the change log") { try PostgresChangeLog.purge(before: number, backend: self, session: $0) } }
            return result
        } catch let error as PostgresDriverError {
            switch error.kind {
            case .server:
                writes.giveBackKeys()
                return nil
            case .connection where error.commitInDoubt:
                if try committedOneStatement(nonce: nonce, lost: error) { return result }
                writes.giveBackKeys()
                return nil
            default:
                throw translate(error, while: "saving")
            }
        }
    }

    /// Whether the one-statement save carrying `nonce` committed: asked, on new connections, once
    /// no server process runs it any more; waits while the server cannot be reached, up to
    /// ``commitResolutionTimeout``.
    func committedOneStatement(nonce: String, lost: PostgresDriverError) throws -> Bool {
        try askUntilKnown(while: "saving", lost: lost) {
            let row = try? driver.readOneStatement { session in
                try session.query(
                    """
                    SELECT (SELECT count(*) FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND state <> 'idle' AND query LIKE $1), \
                    (SELECT count(*) FROM \(table(PostgresStoreTables.changeTable)) WHERE "Z_AUTHOR" = $2 AND "Z_CHANGES" LIKE $3)
                    """,
                    [.text(PostgresOneStatementSave.comment(nonce) + "%"), .text(instanceID), .text("%" + PostgresOneStatementSave.nonceLine(nonce))]
                ).first
            }
            guard let row, row.count == 2, row[0].integer == 0, let logged = row[1].integer else { return nil }
            return logged > 0
        }
    }
}

/// The session a one-statement save's plan runs on (``PostgresStore/saveInOneStatement(_:store:)``):
/// it keeps each row's INSERT or UPDATE instead of running it, and throws
/// ``NeedsTransaction`` for a step that needs a statement's answer before the next (reserving
/// keys is the one statement it runs itself, committed before the save's).
struct PostgresOneStatementSave: RelationalSession {
    /// A step the one statement cannot hold: the save runs in a transaction.
    struct NeedsTransaction: Error {}

    /// The rows' statements and their parameters, in the plan's order, and the keys they took.
    final class Writes {
        var statements: [(sql: String, parameters: [PostgresValue])] = []
        var keys: [(root: Int, keys: Range<Int64>)] = []
    }

    let store: PostgresStore
    let writes = Writes()

    var dialect: SQLDialect { .postgres }

    func table(_ name: String) -> String { store.table(name) }

    /// Keys from those earlier saves reserved, or, when too few are left, from a block reserved by a
    /// statement of its own first (``PostgresStore/reserveKeysNow(root:count:)``).
    func allocateKeys(root: EntityDescription, count: Int) throws -> Int64 {
        let first = try store.keyReserve.take(root: root.entityCode, count: count) ?? store.reserveKeysNow(root: root, count: count)
        writes.keys.append((root.entityCode, first..<(first + Int64(count))))
        return first
    }

    /// Puts the keys the plan took back in the reserve, for the save's transaction to take again.
    func giveBackKeys() {
        for (root, keys) in writes.keys.reversed() { store.keyReserve.giveBack(root: root, keys: keys) }
    }

    func execute(_ sql: String, _ arguments: [SQLArgument], entity: EntityDescription?) throws { throw NeedsTransaction() }

    func integerPairs(_ sql: String, _ arguments: [SQLArgument], entity: EntityDescription?) throws -> [(Int64, Int64?)] { throw NeedsTransaction() }

    /// Keeps an INSERT (made to return its row, or none when a unique index refuses it) or an
    /// UPDATE (which returns the row's new version, and fails the statement when a unique index
    /// refuses it); an update returns the version the row has once the statement has run, its
    /// expected one plus one.
    func write(
        _ sql: String, _ arguments: [SQLArgument], entity: EntityDescription, inserting: Bool, constrained: Bool, expectedVersion: Int64?,
        reportRefusal: () throws -> Void
    ) throws -> Int64? {
        guard inserting || expectedVersion != nil else { throw NeedsTransaction() }
        let parameters = try PostgresSaveSession.parameters(arguments, entity: entity)
        let statement = inserting ? sql + (constrained ? " ON CONFLICT DO NOTHING RETURNING 1" : " RETURNING 1") : sql
        writes.statements.append((statement, parameters))
        return expectedVersion.map { $0 + 1 }
    }

    func snapshots(_ ids: [ManagedObjectID]) throws -> [ManagedObjectID: Snapshot] { throw NeedsTransaction() }

    func columnValue(_ value: Value, for property: PropertyDescription) throws -> Value { value }

    func willOverwrite(_ object: SavedObject, deleting: Bool, in table: TableLayout, key: Int64) throws {}

    /// Not counted here: the save counts its one statement.
    func count(_ n: Int) {}

    /// The comment a one-statement save's text starts with, which names it in `pg_stat_activity`.
    static func comment(_ nonce: String) -> String { "/* ObjectGraph save \(nonce) */" }

    /// The line a one-statement save adds to its change-log row, which readers of the log skip
    /// (``PostgresChangeLog/decode(_:number:author:schema:store:)`` reads lines of three words or more).
    static func nonceLine(_ nonce: String) -> String { "n \(nonce)" }

    /// The one statement: each kept write as a common table expression (`w1`, `w2`, …), then the
    /// change log's count and row, only when every write returned its row, and a division by zero
    /// when the log's row was not written, which rolls the whole statement back.
    func statement(nonce: String, changes: String) -> (sql: String, parameters: [PostgresValue]) {
        var sql = Self.comment(nonce) + " WITH "
        var parameters: [PostgresValue] = []
        var counts: [String] = []
        for (i, write) in writes.statements.enumerated() {
            sql += "w\(i) AS (\(Self.renumbered(write.sql, after: parameters.count))), "
            parameters += write.parameters
            counts.append("(SELECT count(*) FROM w\(i))")
        }
        let condition = counts.isEmpty ? nil : "\(counts.joined(separator: " + ")) = \(counts.count)"
        sql += PostgresChangeLog.numbering(backend: store, condition: condition, firstParameter: parameters.count + 1)
        sql += """
             SELECT l."Z_TX", l.txid, pg_notify($\(parameters.count + 4), l."Z_TX"::text) \
            FROM (SELECT 1 / count(*)::int AS one FROM logged) AS c LEFT JOIN logged AS l ON c.one = 1
            """
        parameters += PostgresChangeLog.parameters(backend: store, changes: changes.isEmpty ? Self.nonceLine(nonce) : changes + "\n" + Self.nonceLine(nonce))
        return (sql, parameters)
    }

    /// `sql` with each parameter `$n` outside quotes and identifiers written as `$(n + offset)`.
    static func renumbered(_ sql: String, after offset: Int) -> String {
        guard offset > 0 else { return sql }
        let bytes = Array(sql.utf8)
        var result: [UInt8] = []
        result.reserveCapacity(bytes.count + 16)
        var quote: UInt8?
        var i = 0
        while i < bytes.count {
            let byte = bytes[i]
            i += 1
            if let open = quote {
                if byte == open { quote = nil }
                result.append(byte)
                continue
            }
            if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "'") { quote = byte }
            result.append(byte)
            guard byte == UInt8(ascii: "$") else { continue }
            var number = 0
            var digits = 0
            while i < bytes.count, bytes[i] >= UInt8(ascii: "0"), bytes[i] <= UInt8(ascii: "9") {
                number = number * 10 + Int(bytes[i] - UInt8(ascii: "0"))
                digits += 1
                i += 1
            }
            if digits > 0 { result += Array(String(number + offset).utf8) }
        }
        return String(decoding: result, as: UTF8.self)
    }
}
