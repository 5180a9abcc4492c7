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
/// // bind builder.arguments.map(\.databaseValue)
/// ```
///
/// Every user value is a bound `?` argument, in ``arguments``, in the order the `?` appear in
/// the WHERE text followed by the ORDER BY text (joins have none). To-one key paths become
/// deduplicated `LEFT JOIN`s (``joins``, read them after building both clauses); to-many key
/// paths become correlated `EXISTS (SELECT 1 …)` and `(SELECT COUNT(*) …)` subqueries. Every
/// condition is false (0 or NULL) exactly when evaluation in memory is false; `NOT` and `ALL`
/// turn NULL into false before negating. String operators other than a case-sensitive
/// `BEGINSWITH` (which becomes an index-friendly range) call the functions of ``SQLiteFunctions``,
/// which must be registered on the connection.
struct SQLQueryBuilder {
    let schema: SQLiteSchema
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

    init(schema: SQLiteSchema, entity: EntityDescription) {
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
        schema: SQLiteSchema, entity: EntityDescription, includesSubentities: Bool = true,
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
        var sql = "SELECT \(columns) FROM \(SQLiteSchema.quote(schema.tableName(for: entity))) AS \(builder.rootAlias)"
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

// MARK: - Test support

/// An in-memory SQLite database with a model's schema and ``SQLiteFunctions`` registered, so
/// tests can run generated SQL without importing GRDB.
struct SQLQueryTestDatabase: Sendable {
    let schema: SQLiteSchema
    private let queue: DatabaseQueue

    init(model: ManagedObjectModel) throws {
        schema = SQLiteSchema(model: model)
        var configuration = Configuration()
        configuration.prepareDatabase { db in SQLiteFunctions.register(in: db) }
        queue = try DatabaseQueue(configuration: configuration)
        let statements = schema.createStatements()
        try queue.write { db in
            for statement in statements { try db.execute(sql: statement) }
        }
    }

    /// Runs a statement.
    func execute(_ sql: String, _ arguments: [Value] = []) throws {
        try queue.write { db in
            try db.execute(sql: sql, arguments: StatementArguments(arguments.map(\.databaseValue)))
        }
    }

    /// The first column of every row of a query, as integers.
    func integers(_ sql: String, _ arguments: [Value] = []) throws -> [Int64] {
        try queue.read { db in
            try Int64.fetchAll(db, sql: sql, arguments: StatementArguments(arguments.map(\.databaseValue)))
        }
    }

    /// The first column of the first row of a query: nil, an integer, a real, a string or data.
    func scalar(_ sql: String, _ arguments: [Value] = []) throws -> Value {
        try queue.read { db in
            switch try DatabaseValue.fetchOne(db, sql: sql, arguments: StatementArguments(arguments.map(\.databaseValue)))?.storage {
            case .int64(let v)?: .int(v)
            case .double(let v)?: .double(v)
            case .string(let v)?: .string(v)
            case .blob(let v)?: .data(v)
            case .null?, nil: .null
            }
        }
    }

    /// The `detail` column of `EXPLAIN QUERY PLAN` for a query.
    func queryPlan(_ sql: String, _ arguments: [Value] = []) throws -> [String] {
        try queue.read { db in
            try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + sql, arguments: StatementArguments(arguments.map(\.databaseValue)))
                .map { $0["detail"] as String? ?? "" }
        }
    }

    /// The primary keys a fetch of `entityName` returns, in order.
    func fetchPrimaryKeys(
        _ entityName: String, predicate: FetchPredicate?, sortDescriptors: [FetchSortDescriptor] = [],
        includesSubentities: Bool = true
    ) throws -> [Int64] {
        guard let entity = schema.model.entitiesByName[entityName] else {
            throw ObjectGraphError(.invalidFetchRequest, "No entity '\(entityName)'", entityName: entityName)
        }
        let statement = try SQLQueryBuilder.selectStatement(
            schema: schema, entity: entity, includesSubentities: includesSubentities, predicate: predicate,
            sortDescriptors: sortDescriptors, columns: "t0.\(SQLiteSchema.primaryKeyColumn)")
        let keys = try integers(statement.sql, statement.arguments)
        return sortDescriptors.isEmpty ? keys.sorted() : keys
    }
}

// MARK: - Compilation

/// The kind of values an SQL expression holds. Values of different classes are never equal and
/// never ordered, as with `Value.compare`, so such comparisons compile to constants.
enum SQLValueClass: Equatable {
    /// Integers, booleans, doubles, decimals (compared as REAL) and dates (REAL seconds since 2001).
    case numeric
    case string
    case data
    case uuid
    case url
    /// Object IDs of the entity tree with this root entity (compared by primary key).
    case object(ObjectIdentifier)

