import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

#if canImport(Glibc)
private let systemWrite = Glibc.write
#else
private let systemWrite = Darwin.write
#endif

/// Reading and writing an atomic store's file: a file is checked before it is decoded (its
/// nesting is bounded, so a crafted file cannot overflow the decoder's stack), and written whole to
/// a temporary file beside it, synced, then renamed over it, so the file is always the old content
/// or the new. A failure says which: `.readOnly`, `.diskFull` or `.io`, naming the file.
enum AtomicFileIO {
    /// The deepest nesting of arrays and dictionaries accepted in a file. ObjectGraph's own files
    /// nest 7 deep; the bound only stops crafted files.
    static let maximumDepth = 64

    // MARK: - Reading

    /// Throws `.notADatabase` when the property list in `data` nests deeper than ``maximumDepth``
    /// (or, in a binary property list, when its structure is malformed or refers to itself; in an
    /// XML one, when it is not UTF-8, which stops Foundation's reader: see ``PropertyListInput``).
    static func checkNesting(of data: Data, format: AtomicFormat, url: URL, type: StoreType) throws {
        let problem: String? = data.withUnsafeBytes { raw in
            let bytes = raw.bindMemory(to: UInt8.self)
            switch format {
            case .xml: return PropertyListInput.utf8Problem(bytes) ?? xmlNestingProblem(bytes)
            case .binary: return binaryNestingProblem(bytes)
            }
        }
        if let problem {
            throw ObjectGraphError(.notADatabase, "The file at \(url.path) is not an ObjectGraph \(type) store (\(problem)); it was left as it was", url: url)
        }
    }

    /// Counts `<array>` and `<dict>` elements open at once. A property list writer escapes `<` in
    /// strings, so a tag can only be a tag (a comment could mention one: it only counts deeper).
    private static func xmlNestingProblem(_ bytes: UnsafeBufferPointer<UInt8>) -> String? {
        let open = UInt8(ascii: "<"), slash = UInt8(ascii: "/"), close = UInt8(ascii: ">")
        let array = Array("array".utf8), dict = Array("dict".utf8)
        func matches(_ word: [UInt8], at i: Int) -> Bool {
            guard i + word.count <= bytes.count else { return false }
            for k in word.indices where bytes[i + k] != word[k] { return false }
            return true
        }
        var depth = 0
        var i = 0
        while i < bytes.count {
            guard bytes[i] == open else { i += 1; continue }
            var j = i + 1
            let closing = j < bytes.count && bytes[j] == slash
            if closing { j += 1 }
            if matches(array, at: j) { j += array.count } else if matches(dict, at: j) { j += dict.count } else { i = j; continue }
            guard j < bytes.count else { break }
            let next = bytes[j]
            if next == close || next == 0x20 || next == 0x09 || next == 0x0A || next == 0x0D {
                if closing {
                    depth -= 1
                } else {
                    depth += 1
                    if depth > maximumDepth { return "arrays and dictionaries nest more than \(maximumDepth) deep" }
                }
            }
            i = j
        }
        return nil
    }

    /// Walks a binary property list's object graph (without recursion) from its top object.
    private static func binaryNestingProblem(_ bytes: UnsafeBufferPointer<UInt8>) -> String? {
        guard bytes.count >= 40, bytes.starts(with: Array("bplist0".utf8)) else { return nil }  // the decoder refuses it
        func integer(at offset: Int, size: Int) -> Int? {
            guard size >= 1, size <= 8, offset >= 0, offset + size <= bytes.count else { return nil }
            var value: UInt64 = 0
            for k in 0..<size { value = value << 8 | UInt64(bytes[offset + k]) }
            return value > UInt64(Int.max) ? nil : Int(value)
        }
        let trailer = bytes.count - 32
        let offsetSize = Int(bytes[trailer + 6]), referenceSize = Int(bytes[trailer + 7])
        guard let objectCount = integer(at: trailer + 8, size: 8), let top = integer(at: trailer + 16, size: 8),
              let tableOffset = integer(at: trailer + 24, size: 8),
              (1...8).contains(offsetSize), (1...8).contains(referenceSize), objectCount > 0, top < objectCount,
              objectCount <= (trailer - tableOffset) / offsetSize, tableOffset >= 8
        else { return "its trailer is malformed" }

        enum References { case malformed, leaf, container(start: Int, count: Int) }
        /// The references an array, set or dictionary holds (a dictionary's keys, then its values).
        func references(of object: Int) -> References {
            guard let offset = integer(at: tableOffset + object * offsetSize, size: offsetSize), offset >= 8, offset < tableOffset else {
                return .malformed
            }
            let marker = bytes[offset]
            let kind = marker >> 4
            guard kind == 0xA || kind == 0xC || kind == 0xD else { return .leaf }
            var count = Int(marker & 0x0F)
            var start = offset + 1
            if count == 0x0F {
                guard start < tableOffset, bytes[start] >> 4 == 1 else { return .malformed }
                let size = 1 << Int(bytes[start] & 0x0F)
                guard let extended = integer(at: start + 1, size: size) else { return .malformed }
                count = extended
                start += 1 + size
            }
            if kind == 0xD { count *= 2 }
            guard count <= (tableOffset - start) / referenceSize else { return .malformed }
            return .container(start: start, count: count)
        }

        // Heights: -1 not seen, -2 on the current path, else the height below the object.
        var height = [Int32](repeating: -1, count: objectCount)
        var path: [(object: Int, start: Int, count: Int, next: Int, height: Int32)] = []
        func enter(_ object: Int) -> String? {
            guard case .container(let start, let count) = references(of: object) else {
                if case .malformed = references(of: object) { return "its objects are malformed" }
                height[object] = 0
                return nil
            }
            height[object] = -2
            path.append((object, start, count, 0, 0))
            if path.count > maximumDepth { return "arrays and dictionaries nest more than \(maximumDepth) deep" }
            return nil
        }
        if let problem = enter(top) { return problem }
        while let last = path.last {
            if last.next == last.count {
                path.removeLast()
                height[last.object] = last.height + 1
                if !path.isEmpty { path[path.count - 1].height = max(path[path.count - 1].height, last.height + 1) }
                continue
            }
            path[path.count - 1].next += 1
            guard let child = integer(at: last.start + last.next * referenceSize, size: referenceSize), child < objectCount else {
                return "its objects are malformed"
            }
            switch height[child] {
            case -2: return "an array or dictionary contains itself"
            case -1: if let problem = enter(child) { return problem }
            case let h: path[path.count - 1].height = max(path[path.count - 1].height, h)
            }
        }
        return nil
    }

