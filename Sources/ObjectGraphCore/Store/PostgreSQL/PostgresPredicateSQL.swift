import Foundation

/// Compiles the parts of a predicate and of sort descriptors that PostgreSQL can answer exactly as
/// in-memory evaluation does (``PredicateEvaluator``) into SQL with `$n` parameters.
///
/// What it compiles: `TRUEPREDICATE`, `FALSEPREDICATE`, `AND`, `OR`, `NOT`; comparisons of an
/// attribute of the fetched entity with a constant of its own kind (`==`, `!=`, `<`, `<=`, `>`,
/// `>=`, `IN` a list, and for strings case-sensitive `BEGINSWITH`, `CONTAINS` and `ENDSWITH`);
/// `SELF` and to-one relationships compared with an object of the store or nil. Each condition is
/// exact where it stands, as in memory: `x != v` is true for a nil `x`, ordering is false with nil
/// and with NaN; a comparison is left bare (so that an index can answer it) except under a `NOT`,
/// where a NULL would not turn into true. Text is compared in the "C" collation (code-point order,
/// as in memory), so `BEGINSWITH` is a range of the column's index.
///
/// What it leaves to memory (``compile(_:)`` returns nil): `[c]`, `[d]`, `LIKE`, `MATCHES`, key
/// paths through relationships, to-many key paths and `SUBQUERY`, arithmetic, constants of
/// another kind than the attribute's, decimals. The store then evaluates those with the same Swift
/// code as every other store (see ``PostgresStore``).
struct PostgresPredicateSQL {
    let schema: CoreDataLayout
    let entity: EntityDescription
    let store: PersistentStore
    /// The values of the `$n` placeholders, in order.
    private(set) var parameters: [PostgresValue] = []

    init(schema: CoreDataLayout, entity: EntityDescription, store: PersistentStore, parameters: [PostgresValue] = []) {
        self.schema = schema
        self.entity = entity
        self.store = store
        self.parameters = parameters
    }

    /// The conjuncts of a predicate: the nodes of its top-level `AND`s.
    static func conjuncts(_ node: PredicateNode) -> [PredicateNode] {
        if case .and(let nodes) = node { return nodes.flatMap(conjuncts) }
        return [node]
    }

    /// The SQL condition for `node` (true or false, never NULL), or nil when PostgreSQL cannot
    /// answer it exactly; nothing is appended to ``parameters`` then.
    mutating func compile(_ node: PredicateNode) -> String? {
        let saved = parameters
        guard let sql = condition(node) else {
            parameters = saved
            return nil
        }
        return sql
    }

    /// The conditions of `nodes`, each in parentheses, joined by `op` (`empty` when there are
    /// none); nil when PostgreSQL cannot answer one of them.
    private mutating func joined(_ nodes: [PredicateNode], by op: String, empty: String) -> String? {
        if nodes.isEmpty { return empty }
        var parts: [String] = []
        for node in nodes {
            guard let part = condition(node) else { return nil }
            parts.append("(\(part))")
        }
        return parts.joined(separator: " \(op) ")
    }

    private mutating func condition(_ node: PredicateNode) -> String? {
        switch node {
        case .constant(let value):
            return value ? "TRUE" : "FALSE"
        case .not(let inner):
            let outer = isNegated
            isNegated = true
            defer { isNegated = outer }
            return condition(inner).map { "NOT (\($0))" }
        case .and(let nodes):
            return joined(nodes, by: "AND", empty: "TRUE")
        case .or(let nodes):
            return joined(nodes, by: "OR", empty: "FALSE")
        case .comparison(let comparison):
            return self.comparison(comparison)
        }
    }

    /// Whether the node being compiled is under a `NOT`. Outside one, a comparison may be NULL
    /// where memory says false (a nil attribute): `AND`, `OR` and `WHERE` treat NULL as false, so
    /// the answer is the same, and a bare comparison is one an index answers. Under a `NOT` each
    /// comparison is made definite, as `NOT NULL` is NULL, not true.
    private var isNegated = false

    /// A comparison that may be NULL, as a condition that is exact where it stands.
    private func definite(_ comparison: String) -> String {
        isNegated ? "COALESCE(\(comparison), FALSE)" : comparison
    }

    /// The least string above every string that begins with `prefix`, in code-point order (the
    /// "C" collation of the text columns): `prefix` with its last scalar raised by one, skipping
    /// the surrogates; nil when every scalar is the last one (no string is above them all).
    static func upperBound(ofPrefix prefix: String) -> String? {
        var scalars = Array(prefix.unicodeScalars)
        while let last = scalars.popLast() {
            var next = last.value + 1
            if next == 0xD800 { next = 0xE000 }
            if let scalar = Unicode.Scalar(next) {
                scalars.append(scalar)
                var view = String.UnicodeScalarView()
                view.append(contentsOf: scalars)
                return String(view)
            }
        }
        return nil
    }

    private mutating func bind(_ value: PostgresValue) -> String {
        parameters.append(value)
        return "$\(parameters.count)"
    }

    /// What a compared column holds, for matching a constant's kind.
    private enum Kind { case integer, boolean, real, date, string, key }

    private func kind(of type: AttributeType) -> Kind? {
        switch type {
        case .integer16, .integer32, .integer64: .integer
        case .boolean: .boolean
        case .double, .float: .real
        case .date: .date
        case .string: .string
        default: nil
        }
    }

