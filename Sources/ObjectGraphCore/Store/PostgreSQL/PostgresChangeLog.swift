import Foundation

/// How the coordinators that share a PostgreSQL store hear each other's commits.
///
/// Every save writes one row to the store's change log (`Z_OGCHANGE`), in its own transaction:
/// its number (`Z_TX`: 1, 2, 3, … in commit order, with no gaps), the store object that wrote it,
/// and the IDs it inserted, updated (with the keys that changed) and deleted. It then calls
/// `pg_notify` on the store's channel with that number, which PostgreSQL delivers when, and only
/// if, the transaction commits. A notification carries only the number, never the IDs, so it is
/// never near PostgreSQL's 8000-byte limit: listeners read the rows after the last number they saw.
///
/// Numbers follow commit order because each save takes its number by incrementing the one row of
/// the log's count (`Z_OGCHANGECOUNT`), at the end of the save: the row stays locked until the
/// save commits or rolls back, and the next save's increment waits for it, then reads the row as
/// it committed. A listener that has read up to `n` has missed nothing before `n`. The count, the
/// log's row and the notification are one statement, so a save holds the lock from that
/// statement to its COMMIT, with no other statement between. The log keeps the last ``retainedTransactions`` rows; a
/// listener that finds a gap (it was away longer) reports a change it cannot name row by row.
enum PostgresChangeLog {
    /// How many transactions the log keeps.
    static let retainedTransactions: Int64 = 10_000

    /// One committed save, as the log holds it.
    struct Entry: Sendable {
        var number: Int64
        /// The ``PostgresStore/instanceID`` of the store object that wrote it.
        var author: String
        var inserted: [ManagedObjectID] = []
        var updated: [ManagedObjectID] = []
        var deleted: [ManagedObjectID] = []
        var changedKeys: [ManagedObjectID: Set<String>] = [:]
    }

    /// The channel a store's commits are announced on (lower-case, within PostgreSQL's 63 bytes).
    static func channel(forStore identifier: String) -> String {
        "og_" + identifier.lowercased().filter { $0.isLetter || $0.isNumber }
    }

    /// The text of a save's changes, a line per object or run of objects:
    /// - `i` or `d`, the entity number and the key: one inserted or deleted row;
    /// - `I` or `D`, the entity number, the first key and the last: the inserted or deleted rows
    ///   of every key from the first to the last (a batch request's rows, whose keys follow each
    ///   other, take one line);
    /// - `u`, the entity number, the key, then the names of the properties that changed.
    ///
    /// `insertedKeys` and `deletedKeys` name more inserted and deleted rows by entity number and
    /// key, as a batch request has them (without an ID per row).
    static func encode(
        _ request: StoreSaveRequest, permanentIDs: [ManagedObjectID: ManagedObjectID], schema: CoreDataLayout,
        insertedKeys: [Int: [Int64]] = [:], deletedKeys: [Int: [Int64]] = [:]
    ) -> String {
        var text = ""
        func newLine() { if !text.isEmpty { text += "\n" } }
        // Inserted and deleted rows: each entity's keys in order, runs of consecutive keys in one line.
        func runs(_ kind: String, _ objects: [SavedObject], _ keysByEntity: [Int: [Int64]]) {
            var keysByEntity = keysByEntity
            for object in objects {
                let id = permanentIDs.isEmpty ? object.id : permanentIDs[object.id] ?? object.id
                guard let pk = id.primaryKey else { continue }
                keysByEntity[schema.entityNumber(for: id.entity), default: []].append(pk)
            }
            for (number, keys) in keysByEntity.sorted(by: { $0.key < $1.key }) {
                let keys = keys.sorted()
                var first = 0
                while first < keys.count {
                    var last = first
                    while last + 1 < keys.count, keys[last + 1] <= keys[last] + 1 { last += 1 }
                    newLine()
                    if keys[last] == keys[first] {
                        text += "\(kind) \(number) \(keys[first])"
                    } else {
                        text += "\(kind.uppercased()) \(number) \(keys[first]) \(keys[last])"
                    }
                    first = last + 1
                }
            }
        }
        runs("i", request.inserted, insertedKeys)
        runs("d", request.deleted, deletedKeys)
        // Updates: the rows a batch request inserts or deletes have none.
        guard !request.updated.isEmpty || !request.joinInserts.isEmpty || !request.joinDeletes.isEmpty || !request.orderings.isEmpty else { return text }
        var updated: [ManagedObjectID: Set<String>] = [:]
        let inserted = Set(request.inserted.map(\.id))
        for object in request.updated {
            updated[object.id, default: []].formUnion(object.changedIndices.map { object.entity.properties[$0].name })
        }
        // A to-many change updates its source (and, through the inverse, its destination).
        for change in request.joinInserts + request.joinDeletes {
            if !inserted.contains(change.source) { updated[change.source, default: []].insert(change.relationship.name) }
            if let inverse = change.relationship.inverseRelationship, !inserted.contains(change.destination) {
                updated[change.destination, default: []].insert(inverse.name)
            }
        }
        for ordering in request.orderings where !inserted.contains(ordering.source) {
            updated[ordering.source, default: []].insert(ordering.relationship.name)
        }
        let deleted = Set(request.deleted.map(\.id))
        for (id, keys) in updated.sorted(by: { $0.key < $1.key }) where !deleted.contains(id) {
            let id = permanentIDs[id] ?? id
            guard let pk = id.primaryKey else { continue }
            newLine()
            text += "u \(schema.entityNumber(for: id.entity)) \(pk)"
            for key in keys.sorted() { text += " " + key }
        }
        return text
    }

