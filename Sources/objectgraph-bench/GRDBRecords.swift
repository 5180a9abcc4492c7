import GRDB
import ObjectGraphBenchCore

/// An item as a GRDB record, written as GRDB's documentation shows: `init(row:)` reading columns
/// by name, `encode(to:)` writing them (faster than `Codable`, which a user could pick instead).
struct GRDBItem: FetchableRecord, MutablePersistableRecord, BenchItemRow {
    static let databaseTableName = "item"
    var id: Int64?
    var i0, i1, i2, i3, i4, i5, i6, i7, i8, i9: Int64

    /// The item of row number `row`: every attribute equals `row`.
    init(row: Int) {
        let v = Int64(row)
        (i0, i1, i2, i3, i4, i5, i6, i7, i8, i9) = (v, v, v, v, v, v, v, v, v, v)
    }

    init(row: Row) throws {
        id = row["id"]
        i0 = row["i0"]; i1 = row["i1"]; i2 = row["i2"]; i3 = row["i3"]; i4 = row["i4"]
        i5 = row["i5"]; i6 = row["i6"]; i7 = row["i7"]; i8 = row["i8"]; i9 = row["i9"]
    }

    func encode(to container: inout PersistenceContainer) throws {
        container["id"] = id
        container["i0"] = i0; container["i1"] = i1; container["i2"] = i2; container["i3"] = i3; container["i4"] = i4
        container["i5"] = i5; container["i6"] = i6; container["i7"] = i7; container["i8"] = i8; container["i9"] = i9
    }

    mutating func didInsert(_ inserted: InsertionSuccess) { id = inserted.rowID }

    /// The checksum of the ten attributes.
    var checksum: Int64 { BenchData.itemChecksum(of: (i0, i1, i2, i3, i4, i5, i6, i7, i8, i9)) }
}

/// An entry (`name`, `score`) as a GRDB record.
struct GRDBEntry: FetchableRecord, MutablePersistableRecord {
    static let databaseTableName = "entry"
    var id: Int64?
    var name: String
    var score: Int64

    init(id: Int64? = nil, name: String, score: Int64) {
        self.id = id
        self.name = name
        self.score = score
    }

    init(row: Row) throws {
        id = row["id"]
        name = row["name"]
        score = row["score"]
    }

    func encode(to container: inout PersistenceContainer) throws {
        container["id"] = id
        container["name"] = name
        container["score"] = score
    }

    mutating func didInsert(_ inserted: InsertionSuccess) { id = inserted.rowID }
}
