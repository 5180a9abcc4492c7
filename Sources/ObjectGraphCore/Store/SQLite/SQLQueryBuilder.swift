import Foundation
import GRDB

/// Translates a ``FetchPredicate`` and ``FetchSortDescriptor``s into SQL for the SQLite store,
/// with the semantics of in-memory evaluation (``PredicateEvaluator``).
///
/// The fetch path assembles the statement (``selectStatement(schema:entity:includesSubentities:predicate:sortDescriptors:columns:limit:offset:)``
/// does it the reference way):
///
/// ```swift
/// var builder = SQLQueryBuilder(schema: schema, entity: entity)
/// let condition = try builder.whereClause(for: predicate)        // "t0."rank" > ?"
/// let order = try builder.orderByClause(for: sortDescriptors)    // "t0."rank" DESC", or ""
/// let sql = "SELECT t0.* FROM \"Note\" AS t0 \(builder.joinClause()) WHERE <restriction> AND (\(condition))"
///     + (order.isEmpty ? "" : " ORDER BY \(order)")
/// // statement.setArguments(builder.arguments)
/// ```
///
/// Every user value is a bound `?` argument, in ``arguments``, in the order the `?` appear in
/// the WHERE text followed by the ORDER BY text (joins have none). To-one key paths become
/// deduplicated `LEFT JOIN`s (``joins``, read them after building both clauses); to-many key
/// paths become correlated `EXISTS (SELECT 1 …)` and `(SELECT COUNT(*) …)` subqueries, and so
/// does `SUBQUERY(…).@count` (its variable is the subquery's row); arithmetic is SQLite's own,
/// which ``PredicateArithmetic/apply(_:_:)`` reproduces in memory. Every
/// condition is false (0 or NULL) exactly when evaluation in memory is false; `NOT` and `ALL`
/// turn NULL into false before negating. String operators other than a case-sensitive
/// `BEGINSWITH` (which becomes an index-friendly range) call the functions of ``SQLiteFunctions``,
/// which must be registered on the connection.
struct SQLQueryBuilder {
    let schema: CoreDataLayout
    /// The fetched entity: key paths start from it.
    let entity: EntityDescription
    /// The alias of the fetched entity's table.
    let rootAlias = "t0"
    /// `LEFT JOIN …` clauses for the to-one key paths used so far.
    private(set) var joins: [String] = []
    /// The values of the `?` placeholders, in order.
    private(set) var arguments: [Value] = []
    private var joinAliases: [String: String] = [:]
    private var aliasCount = 0

    init(schema: CoreDataLayout, entity: EntityDescription) {
        self.schema = schema
        self.entity = entity
    }

    /// The SQL condition for `predicate`, its arguments appended to ``arguments``.
    ///
    /// - Throws: the predicate's ``ObjectGraphError/predicateSyntax`` error;
    ///   ``ObjectGraphError/invalidFetchRequest`` for an unknown key (naming the entity and the
    ///   key), a transient attribute, a misused to-many key path, or an invalid MATCHES pattern.
    mutating func whereClause(for predicate: FetchPredicate) throws -> String {
        try predicate.validate()
        let compiler = makeCompiler()
        let fragment = try compiler.condition(predicate.node)
        absorb(compiler)
        arguments += fragment.arguments
        return fragment.sql
    }

    /// The ORDER BY terms for `descriptors` (without the `ORDER BY` keyword), or `""` when there are none.
    ///
    /// - Throws: ``ObjectGraphError/invalidFetchRequest`` for an unknown key, a transient
    ///   attribute, or a key path through a to-many relationship.
    mutating func orderByClause(for descriptors: [FetchSortDescriptor]) throws -> String {
        let compiler = makeCompiler()
        var terms: [String] = []
        for descriptor in descriptors {
            let path = try descriptor.analyzedKeyPath(from: entity)
            guard case .scalar(let expression) = try compiler.compile(path, in: compiler.root) else { continue }
            var sql = expression.fragment.sql
            if descriptor.caseInsensitive && expression.valueClass == .string {
                sql = "og_fold(\(sql), \(PredicateComparison.Options.caseInsensitive.rawValue))"
            }
            terms.append(sql + (descriptor.ascending ? " ASC" : " DESC"))
        }
        absorb(compiler)
        return terms.joined(separator: ", ")
    }