    /// Reads a row's changes back as IDs of `store`; lines of entities the model lacks are skipped.
    static func decode(_ text: String, number: Int64, author: String, schema: CoreDataLayout, store: PersistentStore) -> Entry {
        var entry = Entry(number: number, author: author)
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: " ")
            guard parts.count >= 3, let number = Int(parts[1]), let pk = Int64(parts[2]), let entity = schema.entity(forNumber: number) else { continue }
            switch parts[0] {
            case "i": entry.inserted.append(ManagedObjectID(entity: entity, store: store, primaryKey: pk))
            case "d": entry.deleted.append(ManagedObjectID(entity: entity, store: store, primaryKey: pk))
            case "I", "D":
                guard parts.count == 4, let last = Int64(parts[3]), last >= pk else { continue }
                let ids = (pk...last).lazy.map { ManagedObjectID(entity: entity, store: store, primaryKey: $0) }
                if parts[0] == "I" { entry.inserted.append(contentsOf: ids) } else { entry.deleted.append(contentsOf: ids) }
            default:
                let id = ManagedObjectID(entity: entity, store: store, primaryKey: pk)
                entry.updated.append(id)
                entry.changedKeys[id] = Set(parts.dropFirst(3).map(String.init))
            }
        }
        return entry
    }

    /// Writes a save's row and announces it, at the end of the save's transaction; returns its
    /// number and the transaction's ID (`txid_current()`).
    static func record(
        _ request: StoreSaveRequest, permanentIDs: [ManagedObjectID: ManagedObjectID], insertedKeys: [Int: [Int64]] = [:], deletedKeys: [Int: [Int64]] = [:],
        backend: PostgresStore, session: any PostgresSession
    ) throws -> (number: Int64, txid: Int64) {
        backend.count()
        // The number, the row and its notification in one statement. An UPDATE that waited for the
        // row's lock reads the row as the save before committed it (READ COMMITTED), where a
        // SELECT of the log's last number would read it as of the statement's start.
        let rows = try session.query(
            "WITH \(numbering(backend: backend, firstParameter: 1)) SELECT \"Z_TX\", txid, pg_notify($4, \"Z_TX\"::text) FROM logged",
            parameters(backend: backend, changes: encode(request, permanentIDs: permanentIDs, schema: backend.schema, insertedKeys: insertedKeys, deletedKeys: deletedKeys)))
        let result = try numbered(rows, backend: backend)
        if result.number % 1000 == 0 { try purge(before: result.number, backend: backend, session: session) }
        return result
    }

    /// The common table expressions that number a save and write its row: `counted` increments
    /// the log's count (only when `condition`, if any, holds) and `logged` writes the row and
    /// returns `"Z_TX"` and `txid`. Their parameters are the author, the time and the changes, from
    /// `$firstParameter`; the channel ``parameters(backend:changes:)`` gives next is for `pg_notify`.
    static func numbering(backend: PostgresStore, condition: String? = nil, firstParameter p: Int) -> String {
        """
        counted AS (UPDATE \(backend.table(PostgresStoreTables.changeCountTable)) SET "Z_TX" = "Z_TX" + 1\(condition.map { " WHERE \($0)" } ?? "") RETURNING "Z_TX"), \
        logged AS (INSERT INTO \(backend.table(PostgresStoreTables.changeTable)) ("Z_TX", "Z_AUTHOR", "Z_TIME", "Z_CHANGES") \
        SELECT "Z_TX", $\(p), $\(p + 1), $\(p + 2) FROM counted RETURNING "Z_TX", txid_current() AS txid)
        """
    }

    /// The parameters of ``numbering(backend:condition:firstParameter:)``: the author, the time,
    /// the changes' text, and the channel to announce the number on.
    static func parameters(backend: PostgresStore, changes: String) -> [PostgresValue] {
        [.text(backend.instanceID), .double(Date().timeIntervalSinceReferenceDate), .text(changes), .text(channel(forStore: backend.identifier))]
    }

    /// The number and the transaction's ID of the one row a numbering statement returns.
    static func numbered(_ rows: [[PostgresValue]], backend: PostgresStore) throws -> (number: Int64, txid: Int64) {
        guard let row = rows.first, row.count == 3, let number = row[0].integer, let txid = row[1].integer else {
            throw ObjectGraphError(.io, "The \(StoreType.postgres) store \(backend.location) did not number a save in its change log (its count, \(PostgresStoreTables.changeCountTable), has no row)", url: backend.url)
        }
        return (number, txid)
    }

    /// Deletes the rows more than ``retainedTransactions`` before `number` (saves do every 1000th).
    static func purge(before number: Int64, backend: PostgresStore, session: any PostgresSession) throws {
        backend.count()
        try session.execute("DELETE FROM \(backend.table(PostgresStoreTables.changeTable)) WHERE \"Z_TX\" <= $1", [.int(number - retainedTransactions)])
    }

    /// The number of the last row of the log (0 when it is empty).
    ///
    /// Only the listener reads the log, on its own queue, at moments no context chose: its reads are
    /// not counted in ``StoreStatistics/sqlStatements``, which would otherwise change under a
    /// program measuring its own work.
    static func lastNumber(backend: PostgresStore, session: any PostgresSession) throws -> Int64 {
        return try session.query("SELECT COALESCE(MAX(\"Z_TX\"), 0) FROM \(backend.table(PostgresStoreTables.changeTable))", []).first?.first?.integer ?? 0
    }

    /// The rows after `number`, in order (at most `limit`); nil when rows right after `number` were
    /// purged (the caller cannot name every change it missed). The rows `backend` wrote itself
    /// come with their number and author only: its coordinator has already taken their changes in.
    /// Not counted, like ``lastNumber(backend:session:)``.
    static func entries(after number: Int64, limit: Int, backend: PostgresStore, store: PersistentStore, session: any PostgresSession) throws -> [Entry]? {
        let rows = try session.query(
            """
            SELECT "Z_TX", "Z_AUTHOR", CASE WHEN "Z_AUTHOR" = $2 THEN '' ELSE "Z_CHANGES" END \
            FROM \(backend.table(PostgresStoreTables.changeTable)) WHERE "Z_TX" > $1 ORDER BY "Z_TX" LIMIT \(limit)
            """,
            [.int(number), .text(backend.instanceID)])
        var entries: [Entry] = []
        for row in rows {
            guard let n = row[0].integer else { continue }
            guard case .text(let author) = row[1] else { continue }
            let text: String = if case .text(let t) = row[2] { t } else { "" }
            entries.append(decode(text, number: n, author: author, schema: backend.schema, store: store))
        }
        if let first = entries.first, first.number != number + 1 { return nil }
        return entries
    }
}

