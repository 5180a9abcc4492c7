import Foundation

/// A writer of Apple's binary property lists (`bplist00`), the inverse of ``BinaryPropertyList``:
/// the format of compiled models and of the model Core Data caches in a store. Foundation's
/// `PropertyListSerialization` cannot write the keyed archiver's `UID`s, so this one does.
///
/// Strings, numbers and data that occur more than once are written once and shared, as Apple's
/// writer does; arrays and dictionaries are written as they come. Dictionary keys are written in
/// sorted order, so the same value always gives the same bytes.
struct BinaryPropertyListWriter {
    /// Why a value cannot be written.
    struct Unencodable: Error, CustomStringConvertible {
        let reason: String
        var description: String { reason }
    }

    /// The bytes of a binary property list whose top object is `value`.
    ///
    /// - Throws: ``Unencodable`` for a `UID` outside 0..<2³², which the format cannot hold.
    static func encode(_ value: PropertyListValue) throws -> Data {
        var writer = BinaryPropertyListWriter()
        let top = try writer.add(value)
        return writer.finish(top: top)
    }

    /// Each object's encoding before references are sized: markers and payloads, with references
    /// as object numbers.
    private enum Pending {
        case bytes([UInt8])
        case collection(marker: UInt8, count: Int, references: [Int])
    }

    private var objects: [Pending] = []
    /// Scalars already written (strings, numbers, data, UIDs), so each is written once.
    private var shared: [SharedKey: Int] = [:]

    private enum SharedKey: Hashable {
        case string(String), integer(Int64), real(UInt64), boolean(Bool), date(UInt64), data(Data), uid(Int), null
    }

    private mutating func add(_ value: PropertyListValue) throws -> Int {
        switch value {
        case .array(let items):
            let index = reserve()
            var references: [Int] = []
            references.reserveCapacity(items.count)
            for item in items { references.append(try add(item)) }
            objects[index] = .collection(marker: 0xA0, count: items.count, references: references)
            return index
        case .dictionary(let fields):
            let index = reserve()
            let keys = fields.keys.sorted()
            var references: [Int] = []
            references.reserveCapacity(keys.count * 2)
            for key in keys { references.append(try add(.string(key))) }
            for key in keys { references.append(try add(fields[key]!)) }
            objects[index] = .collection(marker: 0xD0, count: keys.count, references: references)
            return index
        default:
            let key = try sharedKey(value)
            if let known = shared[key] { return known }
            let index = objects.count
            objects.append(.bytes(try Self.scalarBytes(value)))
            shared[key] = index
            return index
        }
    }

    private mutating func reserve() -> Int {
        objects.append(.bytes([]))
        return objects.count - 1
    }

    private func sharedKey(_ value: PropertyListValue) throws -> SharedKey {
        switch value {
        case .string(let string): .string(string)
        case .integer(let number): .integer(number)
        case .real(let number): .real(number.bitPattern)
        case .boolean(let flag): .boolean(flag)
        case .date(let seconds): .date(seconds.bitPattern)
        case .data(let data): .data(data)
        case .uid(let index): .uid(index)
        case .null: .null
        case .array, .dictionary: throw Unencodable(reason: "a collection is not a scalar")
        }
    }

    private static func scalarBytes(_ value: PropertyListValue) throws -> [UInt8] {
        switch value {
        case .null: return [0x00]
        case .boolean(let flag): return [flag ? 0x09 : 0x08]
        case .integer(let number): return integerBytes(number)
        case .real(let number): return [0x23] + bigEndian(number.bitPattern, size: 8)
        case .date(let seconds): return [0x33] + bigEndian(seconds.bitPattern, size: 8)
        case .data(let data): return header(0x40, count: data.count) + [UInt8](data)
        case .string(let string):
            if string.utf8.allSatisfy({ $0 < 0x80 }) {
                return header(0x50, count: string.utf8.count) + [UInt8](string.utf8)
            }
            let units = Array(string.utf16)
            var bytes = header(0x60, count: units.count)
            bytes.reserveCapacity(bytes.count + units.count * 2)
            for unit in units { bytes += [UInt8(unit >> 8), UInt8(unit & 0xFF)] }
            return bytes
        case .uid(let index):
            guard index >= 0, index <= Int(UInt32.max) else { throw Unencodable(reason: "UID \(index) is out of range") }
            let size = index <= 0xFF ? 1 : index <= 0xFFFF ? 2 : 4
            return [0x80 | UInt8(size - 1)] + bigEndian(UInt64(index), size: size)
        case .array, .dictionary:
            throw Unencodable(reason: "a collection is not a scalar")
        }
    }

    /// An integer as Apple writes it: unsigned in 1, 2 or 4 bytes when it fits, else 8 bytes signed.
    private static func integerBytes(_ number: Int64) -> [UInt8] {
        if number >= 0 && number <= 0xFF { return [0x10, UInt8(number)] }
        if number >= 0 && number <= 0xFFFF { return [0x11] + bigEndian(UInt64(number), size: 2) }
        if number >= 0 && number <= 0xFFFF_FFFF { return [0x12] + bigEndian(UInt64(number), size: 4) }
        return [0x13] + bigEndian(UInt64(bitPattern: number), size: 8)
    }

    /// A marker with its count: in the low nibble below 15, else 0xF followed by an integer.
    private static func header(_ marker: UInt8, count: Int) -> [UInt8] {
        count < 15 ? [marker | UInt8(count)] : [marker | 0x0F] + integerBytes(Int64(count))
    }

    private static func bigEndian(_ value: UInt64, size: Int) -> [UInt8] {
        (0..<size).reversed().map { UInt8(truncatingIfNeeded: value >> (8 * UInt64($0))) }
    }

    private static func byteCount(for value: Int) -> Int {
        value <= 0xFF ? 1 : value <= 0xFFFF ? 2 : value <= 0xFFFF_FFFF ? 4 : 8
    }

    private func finish(top: Int) -> Data {
        let referenceSize = Self.byteCount(for: objects.count)
        var output: [UInt8] = Array("bplist00".utf8)
        var offsets: [Int] = []
        offsets.reserveCapacity(objects.count)
        for object in objects {
            offsets.append(output.count)
            switch object {
            case .bytes(let bytes):
                output += bytes
            case .collection(let marker, let count, let references):
                output += Self.header(marker, count: count)
                for reference in references { output += Self.bigEndian(UInt64(reference), size: referenceSize) }
            }
        }
        let tableStart = output.count
        let offsetSize = Self.byteCount(for: tableStart)
        for offset in offsets { output += Self.bigEndian(UInt64(offset), size: offsetSize) }
        output += [0, 0, 0, 0, 0, 0, UInt8(offsetSize), UInt8(referenceSize)]
        output += Self.bigEndian(UInt64(objects.count), size: 8)
        output += Self.bigEndian(UInt64(top), size: 8)
        output += Self.bigEndian(UInt64(tableStart), size: 8)
        return Data(output)
    }
}
