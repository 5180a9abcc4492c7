import Foundation
import GRDB
import Logging

/// The SQL an SQLite store runs, logged as Core Data's `-com.apple.CoreData.SQLDebug` prints it:
///
/// | level | what is logged |
/// |---|---|
/// | 1 | every statement, with `?` for its values, and how long it took; each save's summary |
/// | 2 | also the rows each INSERT, UPDATE and DELETE changed |
/// | 3 | also the values bound (in the statement, where level 1 shows `?`) |
/// | 4 | also SQLite's query plan of each fetch and count |
///
/// Turned on by the environment (`OBJECTGRAPH_SQL_DEBUG=1` … `4`) or by the store option
/// ``PersistentStoreOption/sqlDebugLevel``, the higher of the two. Off (0, the default), no
/// statement is traced: it costs nothing.
struct SQLDebugLog: Sendable {
    let logger: Logger
    let level: Int
    let store: String

    /// The level the environment asks for (0 when unset or not a number from 1 to 4).
    static var environmentLevel: Int {
        guard let text = ProcessInfo.processInfo.environment["OBJECTGRAPH_SQL_DEBUG"], let level = Int(text) else { return 0 }
        return min(max(level, 0), 4)
    }

    /// A log for a store, or nil when the level is 0.
    static func make(logger: Logger, optionLevel: Int, store: String) -> SQLDebugLog? {
        let level = max(optionLevel, environmentLevel)
        return level > 0 ? SQLDebugLog(logger: logger, level: min(level, 4), store: store) : nil
    }

    /// Installs the statement trace on a connection.
    func install(on db: Database) {
        let log = self
        db.trace(options: .profile) { [unowned db] event in
            guard case .profile(let statement, let duration) = event else { return }
            let sql = log.level >= 3 ? statement.expandedSQL : statement.sql
            guard !sql.hasPrefix("EXPLAIN QUERY PLAN") else { return }
            var message = "\(sql) — \(String(format: "%.3f", duration * 1000)) ms"
            if log.level >= 2, Self.changesRows(statement.sql) { message += ", \(db.changesCount) row\(db.changesCount == 1 ? "" : "s") changed" }
            log.logger.info("\(message)", metadata: ["store": "\(log.store)"])
        }
    }

    /// Logs SQLite's plan of a query (level 4).
    func logPlan(of sql: String, arguments: [Value], _ db: Database) {
        guard level >= 4, let statement = try? db.makeStatement(sql: "EXPLAIN QUERY PLAN " + sql, arguments: arguments) else { return }
        guard let rows = try? Row.fetchAll(statement) else { return }
        let plan = rows.map { row -> String in row["detail"] ?? "" }.joined(separator: "; ")
        logger.info("QUERY PLAN of \(sql): \(plan)", metadata: ["store": "\(store)"])
    }

    private static func changesRows(_ sql: String) -> Bool {
        let head = sql.prefix(7).uppercased()
        return head.hasPrefix("INSERT") || head.hasPrefix("UPDATE") || head.hasPrefix("DELETE")
    }
}