/// Listens for a PostgreSQL store's commits (see ``PostgresChangeLog``) and reports each, in
/// order, on a queue of its own. After a lost connection it reads what it missed from the log.
final class PostgresChangeListener: RemoteChangeWatcher, @unchecked Sendable {  // `last` is used on `queue` only
    /// What the listener heard: the committed saves since the last report, or nil for changes it
    /// cannot name (the log was purged past them).
    typealias Report = @Sendable (_ entries: [PostgresChangeLog.Entry]?) -> Void

    private let backend: PostgresStore
    private let store: PersistentStore
    private let report: Report
    private let queue = DispatchQueue(label: "ObjectGraph.PostgresChangeListener")
    private var listener: (any PostgresListener)?
    private var last: Int64 = 0
    private let stopped = Protected(false)
    /// Whether a catch-up is already queued (notifications that arrive meanwhile need none of their own).
    private let queued = Protected(false)

    init(backend: PostgresStore, store: PersistentStore, report: @escaping Report) throws {
        self.backend = backend
        self.store = store
        self.report = report
        queue.setSpecific(key: Self.queueKey, value: true)
        do {
            listener = try backend.driver.listen(
                channel: PostgresChangeLog.channel(forStore: backend.identifier),
                handler: { [weak self] _ in self?.schedule() }, reconnected: { [weak self] in self?.schedule() })
            // Listening first: a commit after this read is announced to this listener.
            last = try backend.read("reading the change log", oneStatement: true) { session in try PostgresChangeLog.lastNumber(backend: backend, session: session) }
        } catch let error as PostgresDriverError {
            listener?.cancel()
            throw backend.translate(error, while: "listening for changes")
        } catch {
            listener?.cancel()
            throw error
        }
    }

