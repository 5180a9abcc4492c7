import Foundation

/// Core Data's external binary storage (`allowsExternalBinaryDataStorage`), as its SQLite store
/// keeps it: the column of such an attribute holds a marker byte, then either the value itself
/// (`0x01`, a value kept in the row) or the name of a file, ended by a zero byte (`0x02`, a value
/// kept in `.<StoreName>_SUPPORT/_EXTERNAL_DATA/<name>` beside the store), whose content is the
/// value. Core Data reads both; it writes a file for values above about 100 KB, as ObjectGraph does.
struct SQLiteExternalData: Sendable {
    static let inlineMarker: UInt8 = 1
    static let fileMarker: UInt8 = 2
    /// Values larger than this go to a file of their own.
    static let threshold = 100 * 1024

    /// `.<StoreName>_SUPPORT/_EXTERNAL_DATA`, beside the store file.
    let directory: URL

    init(storeURL: URL) {
        let name = storeURL.deletingPathExtension().lastPathComponent
        directory = storeURL.deletingLastPathComponent()
            .appendingPathComponent(".\(name)_SUPPORT", isDirectory: true)
            .appendingPathComponent("_EXTERNAL_DATA", isDirectory: true)
    }

    /// The value a column of an external-storage attribute holds.
    ///
    /// - Throws: ``ObjectGraphError/io`` naming the file when the value's file is missing or
    ///   unreadable, ``ObjectGraphError/notADatabase`` when the reference is malformed.
    func decode(_ bytes: UnsafeRawBufferPointer, attribute: AttributeDescription) throws -> Value {
        guard let marker = bytes.first else { return .data(Data()) }
        switch marker {
        case Self.inlineMarker:
            return .data(Data(bytes.dropFirst()))
        case Self.fileMarker:
            let name = bytes.dropFirst().prefix { $0 != 0 }
            guard !name.isEmpty, let text = String(bytes: name, encoding: .utf8), !text.contains("/"), text != "..", text != "." else {
                throw ObjectGraphError(
                    .notADatabase,
                    "The external data reference of \(Self.describe(attribute)) is malformed (\(bytes.count) bytes); the store was left as it was",
                    entityName: attribute.entity?.name, key: attribute.name)
            }
            let file = directory.appendingPathComponent(text)
            do {
                return .data(try Data(contentsOf: file))
            } catch {
                throw ObjectGraphError(
                    .io, "Cannot read the external data of \(Self.describe(attribute)) at \(file.path): \(error.localizedDescription)",
                    entityName: attribute.entity?.name, key: attribute.name, url: file)
            }
        default:
            // Not a marker: a value written without one (by a store that kept it in the row).
            return .data(Data(bytes))
        }
    }

    /// What to store in the column for `value`: the value behind the inline marker, or, above the
    /// threshold, a reference to a new file the value is written to (synced, before the save's
    /// transaction commits).
    ///
    /// - Throws: ``ObjectGraphError/io`` (or `.diskFull`, `.readOnly`) naming the file when it
    ///   cannot be written; the save then writes nothing.
    func encode(_ value: Value, attribute: AttributeDescription) throws -> Value {
        guard case .data(let data) = value else { return value }
        if data.count <= Self.threshold {
            var stored = Data(capacity: data.count + 1)
            stored.append(Self.inlineMarker)
            stored.append(data)
            return .data(stored)
        }
        let name = UUID().uuidString
        let file = directory.appendingPathComponent(name)
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            try data.write(to: file, options: .atomic)
        } catch {
            throw ObjectGraphError(
                .io, "Cannot write the external data of \(Self.describe(attribute)) to \(file.path): \(error.localizedDescription); nothing was saved",
                entityName: attribute.entity?.name, key: attribute.name, url: file)
        }
        var stored = Data([Self.fileMarker])
        stored.append(contentsOf: Array(name.utf8))
        stored.append(0)
        return .data(stored)
    }

    /// The file a stored column value refers to, if it is a reference.
    static func fileName(inStored value: Value) -> String? {
        guard case .data(let bytes) = value, bytes.first == fileMarker else { return nil }
        let name = bytes.dropFirst().prefix { $0 != 0 }
        return name.isEmpty ? nil : String(bytes: name, encoding: .utf8)
    }

    /// Removes files a save wrote, when the save did not commit.
    func remove(_ names: [String]) {
        for name in names where !name.contains("/") {
            try? FileManager.default.removeItem(at: directory.appendingPathComponent(name))
        }
    }

    private static func describe(_ attribute: AttributeDescription) -> String {
        "'\(attribute.entity?.name ?? "?").\(attribute.name)'"
    }
}

extension AttributeDescription {
    /// Whether the SQLite store keeps the attribute's values as Core Data's external storage does.
    var usesExternalStorage: Bool { allowsExternalBinaryDataStorage && attributeType == .binaryData && !isTransient }
}

/// The external files one save wrote, and those it stopped referring to (the values of rows it
/// deleted or changed): the first are removed if the save does not commit, the second once it has
/// committed and no row refers to them any more. Used by one save, on its writer.
final class ExternalFileChanges {
    var written: [String] = []
    var released: [(table: String, column: String, reference: Data)] = []
}
