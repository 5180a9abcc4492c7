import Foundation
import GRDB
import GRDBSQLite

// How attribute values are written to and read from SQLite columns. Every value is stored exactly:
//
// - As Core Data stores them: integers and booleans are INTEGER; doubles and floats are REAL
//   (`FLOAT` columns); dates are REAL seconds since 2001-01-01 (`TIMESTAMP` columns); decimals are
//   bound as text into `DECIMAL` columns, whose numeric affinity keeps a double (15 significant
//   digits; a NaN decimal stays the text 'NaN'); strings and URLs are TEXT (`VARCHAR`); data, UUIDs
//   (16 bytes) and transformables are BLOB; an object ID is its primary key.
// - A REAL column cannot hold two doubles: SQLite binds NaN as NULL, and writes -0.0 to disk as the
//   integer 0 (it stores whole REAL values as integers), which reads back as +0.0. Those two — NaN
//   (any payload) and -0.0 — are stored as an 8-byte BLOB holding the double's IEEE-754 bit pattern,
//   big-endian. A BLOB never equals a number in SQL, so a NaN column equals no number, as NaN
//   should; reading such a BLOB from a double, float or date column gives the double back.
//   ``SQLiteFunctions/real`` (`og_real(x)`) decodes it in SQL.
// - Text and blobs are bound and read with their length, so an embedded NUL is kept; an empty
//   string is empty TEXT and empty data an empty BLOB, never NULL.
//
// Reading is lenient, for files written by others: a TEXT 'NaN' in a decimal column is
// `Decimal.nan`, a TEXT number in a numeric column is that number, and a value that cannot be one
// of the attribute's type reads as nil rather than as a value of another type.

extension Value {
    /// The encoding of a double a REAL column cannot keep (NaN, -0.0), or nil for every other double.
    @inline(__always)
    static func specialRealBits(_ v: Double) -> UInt64? {
        v.isNaN || v.bitPattern == (-0.0 as Double).bitPattern ? v.bitPattern.bigEndian : nil
    }

    /// Decodes an 8-byte BLOB written by ``specialRealBits(_:)``.
    static func double(fromSpecialReal bytes: UnsafeRawBufferPointer) -> Double? {
        guard bytes.count == 8 else { return nil }
        return Double(bitPattern: UInt64(bigEndian: bytes.loadUnaligned(as: UInt64.self)))
    }

    /// Reads one column of the row a statement is on, for an attribute of `type`.
    @inline(__always)
    init(_ statement: SQLiteStatement, column: CInt, type: AttributeType) {
        switch sqlite3_column_type(statement, column) {
        case SQLITE_NULL:
            self = .null
        case SQLITE_INTEGER where type == .integer64 || type == .integer32 || type == .integer16:
            self = .int(sqlite3_column_int64(statement, column))
        case SQLITE_INTEGER where type == .boolean:
            self = .bool(sqlite3_column_int64(statement, column) != 0)
        case SQLITE_FLOAT where type == .double || type == .float:
            self = .double(sqlite3_column_double(statement, column))
        case SQLITE_FLOAT where type == .date:
            self = .date(Date(timeIntervalSinceReferenceDate: sqlite3_column_double(statement, column)))
        case SQLITE_TEXT where type == .string:
            self = .string(Self.text(statement, column))
        case SQLITE_INTEGER:
            self = Value(storedInteger: sqlite3_column_int64(statement, column), type: type)
        case SQLITE_FLOAT:
            self = Value(storedReal: sqlite3_column_double(statement, column), type: type)
        case SQLITE_TEXT:
            self = Value(storedText: Self.text(statement, column), type: type)
        default:
            let count = Int(sqlite3_column_bytes(statement, column))
            let bytes = UnsafeRawBufferPointer(start: sqlite3_column_blob(statement, column), count: count)
            self = Value(storedBlob: bytes, type: type)
        }
    }

    /// The text of a column, with its length (an embedded NUL is kept).
    @inline(__always)
    static func text(_ statement: SQLiteStatement, _ column: CInt) -> String {
        guard let start = sqlite3_column_text(statement, column) else { return "" }
        let count = Int(sqlite3_column_bytes(statement, column))
        return String(decoding: UnsafeBufferPointer(start: start, count: count), as: UTF8.self)
    }

