import Foundation
import GRDB
import GRDBSQLite

/// The SQL functions that predicates and sort descriptors compile to, registered on every
/// connection of an SQLite store.
///
/// Each runs the same Swift code as in-memory evaluation (``PredicateStrings``), so a fetch from
/// SQLite and an evaluation in memory agree. All are deterministic and pure. `flags` is the raw
/// value of ``PredicateComparison/Options``: 1 = `[c]`, 2 = `[d]`, 3 = `[cd]`.
///
/// - `og_fold(text, flags)`: the folded text (NULL and non-text values are returned unchanged).
/// - `og_real(x)`: a REAL column's number, a NaN or -0.0 stored as a BLOB decoded.
/// - `og_beginswith(text, prefix, flags)`, `og_endswith`, `og_contains`, `og_like`, `og_matches`:
///   1 or 0; 0 when either argument is not text (NULL included).
///
/// They are registered with SQLite's C API, not as GRDB `DatabaseFunction`s: GRDB reads a text
/// argument and returns a text result as a C string, which ends at the first U+0000, so a string
/// holding one would be compared by its beginning only. These read and write text with its length.
enum SQLiteFunctions {
    /// A function SQLite calls: its name, argument count, whether its result depends on its
    /// arguments alone, and its body.
    private struct Function {
        var name: String
        var argumentCount: CInt
        var deterministic: Bool
        var body: @convention(c) (OpaquePointer?, CInt, UnsafeMutablePointer<OpaquePointer?>?) -> Void
    }

    /// `og_fold(text, flags)`: the folded text (NULL and non-text values are returned unchanged).
    private static let fold = Function(name: "og_fold", argumentCount: 2, deterministic: true) { context, _, arguments in
        guard let arguments, let text = string(arguments[0]) else { return sqlite3_result_value(context, arguments?[0]) }
        resultText(context, PredicateStrings.fold(text, options: options(arguments[1])))
    }

    /// `og_real(x)`: the number a REAL column holds, decoding the 8-byte BLOB a NaN or -0.0 is
    /// stored as (see SQLiteValues.swift): -0.0 for -0.0, NULL for NaN (SQLite has no NaN, and NaN
    /// equals nothing). Any other value is returned unchanged.
    private static let real = Function(name: "og_real", argumentCount: 1, deterministic: true) { context, _, arguments in
        guard let value = arguments?[0], sqlite3_value_type(value) == SQLITE_BLOB else { return sqlite3_result_value(context, arguments?[0]) }
        let bytes = UnsafeRawBufferPointer(start: sqlite3_value_blob(value), count: Int(sqlite3_value_bytes(value)))
        guard let v = Value.double(fromSpecialReal: bytes) else { return sqlite3_result_value(context, value) }
        if v.isNaN { sqlite3_result_null(context) } else { sqlite3_result_double(context, v) }
    }

    private static let beginsWith = Function(name: "og_beginswith", argumentCount: 3, deterministic: true) { stringOperator(.beginsWith, $0, $2) }
    private static let endsWith = Function(name: "og_endswith", argumentCount: 3, deterministic: true) { stringOperator(.endsWith, $0, $2) }
    private static let contains = Function(name: "og_contains", argumentCount: 3, deterministic: true) { stringOperator(.contains, $0, $2) }
    private static let like = Function(name: "og_like", argumentCount: 3, deterministic: true) { stringOperator(.like, $0, $2) }
    private static let matches = Function(name: "og_matches", argumentCount: 3, deterministic: true) { stringOperator(.matches, $0, $2) }

    /// The functions the triggers Core Data writes for derived attributes call to tell its context
    /// which objects they changed (`NSCoreDataDATriggerUpdatedAffectedObjectValue(table, Z_ENT, Z_PK,
    /// property, value)`): they return NULL, so the triggers keep the derived values up to date in the
    /// store, and ObjectGraph reads the new values when it next reads the rows.
    private static let derivedAttributeTriggers = ["NSCoreDataDATriggerUpdatedAffectedObjectValue", "NSCoreDataDATriggerInsertUpdatedAffectedObjectValue"]
        .map { Function(name: $0, argumentCount: 5, deterministic: false) { context, _, _ in sqlite3_result_null(context) } }

    /// Every function.
    private static let all: [Function] = [fold, real, beginsWith, endsWith, contains, like, matches] + derivedAttributeTriggers

    /// The name of the function for a string operator.
    static func name(of op: PredicateComparison.Operator) -> String {
        switch op {
        case .beginsWith: "og_beginswith"
        case .endsWith: "og_endswith"
        case .contains: "og_contains"
        case .like: "og_like"
        case .matches: "og_matches"
        default: preconditionFailure("\(op.symbol) is not a string operator")
        }
    }

    /// Registers the functions on a connection. The store calls it on every connection it opens
    /// (`Configuration.prepareDatabase`).
    static func register(in db: Database) {
        for function in all {
            let flags = SQLITE_UTF8 | (function.deterministic ? SQLITE_DETERMINISTIC : 0)
            let code = sqlite3_create_function_v2(db.sqliteConnection, function.name, function.argumentCount, flags, nil, function.body, nil, nil, nil)
            // Only out of memory, or a bad name or count (a bug here), makes it fail.
            precondition(code == SQLITE_OK, "SQLite refused to register the SQL function \(function.name) (code \(code))")
        }
    }

    private static func stringOperator(_ op: PredicateComparison.Operator, _ context: OpaquePointer?, _ arguments: UnsafeMutablePointer<OpaquePointer?>?) {
        guard let arguments, let text = string(arguments[0]), let pattern = string(arguments[1]) else { return sqlite3_result_int(context, 0) }
        do {
            sqlite3_result_int(context, try PredicateStrings.apply(op, text, pattern, options: options(arguments[2])) ? 1 : 0)
        } catch {
            sqlite3_result_error(context, "\(error)", -1)
        }
    }

    /// A text argument with its length (an embedded U+0000 is kept); nil for any other type.
    private static func string(_ value: OpaquePointer?) -> String? {
        guard sqlite3_value_type(value) == SQLITE_TEXT else { return nil }
        guard let start = sqlite3_value_text(value) else { return "" }
        return String(decoding: UnsafeBufferPointer(start: start, count: Int(sqlite3_value_bytes(value))), as: UTF8.self)
    }

    private static func resultText(_ context: OpaquePointer?, _ text: String) {
        var text = text
        text.withUTF8 { utf8 in
            guard let start = utf8.baseAddress, utf8.count > 0 else { return sqlite3_result_text(context, "", 0, sqliteTransient) }
            start.withMemoryRebound(to: CChar.self, capacity: utf8.count) {
                sqlite3_result_text64(context, $0, sqlite3_uint64(utf8.count), sqliteTransient, UInt8(SQLITE_UTF8))
            }
        }
    }

    private static func options(_ flags: OpaquePointer?) -> PredicateComparison.Options {
        guard sqlite3_value_type(flags) == SQLITE_INTEGER else { return [] }
        return PredicateComparison.Options(rawValue: Int(truncatingIfNeeded: sqlite3_value_int64(flags)) & 3)
    }
}
