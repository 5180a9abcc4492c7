import Foundation

/// Everything in which the SQL of the relational stores differs, in one place: the SQLite store and
/// the PostgreSQL store lay a model out in the same tables (``CoreDataLayout``) and differ only in
/// what a dialect answers here.
///
/// | requirement | SQLite | PostgreSQL |
/// |---|---|---|
/// | ``integer``: key, entity, version and foreign-key columns | `INTEGER` | `BIGINT` |
/// | ``columnType``: an attribute's column | Core Data's types | `BIGINT`, `BOOLEAN`, `DOUBLE PRECISION`, `NUMERIC`, `TEXT COLLATE "C"`, `BYTEA` |
/// | ``binaryCollation``: text in an index ordered by its bytes | `COLLATE BINARY` | `COLLATE "C"` |
/// | ``keyColumnName``: `Z_PK`, `Z_ENT`, `Z_OPT` in SQL | bare, as Core Data writes them | quoted (PostgreSQL folds bare names to lower case) |
/// | ``placeholder(_:)``: the n-th parameter | `?` | `$n` |
/// | ``selectedColumn(_:type:)``: a column as a fetch selects it | as it is | a decimal as its text (`::text`), read exactly |
/// | ``parameterCast(_:)``: a parameter bound to an attribute's column | none | a decimal sent as text, cast `::numeric` |
/// | ``keepsExternalStorage``: Core Data's external storage of large binary values | yes | no: values in the row |
/// | ``versionLock``: how a save keeps the versions it checked until its commit | none: one writer at a time | `ORDER BY "Z_PK" FOR UPDATE`, rows locked in key order (no deadlock between two saves) |
/// | ``returnsUpdatedVersion``: an update reads back the row's new version | no: the single writer knows it | `RETURNING "Z_OPT"` |
/// | ``insertIgnoringDuplicates(into:columns:)``: a join-table row that may exist already | `INSERT OR IGNORE` | `ON CONFLICT DO NOTHING` |
///
/// Beyond the SQL, the two stores differ in their sessions (GRDB's `Database` and a PostgreSQL
/// connection), in how keys are allocated (`Z_PRIMARYKEY` under SQLite's write lock; an
/// `UPDATE … RETURNING` that row-locks the entity's counter in PostgreSQL), and in how other
/// processes learn of a save (SQLite's persistent history and file watching; PostgreSQL's change
/// log and `NOTIFY`).
struct SQLDialect: Sendable {
    /// The type of key, entity, version, foreign-key and order columns.
    var integer: String
    /// The column type of an attribute.
    var columnType: @Sendable (AttributeType) -> String
    /// The clause after an indexed column that orders text by its bytes (or code points).
    var binaryCollation: @Sendable (PropertyDescription) -> String
    /// How SQL writes the names of the key, entity and version columns (Z_PK, Z_ENT, Z_OPT):
    /// bare in SQLite, as Core Data writes them; quoted in PostgreSQL, which would fold them to
    /// lower case, so that every name of a store keeps Core Data's capitals.
    var keyColumnName: @Sendable (String) -> String
    /// The placeholder of the `n`-th parameter of a statement (from 1).
    var placeholder: @Sendable (Int) -> String
    /// Whether a decimal is selected and bound as its text (exact), rather than as a number.
    var decimalsAsText: Bool
    /// Whether binary attributes that allow external storage are stored as Core Data stores them
    /// (a marker byte, then the value or the name of a file beside the store).
    var keepsExternalStorage: Bool
    /// What a save's version check appends to its `SELECT` of keys and versions, so that the
    /// versions stay as read until the commit (empty where one writer at a time makes it so).
    var versionLock: String
    /// Whether an update reads back the row's new version (`RETURNING`).
    var returnsUpdatedVersion: Bool
    /// How an insert that does nothing when the row exists begins and ends.
    var ignoringInsert: (prefix: String, suffix: String)
    /// How predicates and sort descriptors are written (``SQLPredicateCompiler``).
    var predicates: PredicateSQL

    /// A column (quoted) of the table aliased `alias`, as a fetch selects it for an attribute of `type`.
    func selectedColumn(_ column: String, type: AttributeType?, alias: String = "t0") -> String {
        "\(alias).\(CoreDataLayout.quote(column))" + (decimalsAsText && type == .decimal ? "::text" : "")
    }

    /// The cast a parameter bound to `attribute`'s column needs: a decimal sent as its text.
    func parameterCast(_ attribute: AttributeDescription) -> String {
        decimalsAsText && attribute.attributeType == .decimal ? "::numeric" : ""
    }

    /// An `INSERT` of one row into `table` (as statements name it) that does nothing when a
    /// unique key already holds it.
    func insertIgnoringDuplicates(into table: String, columns: [String]) -> String {
        let values = placeholders(columns.count)
        return "\(ignoringInsert.prefix) \(table) (\(columns.map(CoreDataLayout.quote).joined(separator: ", "))) VALUES (\(values))\(ignoringInsert.suffix)"
    }

    /// `sql` with its `?` placeholders (those outside quoted names and string literals) written as
    /// this dialect's, numbered from `first`: how a predicate compiled with `?`s (``SQLFragment``)
    /// becomes part of a PostgreSQL statement.
    func numbered(_ sql: String, from first: Int = 1) -> String {
        guard placeholder(1) != "?" else { return sql }
        var result = ""
        result.reserveCapacity(sql.utf8.count + 8)
        var number = first
        var quote: Character?
        for character in sql {
            if let open = quote {
                if character == open { quote = nil }
                result.append(character)
            } else if character == "\"" || character == "'" {
                quote = character
                result.append(character)
            } else if character == "?" {
                result += placeholder(number)
                number += 1
            } else {
                result.append(character)
            }
        }
        return result
    }

