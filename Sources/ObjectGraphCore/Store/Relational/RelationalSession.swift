import Foundation

/// A parameter of a statement: a value, and the index of the property whose column it is bound
/// to in the statement's entity (nil for keys, entity numbers, versions and positions), which a
/// store needs to convert it and to name it in an error.
struct SQLArgument {
    var value: Value
    var property: Int?

    init(_ value: Value, property: Int? = nil) {
        self.value = value
        self.property = property
    }

    static func key(_ key: Int64) -> SQLArgument { SQLArgument(.int(key)) }
}

/// What a relational save (``SavePlan``) needs of a database inside the save's transaction. The
/// SQLite store's conformance runs statements on GRDB's `Database`, the PostgreSQL store's on a
/// connection of its pool; a third SQL database costs one dialect and one of these.
protocol RelationalSession {
    /// How the database writes SQL.
    var dialect: SQLDialect { get }

    /// A table of the store as statements name it: quoted, and qualified where the store has a schema.
    func table(_ name: String) -> String

    /// Reserves `count` consecutive keys in `root`'s table, locked to this transaction; returns the first.
    func allocateKeys(root: EntityDescription, count: Int) throws -> Int64

    /// Runs a statement that returns no rows; `entity` is that of the arguments' properties.
    func execute(_ sql: String, _ arguments: [SQLArgument], entity: EntityDescription?) throws

    /// Runs a query and returns the first two columns of its rows as integers (keys, versions,
    /// entity numbers); a NULL second column reads as nil.
    func integerPairs(_ sql: String, _ arguments: [SQLArgument], entity: EntityDescription?) throws -> [(Int64, Int64?)]

    /// Runs an object's INSERT (`inserting`, a statement without RETURNING) or UPDATE and returns
    /// the first column of the row it returns, if any (an update's new version, where the dialect
    /// returns it). When a unique index refuses the row, `reportRefusal` runs (it throws the save's
    /// own constraint conflict, naming the other object), and otherwise the refusal is thrown;
    /// `constrained` says whether a unique index can refuse the row at all (the entity has
    /// uniqueness constraints, and an update writes one of their properties); `expectedVersion`
    /// is the version an update's WHERE requires of the row (nil: none, and for an insert).
    func write(
        _ sql: String, _ arguments: [SQLArgument], entity: EntityDescription, inserting: Bool, constrained: Bool, expectedVersion: Int64?,
        reportRefusal: () throws -> Void
    ) throws -> Int64?

    /// The rows of `ids`, as snapshots (missing rows are absent).
    func snapshots(_ ids: [ManagedObjectID]) throws -> [ManagedObjectID: Snapshot]

    /// A property's value as its column keeps it (SQLite: Core Data's external storage of large
    /// binary values).
    func columnValue(_ value: Value, for property: PropertyDescription) throws -> Value

    /// Called before `object`'s row `key` of `table` is deleted, or has its changed columns
    /// overwritten (SQLite: the external files they refer to are released).
    func willOverwrite(_ object: SavedObject, deleting: Bool, in table: TableLayout, key: Int64) throws

    /// Counts `n` statements in the store's statistics.
    func count(_ n: Int)
}

extension RelationalSession {
    /// Runs a statement whose arguments are keys and numbers only.
    func execute(_ sql: String, _ arguments: [SQLArgument]) throws {
        try execute(sql, arguments, entity: nil)
    }
}
