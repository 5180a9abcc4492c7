import Foundation

extension ManagedObjectModel {
    /// Loads the model a Core Data SQLite store keeps inside itself: the compiled model Core Data
    /// caches in the store's `Z_MODELCACHE` table (since iOS 9 and macOS 10.11).
    ///
    /// For a store that came without its app's model files (`.xcdatamodeld` or `.momd`). The file
    /// is read through a read-only connection and left as it was (its `-wal`, when there is one,
    /// is read too).
    ///
    /// ```swift
    /// let url = URL(fileURLWithPath: "App.sqlite")
    /// let model = try ManagedObjectModel(contentsOfStoreAt: url)
    /// let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
    /// try coordinator.addPersistentStore(type: .sqlite, at: url)
    /// ```
    ///
    /// The model's version hashes are checked against the store's `NSStoreModelVersionHashes`, so
    /// a model that loads is the one that wrote the store.
    ///
    /// - Throws: ``ObjectGraphError/io`` when the file cannot be read, ``ObjectGraphError/notADatabase``
    ///   when it is not an SQLite database, and ``ObjectGraphError/invalidModel`` when the store
    ///   holds no cached model (stores written before iOS 9, and stores ObjectGraph wrote), or one
    ///   that is damaged or does not match the store's version hashes.
    public convenience init(contentsOfStoreAt url: URL) throws {
        guard FileManager.default.fileExists(atPath: url.path) else {
            throw ObjectGraphError(.io, "Cannot load the model of the store at '\(url.path)': there is no such file", url: url)
        }
        try SQLiteStore.checkHeader(of: url)
        let (blob, plist) = try SQLiteStore.withReadOnlyConnection(to: url) { rows -> (Data?, Data?) in
            let tables = try rows("SELECT name FROM sqlite_master WHERE type = 'table'").compactMap { row -> String? in
                if case .string(let name) = row[0] { name } else { nil }
            }
            var blob: Data?, plist: Data?
            if tables.contains(SQLiteSchema.modelCacheTable), case .data(let data)? = try rows("SELECT Z_CONTENT FROM \(SQLiteSchema.modelCacheTable) LIMIT 1").first?.first {
                blob = data
            }
            if tables.contains(SQLiteSchema.metadataTable), case .data(let data)? = try rows("SELECT Z_PLIST FROM \(SQLiteSchema.metadataTable) LIMIT 1").first?.first {
                plist = data
            }
            return (blob, plist)
        }
        guard let blob else {
            throw CoreDataModelFile.invalid(url, "the store holds no model (no Z_MODELCACHE: Core Data caches its model in stores it writes since iOS 9)")
        }
        let data: Data
        do { data = try Inflate.decompress(blob) } catch {
            throw CoreDataModelFile.invalid(url, "the model cached in Z_MODELCACHE is not a valid DEFLATE stream")
        }
        try self.init(compiledModelData: data, source: url)
        if let plist, let metadata = SQLiteStoreMetadata.decode(plist), let hashes = SQLiteStoreMetadata.versionHashes(in: metadata),
           let reason = SQLiteStoreMetadata.incompatibility(of: hashes, with: self) {
            throw CoreDataModelFile.invalid(url, "the model cached in Z_MODELCACHE does not match the store's version hashes (\(reason))")
        }
    }
}
