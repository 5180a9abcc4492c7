import Foundation

extension ManagedObjectModel {
    /// Loads a model from Core Data's own files: an Xcode `.xcdatamodeld` (its current version, named
    /// by its `.xccurrentversion`), a single `.xcdatamodel`, a compiled `.momd` bundle (its current
    /// version, named by its `VersionInfo.plist`) or a single compiled `.mom`.
    ///
    /// ```swift
    /// let model = try ManagedObjectModel(contentsOf: URL(fileURLWithPath: "Model.xcdatamodeld"))
    /// model.entityVersionHashesByName   // equal to Core Data's for the same model
    /// model.unsupportedFeatures         // fetched properties, derived attributes, ... (reported, not dropped)
    /// ```
    ///
    /// Entities, attributes of every type (with defaults, validation bounds, transformer names,
    /// external storage, preserve-after-deletion), relationships (to-one, to-many, ordered, inverses,
    /// delete rules, count bounds), inheritance, abstract entities, configurations, uniqueness
    /// constraints, fetch indexes, renaming identifiers, version hash modifiers, version identifiers
    /// and user info are loaded. What ObjectGraph does not support is listed in
    /// ``unsupportedFeatures``. Like ``init(entities:)``, the initializer does not refuse a model
    /// ObjectGraph finds inconsistent: see ``validationErrors``.
    ///
    /// - Throws: ``ObjectGraphError/invalidModel`` naming the file and what is wrong with it (malformed
    ///   XML or property list, an unknown attribute type, a missing current version, ...), or
    ///   ``ObjectGraphError/io`` when a file cannot be read.
    public convenience init(contentsOf url: URL) throws {
        let contents = try CoreDataModelFile.read(url)
        self.init(entities: contents.entities)
        versionIdentifiers = contents.versionIdentifiers
        unsupportedFeatures = contents.unsupportedFeatures
        for (name, entityNames) in contents.configurations.sorted(by: { $0.key < $1.key }) {
            setEntities(entityNames.compactMap { entitiesByName[$0] }, forConfigurationName: name)
        }
    }

    /// Loads the model archived in a compiled-model blob: the content of a `.mom` file.
    ///
    /// - Throws: ``ObjectGraphError/invalidModel`` when the data is not a compiled model; `source`
    ///   names where the data came from in the message.
    convenience init(compiledModelData data: Data, source: URL) throws {
        let contents = try CoreDataModelFile.readCompiled(data, at: source)
        self.init(entities: contents.entities)
        versionIdentifiers = contents.versionIdentifiers
        unsupportedFeatures = contents.unsupportedFeatures
        for (name, entityNames) in contents.configurations.sorted(by: { $0.key < $1.key }) {
            setEntities(entityNames.compactMap { entitiesByName[$0] }, forConfigurationName: name)
        }
    }
}

/// Finds the model file a URL designates and reads it.
enum CoreDataModelFile {
    static func read(_ url: URL) throws -> CoreDataModelContents {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) else {
            throw ObjectGraphError(.io, "Cannot load a model from '\(url.path)': there is no such file", url: url)
        }
        switch (url.pathExtension, isDirectory.boolValue) {
        case ("xcdatamodeld", true):
            return try read(url.appendingPathComponent(currentVersion(ofModelBundle: url)))
        case ("momd", true):
            return try read(url.appendingPathComponent(currentVersion(ofCompiledBundle: url)))
        case ("mom", false):
            return try readCompiled(try contents(of: url), at: url)
        case (_, true) where FileManager.default.fileExists(atPath: url.appendingPathComponent("contents").path):
            let file = url.appendingPathComponent("contents")
            do { return try XcodeModelReader.read(try contents(of: file)) } catch let error as InvalidModelFile {
                throw invalid(file, error.reason)
            }
        case ("xcdatamodel", true):
            throw invalid(url, "the folder has no 'contents' file (models saved by Xcode 3 are not supported)")
        default:
            throw invalid(url, "not a Core Data model (expected an .xcdatamodeld, .xcdatamodel, .momd or .mom)")
        }
    }

    static func readCompiled(_ data: Data, at url: URL) throws -> CoreDataModelContents {
        do { return try CompiledModelReader.read(data) } catch let error as InvalidModelFile {
            throw invalid(url, error.reason)
        }
    }

    static func invalid(_ url: URL, _ reason: String) -> ObjectGraphError {
        ObjectGraphError(.invalidModel, "Cannot load the Core Data model '\(url.path)': \(reason)", url: url)
    }

    static func contents(of url: URL) throws -> Data {
        do { return try Data(contentsOf: url) } catch {
            throw ObjectGraphError(.io, "Cannot read '\(url.path)': \(error.localizedDescription)", url: url)
        }
    }

    /// A dictionary property list (XML or binary), through Foundation (no keyed-archive UIDs in these).
    static func propertyList(at url: URL) throws -> [String: Any] {
        let data = try contents(of: url)
        if let problem = PropertyListInput.encodingProblem(data) { throw invalid(url, "malformed property list: \(problem)") }
        let list: Any
        do { list = try PropertyListSerialization.propertyList(from: data, options: [], format: nil) } catch {
            throw invalid(url, "malformed property list")
        }
        guard let dictionary = list as? [String: Any] else { throw invalid(url, "the property list is not a dictionary") }
        return dictionary
    }

    /// The `.xcdatamodel` folder name an `.xcdatamodeld` names as its current version.
    static func currentVersion(ofModelBundle url: URL) throws -> String {
        let file = url.appendingPathComponent(".xccurrentversion")
        if FileManager.default.fileExists(atPath: file.path) {
            guard let name = try propertyList(at: file)["_XCCurrentVersionName"] as? String, !name.isEmpty else {
                throw invalid(file, "no _XCCurrentVersionName")
            }
            guard FileManager.default.fileExists(atPath: url.appendingPathComponent(name).path) else {
                throw invalid(file, "the current version '\(name)' is not in the bundle")
            }
            return name
        }
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: url.path))?.filter { $0.hasSuffix(".xcdatamodel") } ?? []
        guard versions.count == 1 else {
            throw invalid(url, "no .xccurrentversion, and \(versions.count) versions to choose from")
        }
        return versions[0]
    }

    /// The `.mom` file name a `.momd` names as its current version.
    static func currentVersion(ofCompiledBundle url: URL) throws -> String {
        let file = url.appendingPathComponent("VersionInfo.plist")
        if FileManager.default.fileExists(atPath: file.path) {
            guard let name = try propertyList(at: file)["NSManagedObjectModel_CurrentVersionName"] as? String, !name.isEmpty else {
                throw invalid(file, "no NSManagedObjectModel_CurrentVersionName")
            }
            guard FileManager.default.fileExists(atPath: url.appendingPathComponent(name + ".mom").path) else {
                throw invalid(file, "the current version '\(name).mom' is not in the bundle")
            }
            return name + ".mom"
        }
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: url.path))?.filter { $0.hasSuffix(".mom") } ?? []
        guard versions.count == 1 else {
            throw invalid(url, "no VersionInfo.plist, and \(versions.count) .mom files to choose from")
        }
        return versions[0]
    }
}

/// Why a model file (an Xcode model's `contents`, a compiled model) is not a model ObjectGraph can
/// read, as its reader says it; the caller adds the file's path.
struct InvalidModelFile: Error, CustomStringConvertible {
    let reason: String
    var description: String { reason }
}
