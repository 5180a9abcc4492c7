import Foundation
import ObjectGraph

/// The demo's model, as typed classes.
@Managed final class Folder: ManagedObject {
    var name: String = ""
    @Relationship(deleteRule: .cascade, inverse: \Note.folder) var notes: Set<Note> = []
}

@Managed final class Note: ManagedObject {
    var title: String = ""
    @Attribute(.indexed) var rank: Int64 = 0
    var created: Date?
    var folder: Folder?
}

enum DemoModel {
    static func make() -> ManagedObjectModel { ManagedObjectModel(types: [Folder.self, Note.self]) }
}