    /// `count` placeholders from the `first`, separated by commas.
    func placeholders(_ count: Int, from first: Int = 1) -> String {
        (first..<(first + count)).map(placeholder).joined(separator: ", ")
    }

    /// Core Data's SQLite layout.
    static let sqlite = SQLDialect(
        integer: "INTEGER", columnType: CoreDataLayout.columnType, binaryCollation: { _ in " COLLATE BINARY" }, keyColumnName: { $0 },
        placeholder: { _ in "?" }, decimalsAsText: false, keepsExternalStorage: true, versionLock: "", returnsUpdatedVersion: false,
        ignoringInsert: ("INSERT OR IGNORE INTO", ""), predicates: .sqlite)

    /// PostgreSQL: 64-bit integers, doubles for dates (seconds since 2001, as Core Data), exact
    /// numerics for decimals, text in the "C" collation (code-point order, as SQLite's BINARY for
    /// UTF-8) and bytea.
    static let postgres = SQLDialect(
        integer: "BIGINT",
        columnType: { type in
            switch type {
            case .integer16, .integer32, .integer64: "BIGINT"
            case .boolean: "BOOLEAN"
            case .double, .float, .date: "DOUBLE PRECISION"
            case .decimal: "NUMERIC"
            case .string, .uri: "TEXT COLLATE \"C\""
            case .binaryData, .uuid, .transformable: "BYTEA"
            }
        },
        binaryCollation: { property in
            guard let attribute = property as? AttributeDescription, [.string, .uri].contains(attribute.attributeType) else { return "" }
            return " COLLATE \"C\""
        },
        keyColumnName: CoreDataLayout.quote,
        placeholder: { "$\($0)" }, decimalsAsText: true, keepsExternalStorage: false,
        versionLock: " ORDER BY \"Z_PK\" FOR UPDATE", returnsUpdatedVersion: true,
        ignoringInsert: ("INSERT INTO", " ON CONFLICT DO NOTHING"), predicates: .postgres)
}

/// Where the SQL of a predicate differs between the dialects: the same conditions, with in-memory
/// semantics, written in each server's words.
///
/// | requirement | SQLite | PostgreSQL |
/// |---|---|---|
/// | ``true``, ``false`` | `1`, `0` | `TRUE`, `FALSE` |
/// | ``isNotTrue``: `NOT` with NULL as false | `IS NOT 1` | `IS NOT TRUE` |
/// | ``same``, ``notSame``: equality where NULL equals NULL | `IS`, `IS NOT` | `IS NOT DISTINCT FROM`, `IS DISTINCT FROM` |
/// | ``comparable(_:type:)``: a column as compared | a decimal as a REAL | a decimal as a double, a boolean as an integer |
/// | ``isNumber(_:)``: a REAL column holds no NaN | NaN is stored as a BLOB | NaN is `'NaN'` (which PostgreSQL orders above every number and equals itself) |
/// | ``nulls``: where nil sorts (first, as in memory) | SQLite's own order | `NULLS FIRST` ascending, `NULLS LAST` descending |
/// | ``hasStringFunctions``: `[c]`, `[d]`, `LIKE`, `MATCHES` | ObjectGraph's functions, registered on each connection | none: PostgreSQL's `LIKE`, `starts_with`, `strpos` for the case- and diacritic-sensitive operators |
/// | ``hasLongLists``: a list of any length as one bound value | `json_each` | none: one parameter per value |
/// | ``hasPredicateArithmetic``: arithmetic as memory does it | SQLite's own (memory reproduces it) | none: PostgreSQL's overflow and division by zero are errors |
///
/// What a dialect cannot say, ``SQLPredicateCompiler`` reports as ``SQLPredicateCompiler/NotInDialect``:
/// the store evaluates that part of the predicate (or that sort) in memory.
struct PredicateSQL: Sendable {
    var `true`: String
    var `false`: String
    var isNotTrue: String
    var same: String
    var notSame: String
    /// A column of an attribute of `type` as comparisons see it (numbers compare across types).
    var comparable: @Sendable (_ column: String, _ type: AttributeType) -> String
    /// The condition that a REAL expression holds a number or NULL, never NULL itself.
    var isNumber: @Sendable (String) -> String
    /// What follows `ASC` and `DESC` so that nil sorts first.
    var nulls: (ascending: String, descending: String)
    var hasStringFunctions: Bool
    var hasLongLists: Bool
    var hasPredicateArithmetic: Bool

    static let sqlite = PredicateSQL(
        true: "1", false: "0", isNotTrue: "IS NOT 1", same: "IS", notSame: "IS NOT",
        comparable: { column, type in type == .decimal ? "CAST(\(column) AS REAL)" : column },
        isNumber: { "typeof(\($0)) <> 'blob'" }, nulls: ("", ""),
        hasStringFunctions: true, hasLongLists: true, hasPredicateArithmetic: true)

    static let postgres = PredicateSQL(
        true: "TRUE", false: "FALSE", isNotTrue: "IS NOT TRUE", same: "IS NOT DISTINCT FROM", notSame: "IS DISTINCT FROM",
        comparable: { column, type in
            switch type {
            case .decimal: "(\(column))::float8"
            case .boolean: "(\(column))::int"
            default: column
            }
        },
        isNumber: { "\($0) IS DISTINCT FROM 'NaN'::float8" }, nulls: (" NULLS FIRST", " NULLS LAST"),
        hasStringFunctions: false, hasLongLists: false, hasPredicateArithmetic: false)
}
