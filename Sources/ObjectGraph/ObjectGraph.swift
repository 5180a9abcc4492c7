import Foundation
// The whole API: `import ObjectGraph` gives the core and the macros declared below.
@_exported import ObjectGraphCore

/// Makes a `ManagedObject` subclass a typed model: its stored properties become the attributes and
/// relationships of an entity, read and written through typed accessors that fault the object in
/// and track changes (Core Data's `@NSManaged` plus the model editor, SwiftData's `@Model`).
///
/// ```swift
/// @Managed final class Note: ManagedObject {
///     var title: String = ""
///     var rank: Int64 = 0
///     var created: Date?
///     var folder: Folder?
///     @Attribute(.unique) var slug: String = ""
///     @Transient var scratch: Int = 0
/// }
/// let model = ManagedObjectModel(types: [Folder.self, Note.self])
/// let note = Note(context: context)
/// note.title = "Hello"
/// ```
///
/// Types: `Int` (stored as `integer64`), `Int16`, `Int32`, `Int64`, `Double`, `Float`, `Decimal`,
/// `Bool`, `String`, `Date`, `Data`, `UUID` and `URL` map to the attribute type of that name; a
/// `RawRepresentable` enum is stored as its raw value; any other `Codable` value is a transformable
/// attribute; a `@Managed` class is a to-one relationship, a `Set` of one a to-many relationship
/// (an `Array`, an ordered one). An optional type makes an optional attribute. A non-optional class
/// without an initial value (`var owner: Person`) is a required to-one relationship: set it before
/// the object is saved. Inverse relationships are declared on one side only, with
/// ``Relationship(deleteRule:inverse:minimumModelCount:maximumModelCount:)``.
///
/// Initial values are evaluated as Swift evaluates them, for each object:
///
/// ```swift
/// @Managed final class Event: ManagedObject {
///     @Attribute(.unique) var id: UUID = UUID()   // a new UUID for each new object
///     var created: Date = .now                    // the time each object is created
///     var title: String = ""                      // the attribute's default value in the model
///     var status: Status = .draft                 // the same (an enum case)
/// }
/// ```
///
/// A literal constant is the attribute's default value in the model (its `defaultValue`):
/// `nil`, `true`, `false`, a number, a string without interpolation, an array or dictionary
/// literal of those, and an enum case written `.name` or `Type.name` on a property whose type is not
/// a standard value type (`Int`, `String`, `Date`, `UUID`, ...). Any other initial value (`UUID()`,
/// `Date()`, `.now`, `[String]()`, a function call, a global) is evaluated by each object's
/// initializer and set when the object is inserted into a context, before its `awakeFromInsert()`
/// runs (whether or not an override calls `super`); the model has no default for the attribute. A
/// value set after the insert replaces it. Objects fetched, faulted in, merged from another
/// context, written by a batch insert or saved into a parent context by a child context keep their
/// stored values: only an insert sets initial values (Swift still evaluates them when it creates
/// such an instance, and the value is dropped, so keep initial values free of side effects).
///
/// A `let` property, a property without an explicit type, a type that cannot be stored, an
/// inverse that is not a key path of the destination, and a class that does not inherit from
/// `ManagedObject` are compile-time errors.
@attached(member, names: named(fetchRequest), named(init), named(_managedSchema), named(_managedPropertyName),
    named(_managedPropertyKeyPaths), arbitrary)
@attached(memberAttribute)
@attached(extension, conformances: ManagedModel)
public macro Managed() = #externalMacro(module: "ObjectGraphMacros", type: "ManagedMacro")

/// Declares a relationship's delete rule, inverse and count bounds.
///
/// ```swift
/// @Relationship(deleteRule: .cascade, inverse: \Note.folder) var notes: Set<Note> = []
/// ```
///
/// The inverse is declared on one side only; the other side is a plain property.
@attached(peer)
public macro Relationship(
    deleteRule: DeleteRule = .nullify, inverse: AnyKeyPath? = nil, minimumModelCount: Int = 0, maximumModelCount: Int = 0
) = #externalMacro(module: "ObjectGraphMacros", type: "ManagedMarkerMacro")

/// Declares options of an attribute: `.unique` values, or the name the attribute had before it was
/// renamed.
///
/// ```swift
/// @Attribute(.unique) var slug: String = ""
/// ```
@attached(peer)
public macro Attribute(_ options: AttributeOption..., originalName: String? = nil) =
    #externalMacro(module: "ObjectGraphMacros", type: "ManagedMarkerMacro")

/// Keeps a property of a `@Managed` class out of the entity: a plain Swift stored property, never
/// saved, not change-tracked, reset in every new instance.
@attached(peer)
public macro Transient() = #externalMacro(module: "ObjectGraphMacros", type: "ManagedMarkerMacro")

/// Attached by `@Managed` to each persistent property: its typed accessors. Not written by hand.
@attached(accessor, names: named(init), named(get), named(set))
public macro _ManagedProperty(index: Int, in owner: ManagedObject.Type? = nil) =
    #externalMacro(module: "ObjectGraphMacros", type: "ManagedPropertyMacro")
