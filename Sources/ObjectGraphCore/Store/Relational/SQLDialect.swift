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

    /// `count` placeholders from the `first`, separated by commas.
    func placeholders(_ count: Int, from first: Int = 1) -> String {
        (first..<(first + count)).map(placeholder).joined(separator: ", ")
    }

    /// Core Data's SQLite layout.
    static let sqlite = SQLDialect(
        integer: "INTEGER", columnType: CoreDataLayout.columnType, binaryCollation: { _ in " COLLATE BINARY" }, keyColumnName: { $0 },
        placeholder: { _ in "?" }, decimalsAsText: false, keepsExternalStorage: true, versionLock: "", returnsUpdatedVersion: false,
        ignoringInsert: ("INSERT OR IGNORE INTO", ""))

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
        ignoringInsert: ("INSERT INTO", " ON CONFLICT DO NOTHING"))
}