    init(_ type: AttributeType) {
        switch type {
        case .integer16, .integer32, .integer64, .decimal, .double, .float, .boolean, .date: self = .numeric
        case .string: self = .string
        case .binaryData, .transformable: self = .data
        case .uuid: self = .uuid
        case .uri: self = .url
        }
    }

    static func object(_ entity: EntityDescription) -> SQLValueClass { .object(ObjectIdentifier(entity.rootEntity)) }
}

/// An SQL expression and the class of its values.
struct SQLExpression {
    var fragment: SQLFragment
    var valueClass: SQLValueClass
}

/// The rows a (sub)query ranges over: the alias of its entity's row and the to-one joins made from it.
final class SQLScope {
    let alias: String
    let entity: EntityDescription
    var joins: [String]
    /// Alias of each joined to-one key path (relative to ``alias``), so each is joined once.
    var joinAliases: [String: String]

    init(alias: String, entity: EntityDescription, joins: [String] = [], joinAliases: [String: String] = [:]) {
        self.alias = alias
        self.entity = entity
        self.joins = joins
        self.joinAliases = joinAliases
    }
}

/// Compiles predicate nodes and key paths to SQL for ``SQLQueryBuilder``.
final class SQLPredicateCompiler {
    typealias Options = PredicateComparison.Options
    typealias Operator = PredicateComparison.Operator

    let schema: SQLiteSchema
    let root: SQLScope
    private(set) var aliasCount: Int
    /// The rows the variables of the enclosing SUBQUERYs range over.
    private var variables: [String: SQLScope] = [:]

    init(schema: SQLiteSchema, root: SQLScope, aliasCount: Int) {
        self.schema = schema
        self.root = root
        self.aliasCount = aliasCount
    }

    private func nextAlias() -> String {
        aliasCount += 1
        return "t\(aliasCount)"
    }

    /// A key path through a to-many relationship.
    struct ToMany {
        let relationship: RelationshipDescription
        /// The alias of the row the relationship starts from.
        let sourceAlias: String
        /// The steps after the relationship (to-one relationships, then maybe an attribute).
        let remaining: ArraySlice<AnalyzedKeyPath.Step>
        let isCount: Bool
    }

    enum CompiledKeyPath {
        case scalar(SQLExpression)
        case toMany(ToMany)
    }

    /// A side of a comparison.
    private enum Term {
        case constant(Value)
        case list([Value])
        case expression(SQLExpression)
        case toMany(ToMany)

        var shape: (isCollection: Bool, isList: Bool) {
            switch self {
            case .toMany: (true, false)
            case .list: (false, true)
            default: (false, false)
            }
        }

        /// The term as an in-memory operand, when it is a constant.
        var constantOperand: PredicateEvaluator.Operand? {
            switch self {
            case .constant(let value): .scalar(value)
            case .list(let values): .collection(values)
            default: nil
            }
        }
    }

    // MARK: Predicates

