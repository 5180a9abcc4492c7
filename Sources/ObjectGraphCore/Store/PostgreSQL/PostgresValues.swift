import Foundation

// How attribute values are written to and read from a PostgreSQL store's columns (the types of
// ``SQLDialect/postgres``): integers as BIGINT, booleans as BOOLEAN, doubles, floats and dates
// (seconds since 2001-01-01, as Core Data) as DOUBLE PRECISION, which keeps NaN and -0.0;
// decimals as NUMERIC (sent and read as their text, so nothing is rounded through a double);
// strings and URLs as TEXT; data, UUIDs (16 bytes) and transformables as BYTEA; an object ID as
// its primary key. PostgreSQL's text cannot hold U+0000: a save refuses such a string, naming the
// entity and the attribute, rather than cutting it.

extension Value {
    /// The value as a statement parameter, for a column of `property`.
    ///
    /// - Throws: ``ObjectGraphError/validation`` for a string holding U+0000, which PostgreSQL's
    ///   text cannot store.
    func postgresParameter(for property: PropertyDescription?, entity: EntityDescription?) throws -> PostgresValue {
        switch self {
        case .null: return .null
        case .int(let v): return .int(v)
        case .bool(let v): return .bool(v)
        case .double(let v): return .double(v)
        case .date(let v): return .double(v.timeIntervalSinceReferenceDate)
        case .string(let v):
            if v.utf8.contains(0) {
                let owner = entity.map { "\($0.name)." } ?? ""
                throw ObjectGraphError(
                    .validation,
                    "\(owner)\(property?.name ?? "a value") holds the character U+0000, which a PostgreSQL store cannot keep (its text type refuses it): nothing was saved",
                    entityName: entity?.name, key: property?.name)
            }
            return .text(v)
        case .decimal(let v): return .text(v.description)
        case .url(let v): return .text(v.absoluteString)
        case .data(let v): return .bytes(v)
        case .uuid(let v): return .bytes(withUnsafeBytes(of: v.uuid) { Data($0) })
        case .objectID(let v): return .int(v.primaryKey ?? -1)
        }
    }

    /// A column's value, read for an attribute of `type`.
    init(postgres value: PostgresValue, type: AttributeType) {
        switch value {
        case .null:
            self = .null
        case .int(let v):
            self = type == .boolean ? .bool(v != 0) : Value(storedInteger: v, type: type)
        case .bool(let v):
            self = type == .boolean ? .bool(v) : Value(storedInteger: v ? 1 : 0, type: type)
        case .double(let v):
            self = Value(storedReal: v, type: type)
        case .text(let v):
            self = type == .string ? .string(v) : Value(storedText: v, type: type)
        case .bytes(let v):
            self = v.withUnsafeBytes { Value(storedBlob: $0, type: type) }
        case .array:
            self = .null  // never a column's value
        }
    }
}

extension Value {
    /// A value a predicate compares with (``SQLPredicateCompiler/bindable(_:for:_:)``) as a
    /// parameter of its column's type.
    ///
    /// - Throws: ``SQLPredicateCompiler/NotInDialect`` for a string holding U+0000, which
    ///   PostgreSQL's text cannot hold (memory compares with it).
    func postgresPredicateParameter() throws -> PostgresValue {
        switch self {
        case .string(let v) where v.utf8.contains(0): throw SQLPredicateCompiler.NotInDialect(what: "a string holding U+0000")
        case .bool(let v): return .int(v ? 1 : 0)
        default: return try postgresParameter(for: nil, entity: nil)
        }
    }
}

extension PostgresValue {
    /// The cell as a key (a primary key, an entity number, a version), or nil when it holds none.
    var integer: Int64? {
        switch self {
        case .int(let v): v
        case .double(let v): v.isFinite && v.rounded() == v ? Int64(exactly: v) : nil
        case .text(let v): Int64(v)
        default: nil
        }
    }
}
