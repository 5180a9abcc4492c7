import Foundation

/// A set of property indices as a bitset: what changed in an object since its last save.
struct PropertyMask: Sequence, ExpressibleByArrayLiteral, Equatable {
    private var words: [UInt64]
    private var small: UInt64 = 0

    init() { words = [] }
    init(arrayLiteral elements: Int...) {
        self.init(elements)
    }

    init(_ elements: some Sequence<Int>) {
        self.init()
        for element in elements { insert(element) }
    }

    var isEmpty: Bool { small == 0 && words.allSatisfy { $0 == 0 } }
    var count: Int { small.nonzeroBitCount + words.reduce(0) { $0 + $1.nonzeroBitCount } }
    var underestimatedCount: Int { count }

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

    /// The indices in both masks.
    func intersection(_ other: PropertyMask) -> PropertyMask {
        var result = PropertyMask()
        result.small = small & other.small
        if !words.isEmpty && !other.words.isEmpty {
            result.words = zip(words, other.words).map { $0 & $1 }
        }
        return result
    }

    /// The indices of this mask that are not in `other`.
    func subtracting(_ other: PropertyMask) -> PropertyMask {
        var result = self
        result.small &= ~other.small
        for i in result.words.indices where i < other.words.count { result.words[i] &= ~other.words[i] }
        return result
    }

    func union(_ other: PropertyMask) -> PropertyMask {
        var result = self
        for index in other { result.insert(index) }
        return result
    }

    func makeIterator() -> Iterator { Iterator(small: small, words: words) }

    /// The indices in ascending order, a set bit at a time (no test of the bits that are clear).
    struct Iterator: IteratorProtocol {
        private let words: [UInt64]
        /// The bits of the current word not returned yet.
        private var word: UInt64
        /// The current word: -1 for `small`, then the positions of `words`.
        private var position = -1

        fileprivate init(small: UInt64, words: [UInt64]) {
            self.word = small
            self.words = words
        }

        mutating func next() -> Int? {
            while word == 0 {
                position += 1
                guard position < words.count else { return nil }
                word = words[position]
            }
            let bit = word.trailingZeroBitCount
            word &= word - 1
            return 64 * (position + 1) + bit
        }
    }

    static func == (lhs: PropertyMask, rhs: PropertyMask) -> Bool { Array(lhs) == Array(rhs) }
}
