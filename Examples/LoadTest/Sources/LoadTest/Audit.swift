import Foundation
import Logging
import PostgresNIO

/// A note as the database holds it after the run.
struct StoredNote: Sendable {
    var id: UUID
    var title: String
    var body: String
    /// The folder's ID, nil when the note has none (or its folder row is missing: see `danglingFolder`).
    var folder: UUID?
    /// The note names a folder row that does not exist.
    var danglingFolder: Bool
}

/// What the audit found.
struct AuditResult: Sendable {
    var acknowledgedCreates = 0
    var acknowledgedUpdates = 0
    var rowsInDatabase = 0
    /// Acknowledged creates whose note is not there, or acknowledged updates neither current nor
    /// superseded by a later (or concurrent) update of the same note.
    var lostCreates = 0
    var lostUpdates = 0
    /// A note without the folder its acknowledged create set, with another folder or title, or one
    /// that names a missing folder row.
    var halfDone = 0
    /// A note whose body is that of a PATCH answered 409 (refused, so never written).
    var refusedButApplied = 0
    /// Rows no acknowledged create made: from creates whose answer was lost (a connection error,
    /// a time-out, a 5xx), which may or may not have committed; `unexplainedRows` matches none at all.
    var inDoubtCreatesFound = 0
    var inDoubtCreatesAnswered503 = 0
    var unexplainedRows = 0
    var examples: [String] = []

    var passed: Bool { lostCreates == 0 && lostUpdates == 0 && halfDone == 0 && refusedButApplied == 0 && unexplainedRows == 0 }

    mutating func note(_ problem: String) { if examples.count < 8 { examples.append(problem) } }
}

enum Audit {
    /// The notes of a server kind's tables, read with PostgresNIO.
    static func storedNotes(kind: ServerKind, url: URL, logger: Logger) async throws -> [StoredNote] {
        let sql: String
        switch kind {
        case .objectgraph:
            // ObjectGraph's Core Data layout: UUIDs as 16 bytes, the folder as its row's Z_PK.
            sql = """
                SELECT encode(n."ZID", 'hex'), n."ZTITLE", n."ZBODY", encode(f."ZID", 'hex'), (n."ZFOLDER" IS NOT NULL AND f."Z_PK" IS NULL)
                FROM "ZNOTE" n LEFT JOIN "ZFOLDER" f ON f."Z_PK" = n."ZFOLDER"
                """
        case .floor:
            sql = "SELECT replace(n.id::text, '-', ''), n.title, n.body, replace(f.id::text, '-', ''), (n.folder IS NOT NULL AND f.id IS NULL) FROM notes n LEFT JOIN folders f ON f.id = n.folder"
        case .fluent:
            sql = "SELECT replace(n.id::text, '-', ''), n.title, n.body, replace(f.id::text, '-', ''), (n.folder_id IS NOT NULL AND f.id IS NULL) FROM fluent_notes n LEFT JOIN fluent_folders f ON f.id = n.folder_id"
        }
        let connection = try await PostgresConnection.connect(
            configuration: .init(host: url.host ?? "127.0.0.1", port: url.port ?? 5432, username: "postgres", password: nil, database: String(url.path.dropFirst()), tls: .disable),
            id: 1, logger: logger)
        do {
            var notes: [StoredNote] = []
            let rows = try await connection.query(PostgresQuery(unsafeSQL: sql), logger: logger)
            for try await (id, title, body, folder, dangling) in rows.decode((String, String?, String?, String?, Bool).self) {
                notes.append(StoredNote(id: uuid(hex: id), title: title ?? "", body: body ?? "", folder: folder.map(uuid(hex:)), danglingFolder: dangling))
            }
            try await connection.close()
            return notes
        } catch {
            try? await connection.close()
            throw error
        }
    }

    static func uuid(hex: String) -> UUID {
        let h = Array(hex)
        guard h.count == 32 else { return UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)) }
        let text = String(h[0..<8]) + "-" + String(h[8..<12]) + "-" + String(h[12..<16]) + "-" + String(h[16..<20]) + "-" + String(h[20..<32])
        return UUID(uuidString: text) ?? UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))
    }

    /// Every acknowledged write against the database (see ``AuditResult``).
    static func check(log: ClientLog, stored: [StoredNote]) -> AuditResult {
        var result = AuditResult()
        result.rowsInDatabase = stored.count
        let byID = Dictionary(stored.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        var explained = Set<UUID>()
        var createBody: [UUID: String] = [:]

        for create in log.creates where create.outcome.isSuccess {
            result.acknowledgedCreates += 1
            guard let id = create.id, let note = byID[id] else {
                result.lostCreates += 1
                result.note("lost create: \(create.title) (\(create.id?.uuidString ?? "no id"))")
                continue
            }
            explained.insert(id)
            createBody[id] = create.body
            if note.title != create.title || note.folder != create.folder || note.danglingFolder {
                result.halfDone += 1
                result.note("half-done create \(id): title \(note.title) (sent \(create.title)), folder \(note.folder?.uuidString ?? "none")\(note.danglingFolder ? " (missing row)" : "") (sent \(create.folder?.uuidString ?? "none"))")
            }
        }
        // Creates without an acknowledgement (no answer, 5xx) may have committed: find them by title.
        let byTitle = Dictionary(stored.map { ($0.title, $0) }, uniquingKeysWith: { first, _ in first })
        for create in log.creates where !create.outcome.isSuccess {
            if let note = byTitle[create.title], !explained.contains(note.id) {
                explained.insert(note.id)
                createBody[note.id] = create.body
                if case .status(let code) = create.outcome, code < 500 {
                    result.refusedButApplied += 1
                    result.note("create answered \(code) but saved: \(create.title)")
                } else {
                    result.inDoubtCreatesFound += 1
                    if create.outcome == .status(503) { result.inDoubtCreatesAnswered503 += 1 }
                }
            }
        }
        for note in stored where !explained.contains(note.id) {
            result.unexplainedRows += 1
            result.note("row no create explains: \(note.id) \(note.title)")
        }

        // Updates, note by note: the current body is the create's or one of the updates' that were
        // not refused; every acknowledged update is current or superseded by another update that
        // did not end before it started.
        let updates = Dictionary(grouping: log.updates, by: \.note)
        for (id, attempts) in updates {
            guard let note = byID[id] else { continue }
            let current = note.body
            if let refused = attempts.first(where: { $0.outcome == .status(409) && $0.body == current }) {
                result.refusedButApplied += 1
                result.note("PATCH answered 409 but saved: \(id) body \(refused.body)")
            }
            for update in attempts where update.outcome.isSuccess {
                result.acknowledgedUpdates += 1
                if update.body == current { continue }
                let superseded = attempts.contains { other in
                    // A refused PATCH (4xx) wrote nothing; one that ended before this one started was
                    // saved before it, unless its client gave up waiting (the server may save it later).
                    other.body == current && other.body != update.body && !other.outcome.isClientError
                        && (other.outcome == .timeout || other.end >= update.start)
                }
                if !superseded {
                    result.lostUpdates += 1
                    result.note("lost update of \(id): acknowledged body \(update.body), stored \(current)\(createBody[id] == current ? " (the create's)" : "")")
                }
            }
        }
        return result
    }
}
