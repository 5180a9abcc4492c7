import Foundation
import ObjectGraphCore

/// The model the store targets open their files with, and the seeds are written with: every
/// attribute type, a to-one, a many-to-many, an ordered to-many and a sub-entity.
enum FuzzModel {
    static func make() -> ManagedObjectModel {
        ManagedObjectModel(entities: [
            EntityDescription(name: "Folder", properties: [
                .attribute("name", .string, isOptional: false, defaultValue: ""),
                .relationship("items", destination: "Item", toMany: true, inverse: "folder", deleteRule: .cascade),
            ]),
            EntityDescription(name: "Item", properties: [
                .attribute("int16", .integer16),
                .attribute("int32", .integer32),
                .attribute("int64", .integer64, defaultValue: Int64(0), isIndexed: true),
                .attribute("decimal", .decimal),
                .attribute("double", .double),
                .attribute("float", .float),
                .attribute("string", .string),
                .attribute("boolean", .boolean),
                .attribute("date", .date),
                .attribute("data", .binaryData),
                .attribute("uuid", .uuid),
                .attribute("url", .uri),
                .attribute("json", .transformable),
                .relationship("folder", destination: "Folder", inverse: "items"),
                .relationship("tags", destination: "Tag", toMany: true, inverse: "items"),
                .relationship("children", destination: "Item", toMany: true, isOrdered: true, inverse: "parent"),
                .relationship("parent", destination: "Item", inverse: "children"),
            ]),
            EntityDescription(name: "Task", superentity: "Item", properties: [
                .attribute("due", .date),
            ]),
            EntityDescription(name: "Tag", properties: [
                .attribute("name", .string),
                .relationship("items", destination: "Item", toMany: true, inverse: "tags"),
            ]),
        ])
    }

    /// Fills a context with a few objects of every entity, every attribute set on some of them.
    static func populate(_ context: ManagedObjectContext) {
        let folder = context.insertNewObject(forEntityName: "Folder")
        folder.setValue("Inbox", forKey: "name")
        let tags = (0..<2).map { i in
            let tag = context.insertNewObject(forEntityName: "Tag")
            tag.setValue("tag \(i)", forKey: "name")
            return tag
        }
        var items: [ManagedObject] = []
        for i in 0..<3 {
            let item = context.insertNewObject(forEntityName: i == 2 ? "Task" : "Item")
            item.setValue(Int16(-i), forKey: "int16")
            item.setValue(Int32(i * 1000), forKey: "int32")
            item.setValue(Int64(i) << 40, forKey: "int64")
            item.setValue(Decimal(string: "12.5\(i)")!, forKey: "decimal")
            item.setValue(i == 1 ? -0.0 : Double(i) / 3, forKey: "double")
            item.setValue(Float(i) * 1.5, forKey: "float")
            item.setValue(i == 0 ? "héllo ✓" : "item \(i)", forKey: "string")
            item.setValue(i % 2 == 0, forKey: "boolean")
            item.setValue(Date(timeIntervalSinceReferenceDate: Double(i) * 86_400), forKey: "date")
            item.setValue(Data([0, 1, UInt8(i), 0xFF]), forKey: "data")
            item.setValue(UUID(uuidString: "00000000-0000-0000-0000-00000000000\(i)")!, forKey: "uuid")
            item.setValue(URL(string: "https://example.com/\(i)")!, forKey: "url")
            item.setValue(["k": i], forKey: "json")
            item.setValue(folder, forKey: "folder")
            item.setValue(Set(tags.prefix(i)), forKey: "tags")
            if i == 2 { item.setValue(Date(timeIntervalSinceReferenceDate: 1e9), forKey: "due") }
            items.append(item)
        }
        items[0].setValue([items[1], items[2]], forKey: "children")
    }
}