    func condition(_ node: PredicateNode) throws -> SQLFragment {
        switch node {
        case .constant(let value):
            return .constant(value)
        case .not(let node):
            // NULL (unknown) is false in memory: make it 0 before negating.
            return "NOT IFNULL((\(try condition(node))), 0)"
        case .and(let nodes):
            if nodes.isEmpty { return .true }
            return .joined(try nodes.map { "(\(try condition($0)))" }, separator: " AND ")
        case .or(let nodes):
            if nodes.isEmpty { return .false }
            return .joined(try nodes.map { "(\(try condition($0)))" }, separator: " OR ")
        case .comparison(let comparison):
            return try self.comparison(comparison)
        }
    }

    private func comparison(_ comparison: PredicateComparison) throws -> SQLFragment {
        let lhs = try term(comparison.lhs)
        let rhs = try term(comparison.rhs)
        let op = comparison.op, options = comparison.options
        switch try ComparisonShape(comparison, lhs: lhs.shape, rhs: rhs.shape) {
        case .scalar:
            return try scalar(lhs, op, rhs, options)
        case .quantified:
            guard case .toMany(let toMany) = lhs else { throw internalError(comparison) }
            return try quantified(toMany, comparison.modifier) { item in try self.scalar(.expression(item), op, rhs, options) }
        case .leftMembership:
            if case .list(let values) = lhs { return try inList(rhs, values, options) }
            guard case .toMany(let toMany) = lhs else { throw internalError(comparison) }
            return try quantified(toMany, .any) { item in try self.equality(.expression(item), rhs, options, nullsEqual: false) }
        case .rightMembership:
            guard case .toMany(let toMany) = rhs else { throw internalError(comparison) }
            return try quantified(toMany, .any) { item in try self.equality(.expression(item), lhs, options, nullsEqual: false) }
        }
    }

    private func internalError(_ comparison: PredicateComparison) -> ObjectGraphError {
        ObjectGraphError(.invalidFetchRequest, "Cannot translate '\(comparison.format)' to SQL")
    }

    private func term(_ expression: PredicateExpression) throws -> Term {
        switch expression {
        case .constant(let value): return .constant(value)
        case .list(let values): return .list(values)
        case .keyPath, .variable:
            let (scope, path) = try analyze(expression)
            switch try compile(path, in: scope) {
            case .scalar(let expression): return .expression(expression)
            case .toMany(let toMany): return toMany.isCount ? .expression(try count(toMany)) : .toMany(toMany)
            }
        case .arithmetic(let op, let lhs, let rhs):
            return try arithmetic(op, lhs, rhs)
        case .subqueryCount(let subquery):
            return .expression(try count(subquery))
        }
    }

    /// The scope a key path or a variable's key path starts from, and the path checked against its entity.
    private func analyze(_ expression: PredicateExpression) throws -> (SQLScope, AnalyzedKeyPath) {
        switch expression {
        case .keyPath(let components):
            return (root, try AnalyzedKeyPath(components, from: root.entity))
        case .variable(let name, let components):
            guard let scope = variables[name] else { throw PredicateArithmetic.undefinedVariable(name) }
            return (scope, try AnalyzedKeyPath(components, from: scope.entity))
        default:
            throw ObjectGraphError(.invalidFetchRequest, "'\(expression.format)' is not a key path")
        }
    }

    // MARK: Arithmetic

    /// `(lhs op rhs)`, or its value when both operands are constants.
    private func arithmetic(_ op: PredicateArithmetic, _ lhs: PredicateExpression, _ rhs: PredicateExpression) throws -> Term {
        let a = try numericOperand(lhs)
        let b = try numericOperand(rhs)
        if case .constant(let x) = a, case .constant(let y) = b { return .constant(op.apply(x, y)) }
        let symbol = switch op {
        case .add: "+"
        case .subtract: "-"
        case .multiply: "*"
        case .divide: "/"
        case .remainder: "%"
        }
        let (left, right) = (try sql(a), try sql(b))
        return .expression(SQLExpression(fragment: "(\(left) \(raw: symbol) \(right))", valueClass: .numeric))
    }

