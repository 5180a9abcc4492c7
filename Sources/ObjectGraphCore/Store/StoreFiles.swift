import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// File checks every store type that writes a file shares.
enum StoreFiles {
    /// Whether a file (or folder) can be written: the process may write it, and its permissions
    /// allow writing to someone. A superuser may write a 0444 file, but a store treats it as
    /// read-only, as it would for anyone else.
    static func isWritable(_ path: String) -> Bool {
        var info = stat()
        guard stat(path, &info) == 0 else { return false }
        return access(path, W_OK) == 0 && info.st_mode & 0o222 != 0
    }

    /// Whether a folder exists at `path` (a file there is no folder).
    static func isFolder(_ path: String) -> Bool {
        var isDirectory: ObjCBool = false
        return FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) && isDirectory.boolValue
    }

    /// Refuses a URL a store of `type` cannot open, saying what its URL must be.
    static func require(_ acceptable: Bool, url: URL, for type: StoreType, _ requirement: String) throws {
        guard !acceptable else { return }
        throw ObjectGraphError(.unsupported, "Cannot add a \(type) store at \(url.absoluteString): \(requirement)", url: url)
    }
}
