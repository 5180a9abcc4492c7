import Foundation

/// A decoder of raw DEFLATE streams (RFC 1951), the compression of the compiled model Core Data
/// caches in a store's `Z_MODELCACHE`. Foundation on Linux has no `NSData.decompressed(using:)`, and
/// the package links no zlib module, so this is a small, bounds-checked decoder of its own: damaged
/// input throws, it never traps.
enum Inflate {
    /// Why a stream could not be decoded.
    struct Malformed: Error, CustomStringConvertible {
        let reason: String
        var description: String { reason }
    }

    /// Decompresses a raw DEFLATE stream (no zlib or gzip header).
    ///
    /// - Parameter limit: the most bytes the output may have, a guard against decompression bombs.
    /// - Throws: ``Malformed`` at the first inconsistency.
    static func decompress(_ data: Data, limit: Int = 256 << 20) throws -> Data {
        var state = State(input: [UInt8](data), limit: limit)
        try state.run()
        return Data(state.output)
    }

    /// A canonical Huffman code: how many codes of each length, and the symbols in code order.
    private struct Huffman {
        var counts = [Int](repeating: 0, count: 16)
        var symbols: [Int] = []

        /// Builds the code from each symbol's code length; incomplete codes are allowed only where
        /// RFC 1951 allows them (a single distance code).
        init(lengths: [Int]) throws {
            for length in lengths { counts[length] += 1 }
            var left = 1
            for length in 1..<16 {
                left <<= 1
                left -= counts[length]
                guard left >= 0 else { throw Malformed(reason: "over-subscribed Huffman code") }
            }
            var offsets = [Int](repeating: 0, count: 16)
            for length in 1..<15 { offsets[length + 1] = offsets[length] + counts[length] }
            symbols = [Int](repeating: 0, count: lengths.count)
            for (symbol, length) in lengths.enumerated() where length != 0 {
                symbols[offsets[length]] = symbol
                offsets[length] += 1
            }
            counts[0] = 0
        }
    }

    private struct State {
        let input: [UInt8]
        let limit: Int
        var position = 0
        var bitBuffer = 0
        var bitCount = 0
        var output: [UInt8] = []

        init(input: [UInt8], limit: Int) {
            self.input = input
            self.limit = limit
        }

        mutating func bits(_ needed: Int) throws -> Int {
            var value = bitBuffer
            while bitCount < needed {
                guard position < input.count else { throw Malformed(reason: "the stream ends early") }
                value |= Int(input[position]) << bitCount
                position += 1
                bitCount += 8
            }
            bitBuffer = value >> needed
            bitCount -= needed
            return value & ((1 << needed) - 1)
        }

        mutating func decode(_ code: Huffman) throws -> Int {
            var value = 0, first = 0, index = 0
            for length in 1..<16 {
                value |= try bits(1)
                let count = code.counts[length]
                if value - count < first { return code.symbols[index + (value - first)] }
                index += count
                first += count
                first <<= 1
                value <<= 1
            }
            throw Malformed(reason: "invalid Huffman code")
        }

        mutating func run() throws {
            var last = 0
            repeat {
                last = try bits(1)
                switch try bits(2) {
                case 0: try stored()
                case 1: try codes(Self.fixedLengths, Self.fixedDistances)
                case 2: try dynamic()
                default: throw Malformed(reason: "invalid block type")
                }
            } while last == 0
        }

        mutating func append(_ byte: UInt8) throws {
            guard output.count < limit else { throw Malformed(reason: "the output exceeds \(limit) bytes") }
            output.append(byte)
        }

        mutating func stored() throws {
            bitBuffer = 0
            bitCount = 0
            guard position + 4 <= input.count else { throw Malformed(reason: "the stream ends in a stored block's header") }
            let length = Int(input[position]) | Int(input[position + 1]) << 8
            let complement = Int(input[position + 2]) | Int(input[position + 3]) << 8
            guard length == ~complement & 0xFFFF else { throw Malformed(reason: "a stored block's length does not match its complement") }
            position += 4
            guard position + length <= input.count else { throw Malformed(reason: "the stream ends in a stored block") }
            for byte in input[position..<position + length] { try append(byte) }
            position += length
        }

        static let lengthBase = [3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258]
        static let lengthExtra = [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0]
        static let distanceBase = [1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537, 2049, 3073,
                                   4097, 6145, 8193, 12289, 16385, 24577]
        static let distanceExtra = [0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13]

        // Force-try is safe: these fixed code lengths are RFC 1951's, a complete code.
        static let fixedLengths = try! Huffman(lengths: (0..<288).map { $0 < 144 ? 8 : $0 < 256 ? 9 : $0 < 280 ? 7 : 8 })
        static let fixedDistances = try! Huffman(lengths: [Int](repeating: 5, count: 30))

        mutating func codes(_ lengths: Huffman, _ distances: Huffman) throws {
            while true {
                let symbol = try decode(lengths)
                if symbol < 256 {
                    try append(UInt8(symbol))
                } else if symbol == 256 {
                    return
                } else {
                    let index = symbol - 257
                    guard index < 29 else { throw Malformed(reason: "invalid length symbol \(symbol)") }
                    let length = Self.lengthBase[index] + (try bits(Self.lengthExtra[index]))
                    let distanceSymbol = try decode(distances)
                    guard distanceSymbol < 30 else { throw Malformed(reason: "invalid distance symbol \(distanceSymbol)") }
                    let distance = Self.distanceBase[distanceSymbol] + (try bits(Self.distanceExtra[distanceSymbol]))
                    guard distance <= output.count else { throw Malformed(reason: "a distance reaches before the start of the output") }
                    for _ in 0..<length { try append(output[output.count - distance]) }
                }
            }
        }

        mutating func dynamic() throws {
            let literalCount = try bits(5) + 257
            let distanceCount = try bits(5) + 1
            let codeLengthCount = try bits(4) + 4
            guard literalCount <= 286, distanceCount <= 30 else { throw Malformed(reason: "too many codes in a dynamic block") }
            let order = [16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15]
            var codeLengths = [Int](repeating: 0, count: 19)
            for i in 0..<codeLengthCount { codeLengths[order[i]] = try bits(3) }
            let lengthCode = try Huffman(lengths: codeLengths)
            var lengths: [Int] = []
            while lengths.count < literalCount + distanceCount {
                let symbol = try decode(lengthCode)
                switch symbol {
                case 0..<16: lengths.append(symbol)
                case 16:
                    guard let previous = lengths.last else { throw Malformed(reason: "a repeated length with no previous length") }
                    lengths += [Int](repeating: previous, count: 3 + (try bits(2)))
                case 17: lengths += [Int](repeating: 0, count: 3 + (try bits(3)))
                default: lengths += [Int](repeating: 0, count: 11 + (try bits(7)))
                }
            }
            guard lengths.count == literalCount + distanceCount else { throw Malformed(reason: "code lengths overflow a dynamic block") }
            guard lengths[256] != 0 else { throw Malformed(reason: "a dynamic block has no end-of-block code") }
            try codes(try Huffman(lengths: Array(lengths[..<literalCount])), try Huffman(lengths: Array(lengths[literalCount...])))
        }
    }
}