    /// An operand of arithmetic: a number, checked as in-memory evaluation checks it.
    private func numericOperand(_ expression: PredicateExpression) throws -> Term {
        switch expression {
        case .constant(let value):
            try PredicateArithmetic.checkOperand(value)
            return .constant(value)
        case .keyPath, .variable:
            try PredicateArithmetic.checkOperand(try analyze(expression).1)
            return try term(expression)
        case .arithmetic, .subqueryCount:
            return try term(expression)
        case .list:
            throw PredicateArithmetic.notANumber("the list \(expression.format)")
        }
    }

    /// A numeric term as SQL: a column or subexpression, or a bound number (NULL for nil).
    private func sql(_ term: Term) throws -> SQLFragment {
        switch term {
        case .expression(let expression): return expression.fragment
        case .constant(let value):
            if value.isNull { return "NULL" }
            guard let bound = bindable(value, for: .numeric, []) else { throw PredicateArithmetic.notANumber("the value \(value.predicateLiteral)") }
            return "\(bind: bound)"
        case .list, .toMany:
            throw misuse()
        }
    }

    // MARK: SUBQUERY

    /// `(SELECT COUNT(*) …)`: the number of elements of the subquery's collection for which its
    /// predicate holds, with its variable standing for the element's row.
    private func count(_ subquery: PredicateSubquery) throws -> SQLExpression {
        let (scope, path) = try analyze(subquery.collection)
        try PredicateArithmetic.checkSubqueryCollection(path)
        guard case .toMany(let toMany) = try compile(path, in: scope) else {
            throw ObjectGraphError(.invalidFetchRequest, "Cannot translate '\(subquery.collection.format)' to SQL")
        }
        let rows = self.subquery(toMany, joiningDestination: true)
        guard let element = rows.destination else { preconditionFailure("the destination is joined") }
        let outer = variables[subquery.variable]
        variables[subquery.variable] = element
        defer { variables[subquery.variable] = outer }
        let condition = try self.condition(subquery.predicate)
        var from = rows.from
        if !element.joins.isEmpty { from += " " + element.joins.joined(separator: " ") }
        return SQLExpression(
            fragment: "(SELECT COUNT(*) FROM \(raw: from) WHERE \(raw: rows.correlation) AND (\(condition)))", valueClass: .numeric)
    }

    // MARK: Key paths

    /// Compiles a checked key path: a column (joining the to-one relationships on the way), or
    /// the to-many relationship it crosses.
    func compile(_ path: AnalyzedKeyPath, in scope: SQLScope) throws -> CompiledKeyPath {
        if let index = path.toManyIndex {
            guard case .toMany(let relationship) = path.steps[index] else { preconditionFailure("not a to-many step") }
            let source = try alias(following: path.steps[..<index], in: scope)
            return .toMany(ToMany(
                relationship: relationship, sourceAlias: source, remaining: path.steps[(index + 1)...], isCount: path.isCount))
        }
        return .scalar(try expression(path.steps[...], in: scope))
    }

