import ObjectGraph
import ObjectGraphBenchCore

/// The benchmark's `Item` as a `@Managed` class, for the typed variants (`insert_typed`,
/// `fetch_typed`, `update_typed`): ten Integer 64 attributes `i0`…`i9`, read and written as
/// Swift properties, as an app with a typed model would.
@Managed final class Item: ManagedObject {
    var i0: Int64 = 0
    var i1: Int64 = 0
    var i2: Int64 = 0
    var i3: Int64 = 0
    var i4: Int64 = 0
    var i5: Int64 = 0
    var i6: Int64 = 0
    var i7: Int64 = 0
    var i8: Int64 = 0
    var i9: Int64 = 0
}

extension Item {
    /// Sets the ten attributes of row number `row`: each equals `row`.
    func fill(row: Int) {
        let v = Int64(row)
        i0 = v; i1 = v; i2 = v; i3 = v; i4 = v
        i5 = v; i6 = v; i7 = v; i8 = v; i9 = v
    }

    /// The checksum of the ten attributes, each read once through its property.
    var checksum: Int64 { BenchData.itemChecksum(of: (i0, i1, i2, i3, i4, i5, i6, i7, i8, i9)) }
}
