import Foundation
import GRDB
import Testing

/// The real Core Data files in `shared/coredata-fixtures` beside the repository, or in the folder
/// `OBJECTGRAPH_FIXTURES` names (never committed here). A test that needs them carries the
/// ``needsCoreDataFixtures`` trait: skipped where they are missing, it fails there, with a message
/// saying where they were looked for, when `OBJECTGRAPH_REQUIRE_FIXTURES=1` (CI): it never passes
/// without them.
enum CoreDataFixtures {
    struct Missing: Error, CustomStringConvertible {
        let searched: [String]
        var description: String {
            "The Core Data fixtures (shared/coredata-fixtures) were not found; looked in: " + searched.joined(separator: ", ")
        }
    }

    /// The fixtures folder: the one `OBJECTGRAPH_FIXTURES` names, else the one found by walking up
    /// from this file to a folder that has `shared/coredata-fixtures`.
    static func root(filePath: String = #filePath) throws -> URL {
        if let given = ProcessInfo.processInfo.environment[TestRequirements.fixturesVariable] {
            let folder = URL(fileURLWithPath: given)
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: folder.path, isDirectory: &isDirectory), isDirectory.boolValue else {
                throw Missing(searched: [folder.path + " (\(TestRequirements.fixturesVariable))"])
            }
            return folder
        }
        var directory = URL(fileURLWithPath: filePath).deletingLastPathComponent()
        var searched: [String] = []
        while directory.path != "/" {
            let candidate = directory.appendingPathComponent("shared/coredata-fixtures")
            searched.append(candidate.path)
            if FileManager.default.fileExists(atPath: candidate.appendingPathComponent("README.md").path) { return candidate }
            directory = directory.deletingLastPathComponent()
        }
        throw Missing(searched: searched)
    }

    static func url(_ relativePath: String) throws -> URL {
        let url = try root().appendingPathComponent(relativePath)
        guard FileManager.default.fileExists(atPath: url.path) else { throw Missing(searched: [url.path]) }
        return url
    }

    static func contents(of directory: URL) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted()
    }

    /// The fixture folders that hold an `.xcdatamodeld`, with its name.
    static func modelBundles() throws -> [(fixture: String, bundle: URL)] {
        let root = try root()
        return try contents(of: root).compactMap { fixture -> (String, URL)? in
            let folder = root.appendingPathComponent(fixture)
            guard let bundle = try? contents(of: folder).first(where: { $0.hasSuffix(".xcdatamodeld") }) else { return nil }
            return (fixture, folder.appendingPathComponent(bundle))
        }
    }

    /// Every version folder of an `.xcdatamodeld`.
    static func versions(of bundle: URL) throws -> [URL] {
        try contents(of: bundle).filter { $0.hasSuffix(".xcdatamodel") }.map { bundle.appendingPathComponent($0) }
    }

    /// Every store file of every fixture (`stores/*.sqlite`).
    static func stores() throws -> [(fixture: String, store: URL)] {
        let root = try root()
        return try contents(of: root).flatMap { fixture -> [(String, URL)] in
            let folder = root.appendingPathComponent(fixture).appendingPathComponent("stores")
            guard let files = try? contents(of: folder) else { return [] }
            return files.filter { $0.hasSuffix(".sqlite") }.map { (fixture, folder.appendingPathComponent($0)) }
        }
    }

    /// Copies a store (with its `-wal` and `-shm` when present) into a new temporary folder: SQLite
    /// writes beside a store it opens, and the fixtures must stay as Core Data wrote them.
    static func copyOfStore(_ store: URL) throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("coredata-fixture-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        for suffix in ["", "-wal", "-shm"] {
            let source = URL(fileURLWithPath: store.path + suffix)
            if FileManager.default.fileExists(atPath: source.path) {
                let copy = folder.appendingPathComponent(source.lastPathComponent)
                try FileManager.default.copyItem(at: source, to: copy)
                // The fixtures are read-only files; their copies are the tests' to write.
                try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: copy.path)
            }
        }
        return folder.appendingPathComponent(store.lastPathComponent)
    }

    /// A store's metadata (`Z_METADATA.Z_PLIST`), decoded by Foundation, read from a copy of the store.
    static func metadata(ofStore store: URL) throws -> [String: Any] {
        try withCopy(of: store) { database in
            let blob = try #require(try Data.fetchOne(database, sql: "SELECT Z_PLIST FROM Z_METADATA"))
            let list = try PropertyListSerialization.propertyList(from: blob, options: [], format: nil)
            return try #require(list as? [String: Any])
        }
    }

    /// The store's `NSStoreModelVersionHashes`.
    static func versionHashes(ofStore store: URL) throws -> [String: Data] {
        let hashes = try #require(try metadata(ofStore: store)["NSStoreModelVersionHashes"] as? [String: Any])
        return try hashes.mapValues { try #require($0 as? Data) }
    }

    /// Runs `body` on a database connection to a temporary copy of `store`, then deletes the copy.
    static func withCopy<T>(of store: URL, _ body: (Database) throws -> T) throws -> T {
        let copy = try copyOfStore(store)
        defer { try? FileManager.default.removeItem(at: copy.deletingLastPathComponent()) }
        let queue = try DatabaseQueue(path: copy.path)
        defer { try? queue.close() }
        return try queue.read(body)
    }
}