    /// The value at the end of to-one steps (and maybe a final attribute) from the scope's row.
    private func expression(_ steps: ArraySlice<AnalyzedKeyPath.Step>, in scope: SQLScope) throws -> SQLExpression {
        guard let last = steps.last else {
            return SQLExpression(
                fragment: "\(raw: scope.alias).\(raw: SQLiteSchema.primaryKeyColumn)", valueClass: .object(scope.entity))
        }
        let alias = try self.alias(following: steps.dropLast(), in: scope)
        switch last {
        case .attribute(let attribute):
            guard !attribute.isTransient else {
                throw ObjectGraphError(
                    .invalidFetchRequest,
                    "Transient attribute '\(attribute.name)' of entity '\(attribute.entity?.name ?? "?")' is not stored, so a fetch from an SQLite store cannot use it",
                    entityName: attribute.entity?.name, key: attribute.name)
            }
            let column = "\(alias).\(SQLiteSchema.quote(schema.columnName(for: attribute)))"
            let sql = attribute.attributeType == .decimal ? "CAST(\(column) AS REAL)" : column
            return SQLExpression(fragment: SQLFragment(sql: sql), valueClass: SQLValueClass(attribute.attributeType))
        case .toOne(let relationship):
            guard let destination = relationship.destinationEntity else { preconditionFailure("unresolved relationship") }
            return SQLExpression(
                fragment: SQLFragment(sql: "\(alias).\(SQLiteSchema.quote(schema.columnName(for: relationship)))"),
                valueClass: .object(destination))
        case .toMany:
            preconditionFailure("to-many steps are compiled to subqueries")
        }
    }

    /// Joins the to-one relationships of `steps` from the scope's row (once per key path) and
    /// returns the alias of the last row joined.
    private func alias(following steps: ArraySlice<AnalyzedKeyPath.Step>, in scope: SQLScope) throws -> String {
        var alias = scope.alias
        var key = ""
        for step in steps {
            guard case .toOne(let relationship) = step, let destination = relationship.destinationEntity else {
                preconditionFailure("only to-one relationships are joined")
            }
            key += "." + relationship.name
            if let joined = scope.joinAliases[key] {
                alias = joined
                continue
            }
            let joined = nextAlias()
            scope.joins.append(
                "LEFT JOIN \(SQLiteSchema.quote(schema.tableName(for: destination))) AS \(joined) "
                    + "ON \(joined).\(SQLiteSchema.primaryKeyColumn) = \(alias).\(SQLiteSchema.quote(schema.columnName(for: relationship)))")
            scope.joinAliases[key] = joined
            alias = joined
        }
        return alias
    }

    // MARK: To-many subqueries

    private struct Subquery {
        /// `"Table" AS tN [JOIN …]`.
        var from: String
        /// Ties the subquery's rows to the source row.
        var correlation: String
        /// The destination's ID (primary key).
        var destinationID: SQLExpression
        /// The destination's row, when joined.
        var destination: SQLScope?
    }

    private func subquery(_ toMany: ToMany, joiningDestination: Bool) -> Subquery {
        let relationship = toMany.relationship
        guard let destination = relationship.destinationEntity else { preconditionFailure("unresolved relationship") }
        let pk = SQLiteSchema.primaryKeyColumn
        switch schema.storage(forToMany: relationship) {
        case .foreignKey(let table, let column, _):
            let alias = nextAlias()
            return Subquery(
                from: "\(SQLiteSchema.quote(table)) AS \(alias)",
                correlation: "\(alias).\(SQLiteSchema.quote(column)) = \(toMany.sourceAlias).\(pk)",
                destinationID: SQLExpression(fragment: SQLFragment(sql: "\(alias).\(pk)"), valueClass: .object(destination)),
                destination: SQLScope(alias: alias, entity: destination))
        case .joinTable(let table, let sourceColumn, let destinationColumn, _, _):
            let pairs = nextAlias()
            var subquery = Subquery(
                from: "\(SQLiteSchema.quote(table)) AS \(pairs)",
                correlation: "\(pairs).\(SQLiteSchema.quote(sourceColumn)) = \(toMany.sourceAlias).\(pk)",
                destinationID: SQLExpression(
                    fragment: SQLFragment(sql: "\(pairs).\(SQLiteSchema.quote(destinationColumn))"), valueClass: .object(destination)),
                destination: nil)
            if joiningDestination {
                let alias = nextAlias()
                subquery.from += " JOIN \(SQLiteSchema.quote(schema.tableName(for: destination))) AS \(alias) "
                    + "ON \(alias).\(pk) = \(pairs).\(SQLiteSchema.quote(destinationColumn))"
                subquery.destination = SQLScope(alias: alias, entity: destination)
            }
            return subquery
        }
    }

