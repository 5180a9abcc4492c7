import Foundation

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
    /// A REAL column (double, float, date), where a NaN is stored as a BLOB of its bits.
    var mayHoldNaN = false
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

/// Compiles predicate nodes and key paths to SQL, for the SQLite store (``SQLQueryBuilder``) and
/// the PostgreSQL store, in the words of their ``SQLDialect``. Every value is a bound `?`; a
/// dialect numbered `$n` renumbers them (``numbered(_:dialect:)``).
final class SQLPredicateCompiler {
    typealias Options = PredicateComparison.Options
    typealias Operator = PredicateComparison.Operator

    /// A part of a predicate or sort that the dialect cannot say with in-memory semantics (see
    /// ``PredicateSQL``): the store evaluates it in memory.
    struct NotInDialect: Error {
        let what: String
    }

    let schema: CoreDataLayout
    let root: SQLScope
    let dialect: SQLDialect
    /// A table's name as statements write it (quoted, and qualified by its schema in PostgreSQL).
    let table: (String) -> String
    /// The store whose rows are compared with object IDs: an ID of another store is none of
    /// its objects (nil: only the keys count).
    let store: PersistentStore?
    private(set) var aliasCount: Int
    /// The rows the variables of the enclosing SUBQUERYs range over.
    private var variables: [String: SQLScope] = [:]

    init(
        schema: CoreDataLayout, root: SQLScope, aliasCount: Int, dialect: SQLDialect = .sqlite,
        table: @escaping (String) -> String = CoreDataLayout.quote, store: PersistentStore? = nil
    ) {
        self.store = store
        self.schema = schema
        self.root = root
        self.aliasCount = aliasCount
        self.dialect = dialect
        self.table = table
    }

    /// True or false, as the dialect writes them.
    func constant(_ value: Bool) -> SQLFragment {
        SQLFragment(sql: value ? dialect.predicates.true : dialect.predicates.false)
    }

    /// The primary-key column of the row aliased `alias`.
    private func primaryKey(of alias: String) -> String {
        "\(alias).\(dialect.keyColumnName(CoreDataLayout.primaryKeyColumn))"
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
    enum Term {
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
            return constant(value)
        case .not(let node):
            // Conditions are true, false or NULL (unknown, which is false in memory): true unless true.
            // (`NOT IFNULL(…, 0)` would say the same with more of SQLite's parser stack.)
            return "(\(try condition(node))) \(raw: dialect.predicates.isNotTrue)"
        case .and(let nodes):
            if nodes.isEmpty { return constant(true) }
            return Self.chain(try nodes.map { try condition($0) }, separator: " AND ")
        case .or(let nodes):
            if nodes.isEmpty { return constant(false) }
            var parts: [SQLFragment] = []
            for part in SQLEqualityGroups.split(nodes) {
                switch part {
                case .group(let group): parts += try memberships(group)
                case .single(let node): parts.append(try condition(node))
                }
            }
            return Self.chain(parts, separator: " OR ")
        case .comparison(let comparison):
            return try self.comparison(comparison)
        }
    }

    /// How many conditions ``chain(_:separator:)`` joins in one run: SQLite makes a run of `AND`s
    /// an expression as deep as it is long (at most 1000 deep).
    private static let chainLength = 16

    /// The parenthesized conditions joined by `separator` (`AND` or `OR`), in runs of at most
    /// ``chainLength``, themselves joined in runs, so that any number of conditions stays shallow.
    static func chain(_ parts: [SQLFragment], separator: String) -> SQLFragment {
        var parts = parts.map { part in "(\(part))" as SQLFragment }
        while parts.count > chainLength {
            parts = stride(from: 0, to: parts.count, by: chainLength).map { start in
                let run = SQLFragment.joined(Array(parts[start..<min(start + chainLength, parts.count)]), separator: separator)
                return "(\(run))"
            }
        }
        return .joined(parts, separator: separator)
    }

    /// `key IN (…)` for the `key == value` comparisons of an `OR`, or each comparison when the key
    /// path is not one value (the comparisons then report the misuse).
    private func memberships(_ group: SQLEqualityGroups.Group) throws -> [SQLFragment] {
        let lhs = try term(group.keyPath)
        guard case .expression = lhs else { return try group.members.map { try condition($0) } }
        return [try inList(lhs, group.values, group.options)]
    }

