import ObjectGraphCore

// The models and rules of ObjectGraph's crash tests, in one place for both sides: the
// `objectgraph _crash` commands, which save by them in child processes that exit, are killed or
// drain, and the tests, which check the stores those processes leave against them.

/// The crash tests' model, and what each save makes of it.
public enum CrashModel {
    public static func make() -> ManagedObjectModel {
        ManagedObjectModel(entities: [
            EntityDescription(name: "Folder", properties: [
                .attribute("name", .string, isOptional: false),
                .attribute("context", .integer64, defaultValue: Int64(0)),
                .attribute("index", .integer64, defaultValue: Int64(0)),
                .attribute("count", .integer64, defaultValue: Int64(0)),
                .relationship("notes", destination: "Note", toMany: true, inverse: "folder", deleteRule: .cascade),
            ]),
            EntityDescription(name: "Note", properties: [
                .attribute("title", .string, isOptional: false, defaultValue: ""),
                .attribute("rank", .integer64, defaultValue: Int64(0)),
                .relationship("folder", destination: "Folder", toMany: false, inverse: "notes", deleteRule: .nullify),
            ]),
            EntityDescription(name: "Tally", properties: [
                .attribute("context", .integer64, defaultValue: Int64(0)),
                .attribute("saves", .integer64, defaultValue: Int64(0)),
                .attribute("folders", .integer64, defaultValue: Int64(0)),
                .attribute("notes", .integer64, defaultValue: Int64(0)),
            ]),
        ])
    }

    /// How many notes save `i` of context `c` gives its folder.
    public static func notes(context c: Int, save i: Int) -> Int { 1 + (c * 7 + i * 3) % 6 }

    /// The folder save `i` deletes (that of save `i - 4`, when `i % 5 == 4`), if any.
    public static func deletes(save i: Int) -> Int? { i % 5 == 4 ? i - 4 : nil }
}

/// The model versions of the migration crash test.
public enum MigrationCrashModel {
    /// V1: Item(name, value).
    public static func v1() -> ManagedObjectModel {
        ManagedObjectModel(entities: [EntityDescription(name: "Item", properties: [
            .attribute("name", .string), .attribute("value", .integer64, defaultValue: Int64(0)),
        ])])
    }

    /// V2: name renamed label, and a new attribute extra (default 7).
    public static func v2() -> ManagedObjectModel {
        let label = PropertyDescription.attribute("label", .string)
        label.renamingIdentifier = "name"
        return ManagedObjectModel(entities: [EntityDescription(name: "Item", properties: [
            label, .attribute("value", .integer64, defaultValue: Int64(0)), .attribute("extra", .integer32, defaultValue: Int32(7)),
        ])])
    }
}