    /// `(SELECT COUNT(*) …)`: the number of destinations.
    private func count(_ toMany: ToMany) throws -> SQLExpression {
        let subquery = subquery(toMany, joiningDestination: false)
        return SQLExpression(
            fragment: SQLFragment(sql: "(SELECT COUNT(*) FROM \(subquery.from) WHERE \(subquery.correlation))"),
            valueClass: .numeric)
    }

    /// `EXISTS (…)` (ANY), `NOT EXISTS (… NOT …)` (ALL) or `NOT EXISTS (…)` (NONE) over the values
    /// of a to-many key path, with `body` the condition on one value.
    private func quantified(
        _ toMany: ToMany, _ modifier: PredicateComparison.Modifier, body: (SQLExpression) throws -> SQLFragment
    ) throws -> SQLFragment {
        let subquery = subquery(toMany, joiningDestination: !toMany.remaining.isEmpty)
        let item: SQLExpression
        var from = subquery.from
        if let destination = subquery.destination, !toMany.remaining.isEmpty {
            item = try expression(toMany.remaining, in: destination)
            if !destination.joins.isEmpty { from += " " + destination.joins.joined(separator: " ") }
        } else {
            item = subquery.destinationID
        }
        let condition = try body(item)
        let select = "SELECT 1 FROM \(from) WHERE \(subquery.correlation) AND "
        switch modifier {
        case .any, .direct: return "EXISTS (\(raw: select)(\(condition)))"
        case .all: return "NOT EXISTS (\(raw: select)NOT IFNULL((\(condition)), 0))"
        case .none: return "NOT EXISTS (\(raw: select)(\(condition)))"
        }
    }

    // MARK: Comparisons

    private func scalar(_ lhs: Term, _ op: Operator, _ rhs: Term, _ options: Options) throws -> SQLFragment {
        if case .constant(let x) = lhs, let operand = rhs.constantOperand {
            return .constant(try PredicateEvaluator.compare(x, op, operand, options: options))
        }
        switch op {
        case .equalTo:
            return try equality(lhs, rhs, options, nullsEqual: true)
        case .notEqualTo:
            return try inequality(lhs, rhs, options)
        case .lessThan, .lessThanOrEqualTo, .greaterThan, .greaterThanOrEqualTo:
            return try ordering(lhs, op, rhs, options)
        case .beginsWith, .endsWith, .contains, .like, .matches:
            return try stringOperation(op, lhs, rhs, options)
        case .in:
            if case .list(let values) = rhs { return try inList(lhs, values, options) }
            return try stringOperation(.contains, rhs, lhs, options)  // `x IN string`: containment
        case .between:
            guard case .list(let bounds) = rhs, bounds.count == 2 else {
                throw ObjectGraphError(.invalidFetchRequest, "BETWEEN needs a list of two values")
            }
            let low = try ordering(lhs, .greaterThanOrEqualTo, .constant(bounds[0]), options)
            let high = try ordering(lhs, .lessThanOrEqualTo, .constant(bounds[1]), options)
            return "(\(low) AND \(high))"
        }
    }

    private func misuse() -> ObjectGraphError {
        ObjectGraphError(.invalidFetchRequest, "A list or a to-many key path is not allowed here")
    }

    /// Folds a string expression for `[c]`/`[d]`.
    private func folded(_ expression: SQLExpression, _ options: Options) -> SQLFragment {
        guard expression.valueClass == .string, !options.isEmpty else { return expression.fragment }
        return "og_fold(\(expression.fragment), \(raw: String(options.rawValue)))"
    }