    /// The ``joins``, space-separated (`""` when there are none).
    func joinClause() -> String { joins.joined(separator: " ") }

    private func makeCompiler() -> SQLPredicateCompiler {
        SQLPredicateCompiler(
            schema: schema, root: SQLScope(alias: rootAlias, entity: entity, joins: joins, joinAliases: joinAliases),
            aliasCount: aliasCount)
    }

    private mutating func absorb(_ compiler: SQLPredicateCompiler) {
        joins = compiler.root.joins
        joinAliases = compiler.root.joinAliases
        aliasCount = compiler.aliasCount
    }

    /// A whole fetch statement, assembled the way the SQLite store's fetch path does: the columns
    /// of the fetched entity's table restricted to the entity (and its sub-entities), filtered,
    /// ordered, limited.
    ///
    /// - Throws: what ``whereClause(for:)`` and ``orderByClause(for:)`` throw.
    static func selectStatement(
        schema: CoreDataLayout, entity: EntityDescription, includesSubentities: Bool = true,
        predicate: FetchPredicate?, sortDescriptors: [FetchSortDescriptor] = [], columns: String = "t0.*",
        limit: Int? = nil, offset: Int? = nil
    ) throws -> (sql: String, arguments: [Value]) {
        var builder = SQLQueryBuilder(schema: schema, entity: entity)
        var conditions: [String] = []
        if let restriction = schema.entityRestriction(for: entity, includesSubentities: includesSubentities, alias: builder.rootAlias) {
            conditions.append(restriction)
        }
        if let predicate { conditions.append("(" + (try builder.whereClause(for: predicate)) + ")") }
        let order = try builder.orderByClause(for: sortDescriptors)
        var sql = "SELECT \(columns) FROM \(CoreDataLayout.quote(schema.tableName(for: entity))) AS \(builder.rootAlias)"
        if !builder.joins.isEmpty { sql += " " + builder.joinClause() }
        if !conditions.isEmpty { sql += " WHERE " + conditions.joined(separator: " AND ") }
        if !order.isEmpty { sql += " ORDER BY " + order }
        if let limit { sql += " LIMIT \(max(limit, 0))" }
        if let offset, offset > 0 { sql += (limit == nil ? " LIMIT -1" : "") + " OFFSET \(offset)" }
        return (sql, builder.arguments)
    }
}

// MARK: - Fragments

/// SQL text and the values of its `?` placeholders, kept together so that putting fragments
/// together keeps the arguments in the order of their placeholders.
struct SQLFragment: ExpressibleByStringInterpolation {
    var sql: String
    var arguments: [Value]

    init(sql: String, arguments: [Value] = []) {
        self.sql = sql
        self.arguments = arguments
    }

    init(stringLiteral value: String) {
        self.init(sql: value)
    }

    init(stringInterpolation: StringInterpolation) {
        self = stringInterpolation.fragment
    }

    static let `true` = SQLFragment(sql: "1")
    static let `false` = SQLFragment(sql: "0")

    static func constant(_ value: Bool) -> SQLFragment { value ? .true : .false }

    struct StringInterpolation: StringInterpolationProtocol {
        var fragment = SQLFragment(sql: "")

        init(literalCapacity: Int, interpolationCount: Int) {
            fragment.sql.reserveCapacity(literalCapacity + 8 * interpolationCount)
        }

        mutating func appendLiteral(_ literal: String) { fragment.sql += literal }

        mutating func appendInterpolation(_ other: SQLFragment) {
            fragment.sql += other.sql
            fragment.arguments += other.arguments
        }

        /// A `?` bound to `value`.
        mutating func appendInterpolation(bind value: Value) {
            fragment.sql += "?"
            fragment.arguments.append(value)
        }

        /// SQL text generated by ObjectGraph itself (never a user value).
        mutating func appendInterpolation(raw text: String) { fragment.sql += text }
    }

    static func joined(_ fragments: [SQLFragment], separator: String) -> SQLFragment {
        var result = SQLFragment(sql: "")
        for (i, fragment) in fragments.enumerated() {
            if i > 0 { result.sql += separator }
            result.sql += fragment.sql
            result.arguments += fragment.arguments
        }
        return result
    }
}
