import Foundation

/// A set of property indices as a bitset: what changed in an object since its last save.
struct PropertyMask: Sequence, ExpressibleByArrayLiteral, Equatable {
    private var words: [UInt64]
    private var small: UInt64 = 0

    init() { words = [] }
    init(arrayLiteral elements: Int...) {
        self.init()
        for element in elements { insert(element) }
    }

    var isEmpty: Bool { small == 0 && words.allSatisfy { $0 == 0 } }
    var count: Int { small.nonzeroBitCount + words.reduce(0) { $0 + $1.nonzeroBitCount } }

    @inline(__always)
    func contains(_ index: Int) -> Bool {
        if index < 64 { return small & (1 << UInt64(index)) != 0 }
        let word = index / 64 - 1
        return word < words.count && words[word] & (1 << UInt64(index % 64)) != 0
    }

    @inline(__always)
    @discardableResult
    mutating func insert(_ index: Int) -> (inserted: Bool, memberAfterInsert: Int) {
        if index < 64 {
            let bit: UInt64 = 1 << UInt64(index)
            let inserted = small & bit == 0
            small |= bit
            return (inserted, index)
        }
        let word = index / 64 - 1
        if word >= words.count { words += Array(repeating: 0, count: word - words.count + 1) }
        let bit: UInt64 = 1 << UInt64(index % 64)
        let inserted = words[word] & bit == 0
        words[word] |= bit
        return (inserted, index)
    }

    @discardableResult
    mutating func remove(_ index: Int) -> Int? {
        guard contains(index) else { return nil }
        if index < 64 { small &= ~(1 << UInt64(index)) } else { words[index / 64 - 1] &= ~(1 << UInt64(index % 64)) }
        return index
    }

    func union(_ other: PropertyMask) -> PropertyMask {
        var result = self
        for index in other { result.insert(index) }
        return result
    }

    func makeIterator() -> AnyIterator<Int> {
        var index = 0
        let limit = 64 * (words.count + 1)
        let mask = self
        return AnyIterator {
            while index < limit {
                defer { index += 1 }
                if mask.contains(index) { return index }
            }
            return nil
        }
    }

    static func == (lhs: PropertyMask, rhs: PropertyMask) -> Bool { Array(lhs) == Array(rhs) }
}