    /// Queues a catch-up, unless one is queued already.
    private func schedule(after delay: Double = 0) {
        guard !stopped.withLock({ $0 }), !queued.withLock({ let was = $0; $0 = true; return was }) else { return }
        queue.asyncAfter(deadline: .now() + delay) { [weak self] in
            guard let self else { return }
            self.queued.withLock { $0 = false }
            self.catchUp()
        }
    }

    /// Reads and reports every row after the last one reported; tries again soon when the read fails.
    private func catchUp() {
        while !stopped.withLock({ $0 }) {
            let entries: [PostgresChangeLog.Entry]?
            do {
                entries = try backend.read("reading the change log", oneStatement: true) { session in
                    try PostgresChangeLog.entries(after: last, limit: 1000, backend: backend, store: store, session: session)
                }
            } catch {
                schedule(after: 0.5)
                return
            }
            guard let entries else {
                // Purged past the last row reported: start again from the end, and say something changed.
                guard let end = try? backend.read("reading the change log", oneStatement: true, { try PostgresChangeLog.lastNumber(backend: backend, session: $0) }) else {
                    schedule(after: 0.5)
                    return
                }
                last = end
                report(nil)
                return
            }
            guard let final = entries.last else { return }
            last = final.number
            report(entries)
            if entries.count < 1000 { return }
        }
    }

    func stop() {
        guard !stopped.withLock({ let was = $0; $0 = true; return was }) else { return }
        listener?.cancel()
        // Wait for a report under way, unless this is the listener's own queue.
        if DispatchQueue.getSpecific(key: Self.queueKey) == nil { queue.sync {} }
    }

    private static let queueKey = DispatchSpecificKey<Bool>()
}
