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
}
