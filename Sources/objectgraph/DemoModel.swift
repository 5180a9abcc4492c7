import Foundation
import ObjectGraphCore

// The demo's model, in code, with a class of typed accessors for each entity: Core Data's "manual"
// subclasses (`@NSManaged` properties). An app writes the same classes in three lines each with
// `@Managed` (see the README); the command-line tool does without the macro so that it builds
// without the macro's compiler plugin and swift-syntax, which a first release build would spend
// most of its time compiling.

final class Folder: ManagedObject {
    var name: String {
        get { value(forKey: "name") as? String ?? "" }
        set { setValue(newValue, forKey: "name") }
    }

    var notes: Set<Note> {
        Set((value(forKey: "notes") as? Set<ManagedObject> ?? []).lazy.map { $0 as! Note })
    }
}

final class Note: ManagedObject {
    var title: String {
        get { value(forKey: "title") as? String ?? "" }
        set { setValue(newValue, forKey: "title") }
    }

    var rank: Int64 {
        get { value(forKey: "rank") as? Int64 ?? 0 }
        set { setValue(newValue, forKey: "rank") }
    }

    var created: Date? {
        get { value(forKey: "created") as? Date }
        set { setValue(newValue, forKey: "created") }
    }

    var folder: Folder? {
        get { value(forKey: "folder") as? Folder }
        set { setValue(newValue, forKey: "folder") }
    }
}

enum DemoModel {
    static func make() -> ManagedObjectModel {
        ManagedObjectModel(entities: [
            EntityDescription(name: "Folder", managedObjectClass: Folder.self, properties: [
                .attribute("name", .string, isOptional: false, defaultValue: ""),
                .relationship("notes", destination: "Note", toMany: true, inverse: "folder", deleteRule: .cascade),
            ]),
            EntityDescription(name: "Note", managedObjectClass: Note.self, properties: [
                .attribute("title", .string, isOptional: false, defaultValue: ""),
                .attribute("rank", .integer64, isOptional: false, defaultValue: Int64(0), isIndexed: true),
                .attribute("created", .date),
                .relationship("folder", destination: "Folder", toMany: false, inverse: "notes", deleteRule: .nullify),
            ]),
        ])
    }

    /// A fetch request for an entity's objects, of its class.
    static func request<T: ManagedObject>(_ type: T.Type, where format: String? = nil, _ arguments: Any...) -> FetchRequest<T> {
        let request = FetchRequest<T>(entityName: String(describing: type))
        if let format { request.predicate = FetchPredicate(format: format, argumentArray: arguments) }
        return request
    }
}