    /// The value to bind for a constant compared with values of `valueClass`, or nil when they
    /// can never be equal or ordered.
    private func bindable(_ value: Value, for valueClass: SQLValueClass, _ options: Options) -> Value? {
        switch (valueClass, value) {
        case (.numeric, .int), (.numeric, .double): return value
        case (.numeric, .bool(let b)): return .int(b ? 1 : 0)
        case (.numeric, .decimal(let d)): return .double(NSDecimalNumber(decimal: d).doubleValue)
        case (.numeric, .date(let d)): return .double(d.timeIntervalSinceReferenceDate)
        case (.string, .string(let s)): return .string(PredicateStrings.fold(s, options: options))
        case (.data, .data), (.uuid, .uuid), (.url, .url): return value
        case (.object(let root), .objectID(let id)):
            guard ObjectIdentifier(id.entity.rootEntity) == root, let pk = id.primaryKey else { return nil }
            return .int(pk)  // a temporary ID never matches a stored row
        default: return nil
        }
    }

    /// `==`, or membership when `nullsEqual` is false (nil is then never equal to anything).
    private func equality(_ lhs: Term, _ rhs: Term, _ options: Options, nullsEqual: Bool) throws -> SQLFragment {
        switch (lhs, rhs) {
        case (.constant(let a), .constant(let b)):
            return .constant((nullsEqual || (!a.isNull && !b.isNull)) && PredicateEvaluator.isEqual(a, b, options: options))
        case (.expression(let e), .constant(let c)), (.constant(let c), .expression(let e)):
            if c.isNull { return nullsEqual ? "\(e.fragment) IS NULL" : .false }
            guard let bound = bindable(c, for: e.valueClass, options) else { return .false }
            return "\(folded(e, options)) = \(bind: bound)"
        case (.expression(let a), .expression(let b)):
            guard a.valueClass == b.valueClass else {
                return nullsEqual ? "(\(a.fragment) IS NULL AND \(b.fragment) IS NULL)" : .false
            }
            return "\(folded(a, options)) \(raw: nullsEqual ? "IS" : "=") \(folded(b, options))"
        default:
            throw misuse()
        }
    }

    /// `!=`: true when exactly one side is nil.
    private func inequality(_ lhs: Term, _ rhs: Term, _ options: Options) throws -> SQLFragment {
        switch (lhs, rhs) {
        case (.constant(let a), .constant(let b)):
            return .constant(!PredicateEvaluator.isEqual(a, b, options: options))
        case (.expression(let e), .constant(let c)), (.constant(let c), .expression(let e)):
            if c.isNull { return "\(e.fragment) IS NOT NULL" }
            guard let bound = bindable(c, for: e.valueClass, options) else { return .true }
            return "\(folded(e, options)) IS NOT \(bind: bound)"
        case (.expression(let a), .expression(let b)):
            guard a.valueClass == b.valueClass else { return "NOT (\(a.fragment) IS NULL AND \(b.fragment) IS NULL)" }
            return "\(folded(a, options)) IS NOT \(folded(b, options))"
        default:
            throw misuse()
        }
    }

    private func ordering(_ lhs: Term, _ op: Operator, _ rhs: Term, _ options: Options) throws -> SQLFragment {
        let symbol: String
        switch op {
        case .lessThan: symbol = "<"
        case .lessThanOrEqualTo: symbol = "<="
        case .greaterThan: symbol = ">"
        default: symbol = ">="
        }
        func orderable(_ valueClass: SQLValueClass) -> Bool {
            if case .object = valueClass { return false }
            return true
        }
        switch (lhs, rhs) {
        case (.constant(let a), .constant(let b)):
            return .constant(PredicateEvaluator.isOrdered(a, op, b, options: options))
        case (.expression(let e), .constant(let c)):
            guard orderable(e.valueClass), !c.isNull, let bound = bindable(c, for: e.valueClass, options) else { return .false }
            return "\(folded(e, options)) \(raw: symbol) \(bind: bound)"
        case (.constant(let c), .expression(let e)):
            guard orderable(e.valueClass), !c.isNull, let bound = bindable(c, for: e.valueClass, options) else { return .false }
            return "\(bind: bound) \(raw: symbol) \(folded(e, options))"
        case (.expression(let a), .expression(let b)):
            guard a.valueClass == b.valueClass, orderable(a.valueClass) else { return .false }
            return "\(folded(a, options)) \(raw: symbol) \(folded(b, options))"
        default:
            throw misuse()
        }
    }

