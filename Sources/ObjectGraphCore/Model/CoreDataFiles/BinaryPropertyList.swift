import Foundation

/// A value of a property list, with the keyed archiver's `UID` kept as its own case (Foundation's
/// `PropertyListSerialization` has no portable representation of it).
enum PropertyListValue: Equatable, Sendable {
    case string(String)
    case integer(Int64)
    case real(Double)
    case boolean(Bool)
    case date(Double)
    case data(Data)
    case array([PropertyListValue])
    case dictionary([String: PropertyListValue])
    case uid(Int)
    case null

    var string: String? { if case .string(let value) = self { value } else { nil } }
    var dictionary: [String: PropertyListValue]? { if case .dictionary(let value) = self { value } else { nil } }
    var array: [PropertyListValue]? { if case .array(let value) = self { value } else { nil } }
    var uid: Int? { if case .uid(let value) = self { value } else { nil } }
    var integer: Int64? {
        switch self {
        case .integer(let value): value
        case .boolean(let value): value ? 1 : 0
        case .real(let value) where value.rounded() == value && abs(value) < 9.2e18: Int64(value)
        default: nil
        }
    }
    var boolean: Bool? {
        switch self {
        case .boolean(let value): value
        case .integer(let value): value != 0
        default: nil
        }
    }
}

/// A reader of Apple's binary property lists (`bplist00`), the format of compiled models and of a
/// store's metadata. Every offset is bounds-checked: a damaged file throws, it never traps.
struct BinaryPropertyList {
    /// Why a property list could not be read.
    struct Malformed: Error, CustomStringConvertible {
        let reason: String
        var description: String { reason }
    }

    private let bytes: [UInt8]
    private let offsetSize: Int
    private let referenceSize: Int
    private let offsets: [Int]

    /// Whether `data` starts like a binary property list.
    static func isBinaryPropertyList(_ data: Data) -> Bool { data.starts(with: Array("bplist00".utf8)) }

    /// Decodes the top object of a binary property list.
    ///
    /// - Throws: ``Malformed`` describing the first inconsistency found.
    static func decode(_ data: Data) throws -> PropertyListValue {
        var list = try BinaryPropertyList(data)
        guard let top = list.topObject else { throw Malformed(reason: "no top object") }
        return try list.object(at: top, depth: 0)
    }

    private let topObject: Int?
    /// Objects already decoded, so a file that references one object many times costs one decoding.
    private var decoded: [Int: PropertyListValue] = [:]

    private init(_ data: Data) throws {
        bytes = Array(data)
        guard bytes.count >= 40, Self.isBinaryPropertyList(data) else {
            throw Malformed(reason: "not a binary property list (no bplist00 header)")
        }
        let trailer = bytes.count - 32
        offsetSize = Int(bytes[trailer + 6])
        referenceSize = Int(bytes[trailer + 7])
        guard (1...8).contains(offsetSize), (1...8).contains(referenceSize) else {
            throw Malformed(reason: "invalid trailer (offset size \(offsetSize), reference size \(referenceSize))")
        }
        let count = Self.readUnsigned(bytes, at: trailer + 8, size: 8)
        let top = Self.readUnsigned(bytes, at: trailer + 16, size: 8)
        let tableStart = Self.readUnsigned(bytes, at: trailer + 24, size: 8)
        guard count > 0, count < UInt64(bytes.count), top < count, tableStart >= 8,
              tableStart < UInt64(trailer), UInt64(trailer) - tableStart >= count * UInt64(offsetSize)
        else { throw Malformed(reason: "invalid trailer (\(count) objects, offset table at \(tableStart))") }
        var offsets: [Int] = []
        offsets.reserveCapacity(Int(count))
        for index in 0..<Int(count) {
            let offset = Self.readUnsigned(bytes, at: Int(tableStart) + index * offsetSize, size: offsetSize)
            guard offset >= 8, offset < tableStart else { throw Malformed(reason: "object \(index) has offset \(offset) outside the file") }
            offsets.append(Int(offset))
        }
        self.offsets = offsets
        topObject = Int(top)
    }

    private static func readUnsigned(_ bytes: [UInt8], at position: Int, size: Int) -> UInt64 {
        var value: UInt64 = 0
        for i in 0..<size { value = value << 8 | UInt64(bytes[position + i]) }
        return value
    }

    private func need(_ position: Int, _ count: Int) throws {
        guard position >= 0, count >= 0, position <= bytes.count - count else {
            throw Malformed(reason: "object data runs past the end of the file at offset \(position)")
        }
    }

    private mutating func object(at index: Int, depth: Int) throws -> PropertyListValue {
        if let known = decoded[index] { return known }
        let value = try decodeObject(at: index, depth: depth)
        decoded[index] = value
        return value
    }