    /// A constant as a parameter for a column of `kind`, or nil when in-memory comparison would
    /// not be PostgreSQL's (another kind of value, NaN, a string PostgreSQL's text cannot hold).
    private func parameter(_ value: Value, for kind: Kind) -> PostgresValue? {
        switch (kind, value) {
        case (.integer, .int(let v)): return .int(v)
        case (.boolean, .bool(let v)): return .bool(v)
        case (.real, .double(let v)) where !v.isNaN: return .double(v)
        case (.date, .date(let v)) where !v.timeIntervalSinceReferenceDate.isNaN: return .double(v.timeIntervalSinceReferenceDate)
        case (.string, .string(let v)) where !v.utf8.contains(0): return .text(v)
        case (.key, .objectID(let id)):
            guard id.persistentStore === store, let pk = id.primaryKey, id.entity.rootEntity === entityForKey?.rootEntity else { return nil }
            return .int(pk)
        default: return nil
        }
    }

    /// The entity whose keys a `.key` column holds (set while compiling one comparison).
    private var entityForKey: EntityDescription?

    private mutating func comparison(_ c: PredicateComparison) -> String? {
        guard c.modifier == .direct, c.options.isEmpty, case .keyPath(let path) = c.lhs, path.count <= 1 else { return nil }
        let column: String
        let kind: Kind
        if path.isEmpty {
            column = "t0.\"Z_PK\""
            kind = .key
            entityForKey = entity
        } else if let attribute = entity.propertiesByName[path[0]] as? AttributeDescription, !attribute.isTransient,
                  let k = self.kind(of: attribute.attributeType) {
            column = "t0.\(CoreDataLayout.quote(schema.columnName(for: attribute)))"
            kind = k
        } else if let relationship = entity.propertiesByName[path[0]] as? RelationshipDescription, !relationship.isToMany,
                  let destination = relationship.destinationEntity {
            column = "t0.\(CoreDataLayout.quote(schema.columnName(for: relationship)))"
            kind = .key
            entityForKey = destination
        } else {
            return nil
        }
        switch (c.op, c.rhs) {
        case (.equalTo, .constant(.null)):
            return "\(column) IS NULL"
        case (.notEqualTo, .constant(.null)):
            return "\(column) IS NOT NULL"
        case (.equalTo, .constant(let value)):
            guard let p = parameter(value, for: kind) else { return nil }
            return definite("\(column) = \(bind(p))")
        case (.notEqualTo, .constant(let value)):
            guard let p = parameter(value, for: kind) else { return nil }
            return "\(column) IS DISTINCT FROM \(bind(p))"
        case (.lessThan, .constant(let value)), (.lessThanOrEqualTo, .constant(let value)),
             (.greaterThan, .constant(let value)), (.greaterThanOrEqualTo, .constant(let value)):
            guard [.integer, .real, .date, .string].contains(kind), let p = parameter(value, for: kind) else { return nil }
            let op = c.op == .lessThan ? "<" : c.op == .lessThanOrEqualTo ? "<=" : c.op == .greaterThan ? ">" : ">="
            let notNaN = kind == .real || kind == .date ? " AND \(column) <> 'NaN'::float8" : ""
            return definite("\(column) \(op) \(bind(p))\(notNaN)")
        case (.in, .list(let values)):
            if values.isEmpty { return "FALSE" }
            var marks: [String] = []
            for value in values {
                guard let p = parameter(value, for: kind) else { return nil }
                marks.append(bind(p))
            }
            return definite("\(column) IN (\(marks.joined(separator: ", ")))")
        case (.beginsWith, .constant(.string(let v))), (.contains, .constant(.string(let v))), (.endsWith, .constant(.string(let v))):
            guard kind == .string, !v.isEmpty, let p = parameter(.string(v), for: .string) else { return nil }
            switch c.op {
            case .beginsWith:
                // The range makes it a scan of the column's index (text columns are in "C" order).
                // PostgreSQL 15 derives that range from starts_with itself; earlier servers do not.
                let prefix = bind(p)
                guard let upper = Self.upperBound(ofPrefix: v) else { return definite("starts_with(\(column), \(prefix))") }
                return definite("\(column) >= \(prefix) AND \(column) < \(bind(.text(upper))) AND starts_with(\(column), \(prefix))")
            case .contains: return definite("strpos(\(column), \(bind(p))) > 0")
            default: return definite("right(\(column), \(v.unicodeScalars.count)) = \(bind(p))")
            }
        default:
            return nil
        }
    }

    /// The ORDER BY terms for `descriptors` (each ending with the row's key, so that rows that
    /// compare the same come in key order, as in memory), or nil when one of them is not a plain
    /// attribute PostgreSQL orders as memory does.
    func orderBy(_ descriptors: [FetchSortDescriptor]) -> String? {
        var terms: [String] = []
        for descriptor in descriptors {
            guard !descriptor.key.contains("."), let attribute = entity.propertiesByName[descriptor.key] as? AttributeDescription,
                  !attribute.isTransient, [.integer16, .integer32, .integer64, .boolean, .string].contains(attribute.attributeType),
                  !(descriptor.caseInsensitive && attribute.attributeType == .string)
            else { return nil }
            let column = "t0.\(CoreDataLayout.quote(schema.columnName(for: attribute)))"
            terms.append(descriptor.ascending ? "\(column) ASC NULLS FIRST" : "\(column) DESC NULLS LAST")
        }
        terms.append("t0.\"Z_PK\"")
        return terms.joined(separator: ", ")
    }
}