    /// Binds the value, as stored, to a statement parameter (1-based). Returns SQLite's result code.
    @inline(__always)
    func bind(to statement: SQLiteStatement, at index: CInt) -> CInt {
        switch self {
        case .null: sqlite3_bind_null(statement, index)
        case .int(let v): sqlite3_bind_int64(statement, index, v)
        case .bool(let v): sqlite3_bind_int64(statement, index, v ? 1 : 0)
        case .double(let v): Self.bindReal(v, to: statement, at: index)
        case .date(let v): Self.bindReal(v.timeIntervalSinceReferenceDate, to: statement, at: index)
        case .string(let v): Self.bindText(v, to: statement, at: index)
        case .decimal(let v): Self.bindText(v.description, to: statement, at: index)
        case .url(let v): Self.bindText(v.absoluteString, to: statement, at: index)
        case .data(let v): v.withUnsafeBytes { Self.bindBlob($0, to: statement, at: index) }
        case .uuid(let v): withUnsafeBytes(of: v.uuid) { Self.bindBlob($0, to: statement, at: index) }
        case .objectID(let v): sqlite3_bind_int64(statement, index, v.primaryKey ?? -1)
        }
    }

    @inline(__always)
    private static func bindReal(_ v: Double, to statement: SQLiteStatement, at index: CInt) -> CInt {
        guard var bits = specialRealBits(v) else { return sqlite3_bind_double(statement, index, v) }
        return withUnsafeBytes(of: &bits) { bindBlob($0, to: statement, at: index) }
    }

    @inline(__always)
    private static func bindText(_ v: String, to statement: SQLiteStatement, at index: CInt) -> CInt {
        var v = v
        return v.withUTF8 { utf8 in
            guard let start = utf8.baseAddress, utf8.count > 0 else {
                return sqlite3_bind_text(statement, index, "", 0, sqliteTransient)
            }
            return start.withMemoryRebound(to: CChar.self, capacity: utf8.count) {
                sqlite3_bind_text64(statement, index, $0, sqlite3_uint64(utf8.count), sqliteTransient, UInt8(SQLITE_UTF8))
            }
        }
    }

    @inline(__always)
    private static func bindBlob(_ bytes: UnsafeRawBufferPointer, to statement: SQLiteStatement, at index: CInt) -> CInt {
        guard let start = bytes.baseAddress, bytes.count > 0 else { return sqlite3_bind_zeroblob(statement, index, 0) }
        return sqlite3_bind_blob64(statement, index, start, sqlite3_uint64(bytes.count), sqliteTransient)
    }

    // MARK: - Reading a stored value of another storage class than the usual one

    init(storedInteger v: Int64, type: AttributeType) {
        switch type {
        case .boolean: self = .bool(v != 0)
        case .double, .float: self = .double(Double(v))
        case .date: self = .date(Date(timeIntervalSinceReferenceDate: Double(v)))
        case .decimal: self = .decimal(Decimal(v))
        case .integer16, .integer32, .integer64: self = .int(v)
        case .string: self = .string(String(v))
        default: self = .null
        }
    }

    init(storedReal v: Double, type: AttributeType) {
        switch type {
        case .date: self = .date(Date(timeIntervalSinceReferenceDate: v))
        case .double, .float: self = .double(v)
        case .integer16, .integer32, .integer64: self = Int64(exactly: v.rounded(.towardZero)).map(Value.int) ?? .null
        case .boolean: self = v == 0 ? .bool(false) : v == 1 ? .bool(true) : .null
        case .decimal: self = v.isNaN ? .decimal(.nan) : .decimal(Self.decimal(String(v)) ?? Decimal(v))
        case .string: self = .string(String(v))
        default: self = .null
        }
    }

