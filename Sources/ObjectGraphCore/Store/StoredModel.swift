import Foundation

// What a store file records about the model that wrote it, read without adding the store: the
// source model of a migration is known without the app keeping its old model versions.
//
// - SQLite: the compiled model in `Z_MODELCACHE` (Core Data's, or ObjectGraph's in the same format)
//   and the version hashes in `Z_METADATA` (`NSStoreModelVersionHashes`).
// - Binary and XML: the same compiled model and version hashes, inside the file (`modelCache`,
//   `versionHashes`).

extension PersistentStore {
    /// The model the store at `url` records as the one that wrote it, or nil when the file records
    /// none (an SQLite store Core Data wrote before iOS 9, an atomic store ObjectGraph wrote before
    /// it recorded its model). The file is read and left as it was.
    ///
    /// The model's version hashes are checked against those the store records, so a model returned
    /// is the one that wrote the store.
    ///
    /// - Throws: ``ObjectGraphError/io`` when there is no file or it cannot be read,
    ///   ``ObjectGraphError/notADatabase`` when it is not a store of that type,
    ///   ``ObjectGraphError/invalidModel`` when the recorded model is damaged or does not match the
    ///   recorded hashes, ``ObjectGraphError/unsupported`` for a type that keeps no file.
    static func storedModel(at url: URL, type: StoreType) throws -> ManagedObjectModel? {
        switch type {
        case .sqlite:
            let cache = try SQLiteStore.modelCache(at: url)
            guard let blob = cache.content else { return nil }
            let model = try ManagedObjectModel(compiledModelData: ManagedObjectModel.inflateModelCache(blob, of: url), source: url)
            try model.checkModelCache(against: cache.metadata, of: url)
            return model
        case .binary, .xml:
            let record = try AtomicModelRecord.read(at: url, type: type)
            guard let blob = record.modelCache else { return nil }
            let data: Data
            do { data = try Inflate.decompress(blob) } catch {
                throw CoreDataModelFile.invalid(url, "the model recorded in the \(type) store is not a valid DEFLATE stream")
            }
            let model = try ManagedObjectModel(compiledModelData: data, source: url)
            if let hashes = record.versionHashes, let reason = CoreDataMetadata.incompatibility(of: hashes, with: model) {
                throw CoreDataModelFile.invalid(url, "the model recorded in the \(type) store does not match its version hashes (\(reason))")
            }
            return model
        default:
            throw unsupported(type, url)
        }
    }

    /// The version hash of each entity of the model that wrote the store at `url`, as the store
    /// records them (an SQLite store's `NSStoreModelVersionHashes`), or nil when it records none.
    /// The file is read and left as it was.
    ///
    /// - Throws: ``ObjectGraphError/io`` when there is no file or it cannot be read,
    ///   ``ObjectGraphError/notADatabase`` when it is not a store of that type,
    ///   ``ObjectGraphError/unsupported`` for a type that keeps no file.
    static func storedVersionHashes(at url: URL, type: StoreType) throws -> [String: Data]? {
        switch type {
        case .sqlite:
            guard let plist = try SQLiteStore.modelCache(at: url).metadata else { return nil }
            guard let metadata = CoreDataMetadata.decode(plist) else {
                throw ObjectGraphError(.notADatabase, "The metadata of the store at \(url.path) (Z_METADATA.Z_PLIST) is not a property list; it was left as it was", url: url)
            }
            return CoreDataMetadata.versionHashes(in: metadata)
        case .binary, .xml:
            return try AtomicModelRecord.read(at: url, type: type).versionHashes
        default:
            throw unsupported(type, url)
        }
    }

    private static func unsupported(_ type: StoreType, _ url: URL) -> ObjectGraphError {
        ObjectGraphError(.unsupported, "A \(type) store keeps no file that records its model (asked about \(url.path))", url: url)
    }
}

/// The part of an atomic store's file that records its model, decoded without its rows.
struct AtomicModelRecord: Decodable {
    var modelHash: String
    var versionHashes: [String: Data]?
    var modelCache: Data?

    static func read(at url: URL, type: StoreType) throws -> AtomicModelRecord {
        guard FileManager.default.fileExists(atPath: url.path) else {
            throw ObjectGraphError(.io, "Cannot read the model of the \(type) store at \(url.path): there is no such file", url: url)
        }
        let data: Data
        do { data = try Data(contentsOf: url) } catch {
            throw ObjectGraphError(.io, "Cannot read the \(type) store at \(url.path): \(error)", url: url)
        }
        try AtomicFileIO.checkNesting(of: data, format: type == .xml ? .xml : .binary, url: url, type: type)
        do { return try PropertyListDecoder().decode(AtomicModelRecord.self, from: data) } catch {
            throw ObjectGraphError(.notADatabase, "The file at \(url.path) is not an ObjectGraph \(type) store; it was left as it was", url: url)
        }
    }
}