    // MARK: - Writing

    /// Replaces the file at `url` with `data`, atomically. `injectedErrno`, for tests, makes the
    /// write fail as if the system returned it.
    static func write(_ data: Data, to url: URL, type: StoreType, injectedErrno: CInt? = nil) throws {
        let path = url.path
        let directory = url.deletingLastPathComponent().path
        var existing = stat()
        let exists = stat(path, &existing) == 0
        if exists && !StoreFiles.isWritable(path) {
            throw ObjectGraphError(.readOnly, "The \(type) store at \(path) is read-only (its permissions forbid writing); nothing was saved", url: url)
        }
        if !exists && !StoreFiles.isFolder(directory) {
            throw ObjectGraphError(.io, "Cannot write the \(type) store at \(path): the folder \(directory) does not exist; nothing was saved", url: url)
        }
        if !StoreFiles.isWritable(directory) {
            throw ObjectGraphError(.readOnly, "Cannot write the \(type) store at \(path): the folder \(directory) is not writable; nothing was saved", url: url)
        }
        let temporary = directory + "/." + url.lastPathComponent + "." + UUID().uuidString + ".tmp"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, exists ? existing.st_mode & 0o7777 : 0o644)
        guard descriptor >= 0 else { throw failure(errno, url: url, type: type, while: "creating a temporary file beside it") }
        var closed = false
        defer {
            if !closed { close(descriptor) }
        }
        do {
            try data.withUnsafeBytes { raw in
                var offset = 0
                while offset < raw.count {
                    let written: Int
                    if let injectedErrno {
                        errno = injectedErrno
                        written = -1
                    } else {
                        written = systemWrite(descriptor, raw.baseAddress! + offset, raw.count - offset)
                    }
                    if written < 0 {
                        if errno == EINTR { continue }
                        throw failure(errno, url: url, type: type, while: "writing")
                    }
                    offset += written
                }
            }
            if exists { fchmod(descriptor, existing.st_mode & 0o7777) }
            if fsync(descriptor) != 0 { throw failure(errno, url: url, type: type, while: "syncing") }
            closed = true
            if close(descriptor) != 0 { throw failure(errno, url: url, type: type, while: "closing") }
            if rename(temporary, path) != 0 { throw failure(errno, url: url, type: type, while: "replacing the file") }
        } catch {
            unlink(temporary)
            throw error
        }
        // Sync the folder, so the rename itself survives a power loss.
        let folder = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if folder >= 0 {
            _ = fsync(folder)
            close(folder)
        }
    }

    private static func failure(_ code: CInt, url: URL, type: StoreType, while doing: String) -> ObjectGraphError {
        let reason = String(cString: strerror(code))
        let path = url.path
        switch code {
        case ENOSPC, EDQUOT:
            return ObjectGraphError(.diskFull, "The disk holding the \(type) store at \(path) is full (\(reason)) while \(doing); nothing was saved", url: url)
        case EACCES, EPERM, EROFS:
            return ObjectGraphError(.readOnly, "The \(type) store at \(path) cannot be written (\(reason)) while \(doing); nothing was saved", url: url)
        default:
            return ObjectGraphError(.io, "Cannot write the \(type) store at \(path) (\(reason)) while \(doing); nothing was saved", url: url)
        }
    }
}
