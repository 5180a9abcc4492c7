import Foundation
import GRDB

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
enum SQLiteFunctions {
    static let fold = DatabaseFunction("og_fold", argumentCount: 2, pure: true) { arguments in
        guard case .string(let text) = arguments[0].storage else { return arguments[0] }
        return PredicateStrings.fold(text, options: options(arguments[1]))
    }

    /// `og_real(x)`: the number a REAL column holds, decoding the 8-byte BLOB a NaN or -0.0 is
    /// stored as (see SQLiteValues.swift): -0.0 for -0.0, NULL for NaN (SQLite has no NaN, and NaN
    /// equals nothing). Any other value is returned unchanged.
    static let real = DatabaseFunction("og_real", argumentCount: 1, pure: true) { arguments in
        guard case .blob(let data) = arguments[0].storage else { return arguments[0] }
        guard let v = data.withUnsafeBytes(Value.double(fromSpecialReal:)) else { return arguments[0] }
        return v.isNaN ? nil : v
    }

    static let beginsWith = stringOperator("og_beginswith", .beginsWith)
    static let endsWith = stringOperator("og_endswith", .endsWith)
    static let contains = stringOperator("og_contains", .contains)
    static let like = stringOperator("og_like", .like)
    static let matches = stringOperator("og_matches", .matches)

    /// The functions the triggers Core Data writes for derived attributes call to tell its context
    /// which objects they changed (`NSCoreDataDATriggerUpdatedAffectedObjectValue(table, Z_ENT, Z_PK,
    /// property, value)`): they return NULL, so the triggers keep the derived values up to date in the
    /// store, and ObjectGraph reads the new values when it next reads the rows.
    static let derivedAttributeTriggers = ["NSCoreDataDATriggerUpdatedAffectedObjectValue", "NSCoreDataDATriggerInsertUpdatedAffectedObjectValue"]
        .map { DatabaseFunction($0, argumentCount: 5, pure: false) { _ in nil } }

    /// Every function, by name (for ``SQLQueryBuilder``).
    static let all: [DatabaseFunction] = [fold, real, beginsWith, endsWith, contains, like, matches] + derivedAttributeTriggers

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
        for function in all { db.add(function: function) }
    }

    private static func stringOperator(_ name: String, _ op: PredicateComparison.Operator) -> DatabaseFunction {
        DatabaseFunction(name, argumentCount: 3, pure: true) { arguments in
            guard case .string(let text) = arguments[0].storage, case .string(let pattern) = arguments[1].storage else {
                return 0
            }
            return try PredicateStrings.apply(op, text, pattern, options: options(arguments[2])) ? 1 : 0
        }
    }

    private static func options(_ flags: DatabaseValue) -> PredicateComparison.Options {
        guard case .int64(let raw) = flags.storage else { return [] }
        return PredicateComparison.Options(rawValue: Int(truncatingIfNeeded: raw) & 3)
    }
}
