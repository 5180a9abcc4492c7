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
    /// A PostgreSQL store's URL (`postgres://…`, in a program that registered the PostgreSQL
    /// store) loads the model ObjectGraph records in the store's schema, read in a read-only
    /// transaction.
    ///
    /// - Throws: ``ObjectGraphError/io`` when the file cannot be read, ``ObjectGraphError/notADatabase``
    ///   when it is not an SQLite database, and ``ObjectGraphError/invalidModel`` when the store
    ///   holds no cached model (stores Core Data wrote before iOS 9), or one
    ///   that is damaged or does not match the store's version hashes.
    public convenience init(contentsOfStoreAt url: URL) throws {
        if PostgresStore.names(url) {
            let summary = try PostgresStore.summary(of: url)
            guard let compiled = summary.compiledModel else {
                throw ObjectGraphError(
                    .invalidModel, "Cannot load the model of the store in schema \(summary.schemaName) of \(summary.location): its Z_MODELCACHE holds none", url: url)
            }
            try self.init(compiledModelData: compiled, source: url)
            if let problem = CoreDataMetadata.incompatibility(of: summary.versionHashes, with: self) {
                throw ObjectGraphError(
                    .invalidModel,
                    "Cannot load the model of the store in schema \(summary.schemaName) of \(summary.location): the model in its Z_MODELCACHE does not match its version hashes (\(problem))",
                    url: url)
            }
            return
        }
        let cache = try SQLiteStore.modelCache(at: url)
        guard let blob = cache.content else {
            throw CoreDataModelFile.invalid(url, "the store holds no model (no Z_MODELCACHE: Core Data caches its model in stores it writes since iOS 9)")
        }
        try self.init(compiledModelData: Self.inflateModelCache(blob, of: url), source: url)
        try checkModelCache(against: cache.metadata, of: url)
    }

    /// The compiled model in a `Z_MODELCACHE.Z_CONTENT` blob (a raw DEFLATE stream).
    static func inflateModelCache(_ blob: Data, of url: URL) throws -> Data {
        do { return try Inflate.decompress(blob) } catch {
            throw CoreDataModelFile.invalid(url, "the model cached in Z_MODELCACHE is not a valid DEFLATE stream")
        }
    }

    /// Throws unless the model's version hashes are those the store's `Z_METADATA` records.
    func checkModelCache(against metadataPlist: Data?, of url: URL) throws {
        if let metadataPlist, let metadata = CoreDataMetadata.decode(metadataPlist),
           let hashes = CoreDataMetadata.versionHashes(in: metadata),
           let reason = CoreDataMetadata.incompatibility(of: hashes, with: self) {
            throw CoreDataModelFile.invalid(url, "the model cached in Z_MODELCACHE does not match the store's version hashes (\(reason))")
        }
    }
}

extension SQLiteStore {
    /// What a store file holds about its model: `Z_MODELCACHE.Z_CONTENT` and `Z_METADATA.Z_PLIST`,
    /// each nil when the file has none. The file is read through a read-only connection.
    ///
    /// - Throws: ``ObjectGraphError/io`` when there is no file, ``ObjectGraphError/notADatabase``
    ///   when it is not an SQLite database.
    static func modelCache(at url: URL) throws -> (content: Data?, metadata: Data?) {
        guard FileManager.default.fileExists(atPath: url.path) else {
            throw ObjectGraphError(.io, "Cannot load the model of the store at '\(url.path)': there is no such file", url: url)
        }
        try checkHeader(of: url)
        return try withReadOnlyConnection(to: url) { rows -> (Data?, Data?) in
            let tables = try rows("SELECT name FROM sqlite_master WHERE type = 'table'").compactMap { row -> String? in
                if case .string(let name) = row[0] { name } else { nil }
            }
            var blob: Data?, plist: Data?
            if tables.contains(CoreDataLayout.modelCacheTable), case .data(let data)? = try rows("SELECT Z_CONTENT FROM \(CoreDataLayout.modelCacheTable) LIMIT 1").first?.first {
                blob = data
            }
            if tables.contains(CoreDataLayout.metadataTable), case .data(let data)? = try rows("SELECT Z_PLIST FROM \(CoreDataLayout.metadataTable) LIMIT 1").first?.first {
                plist = data
            }
            return (blob, plist)
        }
    }
}
