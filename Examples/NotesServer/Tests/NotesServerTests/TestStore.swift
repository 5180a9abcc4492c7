import Foundation
import NotesServerCore
import Testing

/// The stores a test can run on.
enum StoreKind: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case sqlite, postgres
    var testDescription: String { rawValue }
}

/// A configuration, on a free port, for a store of its own: an SQLite file in a new folder, which
/// ``remove()`` removes, or a new database of the throwaway PostgreSQL cluster.
final class TestStore: Sendable {
    let configuration: NotesServerConfiguration
    private let folder: URL?

    init(_ kind: StoreKind) throws {
        switch kind {
        case .sqlite:
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("notesserver-\(UUID().uuidString)")
            self.folder = folder
            configuration = NotesServerConfiguration(sqliteFile: folder.appendingPathComponent("Notes.sqlite"), port: 0)
        case .postgres:
            folder = nil
            configuration = NotesServerConfiguration(postgres: try TestPostgres.database(), port: 0)
        }
    }

    func remove() {
        if let folder { try? FileManager.default.removeItem(at: folder) }
    }
}
