import Foundation

/// A compressor to raw DEFLATE streams (RFC 1951), the inverse of ``Inflate``: how Core Data stores
/// the compiled model it caches in a store's `Z_MODELCACHE` (no zlib or gzip header).
///
/// A small LZ77 compressor (hash chains over a 32 KiB window, matches of 3 to 258 bytes) whose
/// output is one block of fixed Huffman codes. Any DEFLATE decoder (zlib's, Apple's
/// `NSData.decompressed(using: .zlib)`) reads it.
enum Deflate {
    /// Compresses `data` into a raw DEFLATE stream.
    static func compress(_ data: Data) -> Data {
        let input = [UInt8](data)
        var writer = BitWriter()
        writer.write(1, count: 1)  // BFINAL: the only block
        writer.write(1, count: 2)  // BTYPE 01: fixed Huffman codes
        let windowSize = 32_768, maxChain = 64, minMatch = 3, maxMatch = 258
        let hashBits = 15
        var head = [Int](repeating: -1, count: 1 << hashBits)
        var previous = [Int](repeating: -1, count: windowSize)
        func hash(at position: Int) -> Int {
            let value = UInt32(input[position]) << 16 | UInt32(input[position + 1]) << 8 | UInt32(input[position + 2])
            return Int((value &* 2_654_435_761) >> (32 - UInt32(hashBits)))
        }
        func insert(_ position: Int) {
            guard position + minMatch <= input.count else { return }
            let h = hash(at: position)
            previous[position % windowSize] = head[h]
            head[h] = position
        }
        var position = 0
        while position < input.count {
            var bestLength = 0, bestDistance = 0
            if position + minMatch <= input.count {
                var candidate = head[hash(at: position)]
                var chain = maxChain
                let limit = min(maxMatch, input.count - position)
                while candidate >= 0, position - candidate <= windowSize, chain > 0 {
                    if input[candidate + bestLength] == input[position + bestLength] || bestLength == 0 {
                        var length = 0
                        while length < limit, input[candidate + length] == input[position + length] { length += 1 }
                        if length > bestLength {
                            bestLength = length
                            bestDistance = position - candidate
                            if length == limit { break }
                        }
                    }
                    let next = previous[candidate % windowSize]
                    if next >= candidate { break }  // a slot reused by a newer position
                    candidate = next
                    chain -= 1
                }
            }
            if bestLength >= minMatch {
                writer.writeLength(bestLength)
                writer.writeDistance(bestDistance)
                for offset in 0..<bestLength { insert(position + offset) }
                position += bestLength
            } else {
                writer.writeLiteral(Int(input[position]))
                insert(position)
                position += 1
            }
        }
        writer.writeLiteral(256)  // end of block
        return Data(writer.finish())
    }

    /// Bits gathered least significant first, as DEFLATE packs them.
    private struct BitWriter {
        private var output: [UInt8] = []
        private var buffer: UInt64 = 0
        private var count = 0

        mutating func write(_ bits: Int, count bitCount: Int) {
            buffer |= UInt64(bits) << UInt64(count)
            count += bitCount
            while count >= 8 {
                output.append(UInt8(truncatingIfNeeded: buffer))
                buffer >>= 8
                count -= 8
            }
        }

        /// A Huffman code: written most significant bit first.
        mutating func writeCode(_ code: Int, length: Int) {
            var reversed = 0
            for bit in 0..<length where code & (1 << bit) != 0 { reversed |= 1 << (length - 1 - bit) }
            write(reversed, count: length)
        }

        /// A literal byte or the end-of-block symbol, in the fixed literal/length code.
        mutating func writeLiteral(_ symbol: Int) {
            switch symbol {
            case 0...143: writeCode(0x30 + symbol, length: 8)
            case 144...255: writeCode(0x190 + symbol - 144, length: 9)
            case 256...279: writeCode(symbol - 256, length: 7)
            default: writeCode(0xC0 + symbol - 280, length: 8)
            }
        }

        private static let lengthBases = [3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59,
                                          67, 83, 99, 115, 131, 163, 195, 227, 258]
        private static let lengthExtra = [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0]
        private static let distanceBases = [1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769,
                                            1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577]
        private static let distanceExtra = [0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11,
                                            12, 12, 13, 13]

        mutating func writeLength(_ length: Int) {
            var index = Self.lengthBases.count - 1
            while Self.lengthBases[index] > length { index -= 1 }
            writeLiteral(257 + index)
            if Self.lengthExtra[index] > 0 { write(length - Self.lengthBases[index], count: Self.lengthExtra[index]) }
        }

        mutating func writeDistance(_ distance: Int) {
            var index = Self.distanceBases.count - 1
            while Self.distanceBases[index] > distance { index -= 1 }
            writeCode(index, length: 5)
            if Self.distanceExtra[index] > 0 { write(distance - Self.distanceBases[index], count: Self.distanceExtra[index]) }
        }

        mutating func finish() -> [UInt8] {
            if count > 0 { output.append(UInt8(truncatingIfNeeded: buffer)) }
            buffer = 0
            count = 0
            return output
        }
    }
}
