import Testing
@testable import ObjectGraphCore

@Suite("Property masks")
struct PropertyMaskTests {
    @Test func iterationGivesTheIndicesInAscendingOrderAcrossWords() {
        let indices = [0, 1, 5, 63, 64, 100, 127, 128, 200]
        var mask = PropertyMask()
        for index in indices.reversed() { mask.insert(index) }
        #expect(Array(mask) == indices)
        #expect(mask.count == indices.count)
        mask.remove(64)
        mask.remove(0)
        #expect(Array(mask) == [1, 5, 63, 100, 127, 128, 200])
        #expect(Array(PropertyMask()).isEmpty)
        // Only a high word set: the empty words before it give nothing.
        #expect(Array(PropertyMask(arrayLiteral: 300)) == [300])
    }
}