    /// `x IN {…}`: nil is in no list.
    private func inList(_ lhs: Term, _ values: [Value], _ options: Options) throws -> SQLFragment {
        switch lhs {
        case .constant(let x):
            return .constant(PredicateEvaluator.isMember(x, of: values, options: options))
        case .expression(let e):
            var seen: Set<Value> = []
            let bound = values.compactMap { $0.isNull ? nil : bindable($0, for: e.valueClass, options) }.filter { seen.insert($0).inserted }
            if bound.isEmpty { return .false }
            let placeholders = SQLFragment.joined(bound.map { "\(bind: $0)" }, separator: ", ")
            return "\(folded(e, options)) IN (\(placeholders))"
        default:
            throw misuse()
        }
    }

    /// BEGINSWITH, ENDSWITH, CONTAINS, LIKE, MATCHES: false unless both sides are strings.
    private func stringOperation(_ op: Operator, _ lhs: Term, _ rhs: Term, _ options: Options) throws -> SQLFragment {
        func operand(_ term: Term) throws -> SQLFragment? {
            switch term {
            case .constant(.string(let s)): return "\(bind: .string(s))"
            case .constant: return nil
            case .expression(let e): return e.valueClass == .string ? e.fragment : nil
            default: throw misuse()
            }
        }
        if case .constant(let x) = lhs, case .constant(let y) = rhs {
            return .constant(try PredicateEvaluator.compare(x, op, y, options: options))
        }
        guard let text = try operand(lhs), let pattern = try operand(rhs) else { return .false }
        if op == .beginsWith, options.isEmpty, case .expression(let e) = lhs, case .constant(.string(let prefix)) = rhs {
            return prefixRange(e.fragment, prefix)
        }
        if op == .matches, case .constant(.string(let p)) = rhs {
            // Report a bad pattern now, not from inside SQLite.
            _ = try PredicateStrings.regularExpression(
                PredicateStrings.fold(p, options: options.intersection(.diacriticInsensitive)),
                caseInsensitive: options.isCaseInsensitive)
        }
        return "\(raw: SQLiteFunctions.name(of: op))(\(text), \(pattern), \(raw: String(options.rawValue)))"
    }

    /// Case-sensitive `BEGINSWITH` as a range an index can serve: `x >= prefix AND x < successor`,
    /// where the successor is the prefix with its last scalar incremented (exact in BINARY order).
    private func prefixRange(_ expression: SQLFragment, _ prefix: String) -> SQLFragment {
        if prefix.isEmpty { return "\(expression) IS NOT NULL" }
        guard let upper = Self.prefixSuccessor(prefix) else { return "\(expression) >= \(bind: .string(prefix))" }
        return "(\(expression) >= \(bind: .string(prefix)) AND \(expression) < \(bind: .string(upper)))"
    }

    /// The least string greater than every string that starts with `prefix`, or nil when there is
    /// none (the prefix is all U+10FFFF). Skips the surrogate range, which holds no scalars.
    static func prefixSuccessor(_ prefix: String) -> String? {
        var scalars = Array(prefix.unicodeScalars)
        while let last = scalars.popLast() {
            if last.value == 0x10FFFF { continue }
            let next = last.value == 0xD7FF ? 0xE000 : last.value + 1
            guard let scalar = Unicode.Scalar(next) else { continue }
            scalars.append(scalar)
            var result = ""
            result.unicodeScalars.append(contentsOf: scalars)
            return result
        }
        return nil
    }
}