    private mutating func decodeObject(at index: Int, depth: Int) throws -> PropertyListValue {
        guard depth < 256 else { throw Malformed(reason: "objects nested more than 256 deep (a cycle?)") }
        guard index >= 0, index < offsets.count else { throw Malformed(reason: "reference to object \(index), of \(offsets.count)") }
        var position = offsets[index]
        try need(position, 1)
        let marker = bytes[position]
        let high = marker >> 4, low = Int(marker & 0x0F)
        position += 1
        func count() throws -> Int {
            guard low == 0x0F else { return low }
            try need(position, 1)
            let intMarker = bytes[position]
            guard intMarker >> 4 == 1 else { throw Malformed(reason: "object \(index) has an invalid length") }
            let size = 1 << Int(intMarker & 0x0F)
            guard size <= 8 else { throw Malformed(reason: "object \(index) has an invalid length") }
            try need(position + 1, size)
            let value = Self.readUnsigned(bytes, at: position + 1, size: size)
            position += 1 + size
            guard value < UInt64(bytes.count) else { throw Malformed(reason: "object \(index) claims \(value) elements") }
            return Int(value)
        }
        switch high {
        case 0x0:
            switch low {
            case 0x0: return .null
            case 0x8: return .boolean(false)
            case 0x9: return .boolean(true)
            default: throw Malformed(reason: "object \(index) has unknown marker 0x\(String(marker, radix: 16))")
            }
        case 0x1:
            let size = 1 << low
            guard size <= 16 else { throw Malformed(reason: "object \(index) is an integer of \(size) bytes") }
            try need(position, size)
            // 16-byte integers carry the value in their low 8 bytes.
            let raw = Self.readUnsigned(bytes, at: position + max(0, size - 8), size: min(size, 8))
            return .integer(size >= 8 ? Int64(bitPattern: raw) : Int64(raw))
        case 0x2:
            let size = 1 << low
            try need(position, size)
            switch size {
            case 4: return .real(Double(Float(bitPattern: UInt32(Self.readUnsigned(bytes, at: position, size: 4)))))
            case 8: return .real(Double(bitPattern: Self.readUnsigned(bytes, at: position, size: 8)))
            default: throw Malformed(reason: "object \(index) is a real of \(size) bytes")
            }
        case 0x3:
            guard low == 3 else { throw Malformed(reason: "object \(index) is a malformed date") }
            try need(position, 8)
            return .date(Double(bitPattern: Self.readUnsigned(bytes, at: position, size: 8)))
        case 0x4:
            let n = try count()
            try need(position, n)
            return .data(Data(bytes[position..<position + n]))
        case 0x5:
            let n = try count()
            try need(position, n)
            guard let string = String(bytes: bytes[position..<position + n], encoding: .ascii) else {
                throw Malformed(reason: "object \(index) is not an ASCII string")
            }
            return .string(string)
        case 0x6:
            let n = try count()
            try need(position, n * 2)
            var units: [UInt16] = []
            units.reserveCapacity(n)
            for i in 0..<n { units.append(UInt16(bytes[position + 2 * i]) << 8 | UInt16(bytes[position + 2 * i + 1])) }
            return .string(String(decoding: units, as: UTF16.self))
        case 0x8:
            try need(position, low + 1)
            return .uid(Int(Self.readUnsigned(bytes, at: position, size: low + 1) & 0x7FFF_FFFF))
        case 0xA, 0xC:
            let n = try count()
            try need(position, n * referenceSize)
            var elements: [PropertyListValue] = []
            elements.reserveCapacity(n)
            for i in 0..<n {
                let reference = Self.readUnsigned(bytes, at: position + i * referenceSize, size: referenceSize)
                elements.append(try object(at: Int(clamping: reference), depth: depth + 1))
            }
            return .array(elements)
        case 0xD:
            let n = try count()
            try need(position, 2 * n * referenceSize)
            var dictionary: [String: PropertyListValue] = [:]
            for i in 0..<n {
                let keyReference = Self.readUnsigned(bytes, at: position + i * referenceSize, size: referenceSize)
                let valueReference = Self.readUnsigned(bytes, at: position + (n + i) * referenceSize, size: referenceSize)
                guard case .string(let key) = try object(at: Int(clamping: keyReference), depth: depth + 1) else {
                    throw Malformed(reason: "dictionary object \(index) has a key that is not a string")
                }
                dictionary[key] = try object(at: Int(clamping: valueReference), depth: depth + 1)
            }
            return .dictionary(dictionary)
        default:
            throw Malformed(reason: "object \(index) has unknown marker 0x\(String(marker, radix: 16))")
        }
    }
}