    init(storedText v: String, type: AttributeType) {
        switch type {
        case .string: self = .string(v)
        case .decimal: self = Self.decimal(v).map(Value.decimal) ?? .null
        case .uri: self = URL(string: v).map(Value.url) ?? .null
        case .double, .float: self = Double(v).map(Value.double) ?? .null
        case .date: self = Double(v).map { .date(Date(timeIntervalSinceReferenceDate: $0)) } ?? .null
        case .integer16, .integer32, .integer64: self = Int64(v).map(Value.int) ?? .null
        case .boolean: self = Int64(v).map { .bool($0 != 0) } ?? .null
        case .uuid: self = UUID(uuidString: v).map(Value.uuid) ?? .null
        case .binaryData, .transformable: self = .data(Data(v.utf8))
        }
    }

    init(storedBlob bytes: UnsafeRawBufferPointer, type: AttributeType) {
        switch type {
        case .uuid where bytes.count == 16:
            var uuid: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
            withUnsafeMutableBytes(of: &uuid) { $0.copyMemory(from: bytes) }
            self = .uuid(UUID(uuid: uuid))
        case .double, .float:
            self = Self.double(fromSpecialReal: bytes).map(Value.double) ?? .null
        case .date:
            self = Self.double(fromSpecialReal: bytes).map { .date(Date(timeIntervalSinceReferenceDate: $0)) } ?? .null
        case .binaryData, .transformable:
            self = .data(Data(bytes))
        case .string:
            self = .string(String(decoding: bytes, as: UTF8.self))
        default:
            self = .null
        }
    }

    /// A decimal written as text: `Decimal.description`, or 'NaN' (as Core Data writes a NaN decimal).
    static func decimal(_ text: String) -> Decimal? {
        if text == "NaN" || text == "nan" { return .nan }
        return Decimal(string: text, locale: Locale(identifier: "en_US_POSIX"))
    }

    /// The value as an argument of a predicate or a lookup (GRDB binds it): what ``bind(to:at:)``
    /// stores, except that NaN is NULL (so it matches nothing) and -0.0 is the number (equal to 0).
    var databaseValue: DatabaseValue {
        switch self {
        case .null: .null
        case .int(let v): v.databaseValue
        case .bool(let v): (v ? 1 : 0 as Int64).databaseValue
        case .double(let v): v.databaseValue
        case .decimal(let v): v.description.databaseValue
        case .string(let v): v.databaseValue
        case .date(let v): v.timeIntervalSinceReferenceDate.databaseValue
        case .data(let v): v.databaseValue
        case .uuid(let v): withUnsafeBytes(of: v.uuid) { Data($0) }.databaseValue
        case .url(let v): v.absoluteString.databaseValue
        case .objectID(let v): (v.primaryKey ?? -1).databaseValue
        }
    }

    /// Reads a value GRDB decoded back into canonical form for an attribute of `type`.
    init(databaseValue: DatabaseValue, type: AttributeType) {
        switch databaseValue.storage {
        case .null: self = .null
        case .int64(let v): self = Value(storedInteger: v, type: type)
        case .double(let v): self = Value(storedReal: v, type: type)
        case .string(let v): self = Value(storedText: v, type: type)
        case .blob(let v): self = v.withUnsafeBytes { Value(storedBlob: $0, type: type) }
        }
    }
}

/// SQLite's SQLITE_TRANSIENT: the library copies the bound bytes.
let sqliteTransient = unsafeBitCast(OpaquePointer(bitPattern: -1), to: sqlite3_destructor_type.self)

extension GRDB.Statement {
    /// Binds the arguments of a predicate or a lookup (each as ``Value/databaseValue``), keeping
    /// the whole of a string that holds U+0000: GRDB binds text as a C string, which ends there,
    /// so `title == "a\0b"` would have matched the title "a".
    func setArguments(_ values: [Value]) {
        setUncheckedArguments(StatementArguments(values.map(\.databaseValue)))
        for (i, value) in values.enumerated() {
            if case .string(let text) = value, text.utf8.contains(0) { _ = value.bind(to: sqliteStatement, at: CInt(i + 1)) }
        }
    }
}

extension Database {
    /// A new statement with `arguments` bound as ``GRDB/Statement/setArguments(_:)`` binds them
    /// (a string holding U+0000 whole).
    func makeStatement(sql: String, arguments: [Value]) throws -> GRDB.Statement {
        let statement = try makeStatement(sql: sql)
        statement.setArguments(arguments)
        return statement
    }
}
