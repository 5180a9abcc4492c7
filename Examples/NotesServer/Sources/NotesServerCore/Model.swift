import Foundation
import ObjectGraph

/// A folder of notes, named by clients by its `id`.
@Managed public final class Folder: ManagedObject {
    @Attribute(.unique) public var id: UUID = UUID()
    public var name: String = ""
    @Relationship(deleteRule: .cascade, inverse: \Note.folder) public var notes: Set<Note> = []
}

/// A note, in a folder or in none.
@Managed public final class Note: ManagedObject {
    @Attribute(.unique) public var id: UUID = UUID()
    public var title: String = ""
    public var body: String = ""
    public var updated: Date = Date()
    public var folder: Folder?
}

public enum NotesModel {
    public static func make() -> ManagedObjectModel { ManagedObjectModel(types: [Folder.self, Note.self]) }
}