    private func comparison(_ comparison: PredicateComparison) throws -> SQLFragment {
        if let existence = try existence(comparison) { return existence }
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

    func term(_ expression: PredicateExpression) throws -> Term {
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
        try expression.analyzedKeyPath(root: root, variables: variables) { $0.entity }
    }

    // MARK: Arithmetic

    /// `(lhs op rhs)`, or its value when both operands are constants.
    private func arithmetic(_ op: PredicateArithmetic, _ lhs: PredicateExpression, _ rhs: PredicateExpression) throws -> Term {
        let a = try numericOperand(lhs)
        let b = try numericOperand(rhs)
        if case .constant(let x) = a, case .constant(let y) = b { return .constant(op.apply(x, y)) }
        guard dialect.predicates.hasPredicateArithmetic else { throw NotInDialect(what: "arithmetic") }
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
            let path = try analyze(expression).1
            try PredicateArithmetic.checkOperand(path)
            let operand = try term(expression)
            // A TIMESTAMP column (numeric affinity, as Core Data declares it) keeps a whole number of
            // seconds as an INTEGER: arithmetic on a date is on REALs, as in memory.
            if path.finalAttribute?.attributeType == .date, case .expression(let date) = operand {
                return .expression(SQLExpression(fragment: "(\(date.fragment) + 0.0)", valueClass: date.valueClass, mayHoldNaN: date.mayHoldNaN))
            }
            return operand
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
            // NaN is NULL to SQLite (it binds it so), and arithmetic with it gives nil in memory too.
            if value.isNull || value.isNaN { return "NULL" }
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
        SQLExpression(fragment: "(SELECT COUNT(*) \(try rows(of: subquery)))", valueClass: .numeric)
    }

    /// `FROM … WHERE …`: the rows of the subquery's elements for which its predicate holds.
    private func rows(of subquery: PredicateSubquery) throws -> SQLFragment {
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
        return "FROM \(raw: from) WHERE \(raw: rows.correlation) AND (\(condition))"
    }

    /// `SUBQUERY(…).@count > 0` (or `!= 0`, `>= 1`) as `EXISTS (…)`, and `== 0` (or `< 1`, `<= 0`)
    /// as `NOT EXISTS (…)`, which stop at the first element found; nil for other comparisons.
    private func existence(_ comparison: PredicateComparison) throws -> SQLFragment? {
        guard comparison.modifier == .direct, case .subqueryCount(let subquery) = comparison.lhs,
              case .constant(let value) = comparison.rhs, let bound = value.numericValue else { return nil }
        let exists: Bool
        switch (comparison.op, bound) {
        case (.greaterThan, 0), (.notEqualTo, 0), (.greaterThanOrEqualTo, 1): exists = true
        case (.equalTo, 0), (.lessThan, 1), (.lessThanOrEqualTo, 0): exists = false
        default: return nil
        }
        return "\(raw: exists ? "" : "NOT ")EXISTS (SELECT 1 \(try rows(of: subquery)))"
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
            return SQLExpression(fragment: SQLFragment(sql: primaryKey(of: scope.alias)), valueClass: .object(scope.entity))
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
            let column = "\(alias).\(CoreDataLayout.quote(schema.columnName(for: attribute)))"
            let sql = dialect.predicates.comparable(column, attribute.attributeType)
            let isReal = [.double, .float, .date].contains(attribute.attributeType)
            return SQLExpression(fragment: SQLFragment(sql: sql), valueClass: SQLValueClass(attribute.attributeType), mayHoldNaN: isReal)
        case .toOne(let relationship):
            guard let destination = relationship.destinationEntity else { preconditionFailure("unresolved relationship") }
            return SQLExpression(
                fragment: SQLFragment(sql: "\(alias).\(CoreDataLayout.quote(schema.columnName(for: relationship)))"),
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
                "LEFT JOIN \(table(schema.tableName(for: destination))) AS \(joined) "
                    + "ON \(primaryKey(of: joined)) = \(alias).\(CoreDataLayout.quote(schema.columnName(for: relationship)))")
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
        /// The column of the subquery's rows that names their source row.
        var link: String
        /// The destination's ID (primary key).
        var destinationID: SQLExpression
        /// The destination's row, when joined.
        var destination: SQLScope?
    }

    private func subquery(_ toMany: ToMany, joiningDestination: Bool) -> Subquery {
        let relationship = toMany.relationship
        guard let destination = relationship.destinationEntity else { preconditionFailure("unresolved relationship") }
        switch schema.storage(forToMany: relationship) {
        case .foreignKey(let table, let column, _):
            let alias = nextAlias()
            return Subquery(
                from: "\(self.table(table)) AS \(alias)",
                correlation: "\(alias).\(CoreDataLayout.quote(column)) = \(primaryKey(of: toMany.sourceAlias))",
                link: "\(alias).\(CoreDataLayout.quote(column))",
                destinationID: SQLExpression(fragment: SQLFragment(sql: primaryKey(of: alias)), valueClass: .object(destination)),
                destination: SQLScope(alias: alias, entity: destination))
        case .joinTable(let table, let sourceColumn, let destinationColumn, _, _):
            let pairs = nextAlias()
            var subquery = Subquery(
                from: "\(self.table(table)) AS \(pairs)",
                correlation: "\(pairs).\(CoreDataLayout.quote(sourceColumn)) = \(primaryKey(of: toMany.sourceAlias))",
                link: "\(pairs).\(CoreDataLayout.quote(sourceColumn))",
                destinationID: SQLExpression(
                    fragment: SQLFragment(sql: "\(pairs).\(CoreDataLayout.quote(destinationColumn))"), valueClass: .object(destination)),
                destination: nil)
            if joiningDestination {
                let alias = nextAlias()
                subquery.from += " JOIN \(self.table(schema.tableName(for: destination))) AS \(alias) "
                    + "ON \(primaryKey(of: alias)) = \(pairs).\(CoreDataLayout.quote(destinationColumn))"
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

    /// `source IN (…)` (ANY), `NOT EXISTS (… NOT …)` (ALL) or `NOT EXISTS (…)` (NONE) over the
    /// values of a to-many key path, with `body` the condition on one value. ANY names the sources
    /// of the destination rows that pass, found in one pass over the destinations' table (or the
    /// join table) rather than a probe of it for each source row; `NOT IN` would not do for the
    /// others (PostgreSQL cannot make it an anti-join, and it is unknown, not false, beside a nil).
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
        case .any, .direct: return "\(raw: primaryKey(of: toMany.sourceAlias)) IN (SELECT \(raw: subquery.link) FROM \(raw: from) WHERE (\(condition)))"
        case .all: return "NOT EXISTS (\(raw: select)(\(condition)) \(raw: dialect.predicates.isNotTrue))"
        case .none: return "NOT EXISTS (\(raw: select)(\(condition)))"
        }
    }
}
