import Foundation

/// The key paths that name one persistent property of a `@Managed` class, as the code the macro
/// generates lists them: from the class (`\Folder.name`) and from an optional of it
/// (`\Folder?.?.name`), the shape the property takes after a hop through an optional to-one
/// relationship (`\Note.folder?.name`).
public struct ManagedPropertyKeyPaths {
    /// The property's name.
    let name: String
    /// The key path from the class: `\Root.property`.
    let keyPath: AnyKeyPath
    /// The key path from an optional of the class: `\Root?.?.property`.
    let optionalKeyPath: AnyKeyPath

    /// The key paths of one property; called by the code `@Managed` generates.
    public init(_ name: String, _ keyPath: AnyKeyPath, _ optionalKeyPath: AnyKeyPath) {
        self.name = name
        self.keyPath = keyPath
        self.optionalKeyPath = optionalKeyPath
    }
}

extension ManagedSchema {
    /// The most to-one relationships a key path may go through (`\Note.folder?.parent?.name` goes
    /// through two).
    static let maximumRelationshipHops = 4

    /// The key a key path of a `@Managed` class names: a stored property's name (`\Note.title` is
    /// `"title"`), or the dotted path to a stored property through to-one relationships
    /// (`\Note.folder?.name` is `"folder.name"`, `\Note.folder?.parent` is `"folder.parent"`).
    ///
    /// Swift cannot split a key path into its components, so the key path is compared with the
    /// ones composed from the tables the macro generates: each to-one relationship's key path with
    /// the destination's (`\Note.folder` + `\Folder?.?.name`), up to ``maximumRelationshipHops``.
    ///
    /// - Returns: nil for a computed or `@Transient` property, a key path through a to-many
    ///   relationship or through more than ``maximumRelationshipHops`` to-one relationships, and a
    ///   key path that goes on past a required to-one reached through an optional one
    ///   (`\Note.folder?.owner.name`: `\Folder?.?.owner` ends by wrapping the owner in an
    ///   optional, which that key path does not do before `.name`, so no composition equals it).
    static func key(for keyPath: AnyKeyPath, in type: any ManagedModel.Type) -> String? {
        if let name = type._managedPropertyName(for: keyPath) { return name }
        let target = ComponentIdentity(keyPath)
        let relationships = toOneDestinations(of: type)
        for property in type._managedPropertyKeyPaths() {
            guard let destination = relationships[property.name] else { continue }
            let hopsLeft = maximumRelationshipHops - 1
            if let key = key(matching: target, through: property.keyPath, named: property.name, to: destination, hopsLeft: hopsLeft) {
                return key
            }
        }
        return nil
    }

    /// The key of the key path `target` identifies among the key paths that continue `prefix` (a
    /// key path to a to-one relationship whose destination is `destination`, and whose key is
    /// `path`) with a property of the destination, or through up to `hopsLeft` more to-one
    /// relationships.
    private static func key(
        matching target: ComponentIdentity, through prefix: AnyKeyPath, named path: String,
        to destination: any ManagedModel.Type, hopsLeft: Int
    ) -> String? {
        let relationships = toOneDestinations(of: destination)
        for property in destination._managedPropertyKeyPaths() {
            // A required relationship's value is the destination, an optional one's (or any after
            // an optional hop) an optional of it: exactly one of the two appends type-checks.
            guard let candidate = prefix.appending(path: property.keyPath) ?? prefix.appending(path: property.optionalKeyPath) else {
                continue
            }
            let key = path + "." + property.name
            if target.matches(candidate) { return key }
            if hopsLeft > 0, let next = relationships[property.name],
               let key = Self.key(matching: target, through: candidate, named: key, to: next, hopsLeft: hopsLeft - 1) {
                return key
            }
        }
        return nil
    }

    /// The destinations of the to-one relationships of a `@Managed` class and its managed
    /// superclasses, by relationship name.
    private static func toOneDestinations(of type: any ManagedModel.Type) -> [String: any ManagedModel.Type] {
        var destinations: [String: any ManagedModel.Type] = [:]
        var schema: ManagedSchema? = type._managedSchema
        while let current = schema {
            for property in current.properties {
                if case .relationship(let destination, isToMany: false, _, _) = property.kind,
                   let managed = destination as? any ManagedModel.Type {
                    destinations[property.name] = managed
                }
            }
            schema = (current.superclass as? any ManagedModel.Type)?._managedSchema
        }
        return destinations
    }
}

/// A key path identified by its type, components and intermediate types: what `==` compares,
/// less the marks of where the key path's reference-writable prefix ends.
///
/// `appending(path:)` does not set those marks as the compiler does when the appended key path is
/// read-only but reaches into a class (`\Folder?.?.name`), so `\Note.folder` + `\Folder?.?.name`
/// walks the same properties as `\Note.folder?.name` but is not `==` to it. A key path's hash
/// combines its type, components and intermediate types without the marks, so two key paths that
/// walk the same properties have the same hash; two that do not could only match by a collision of
/// 64-bit hashes, among the few candidates a model gives.
private struct ComponentIdentity {
    let type: AnyKeyPath.Type
    let hash: Int

    init(_ keyPath: AnyKeyPath) {
        type = Swift.type(of: keyPath)
        hash = keyPath.hashValue
    }

    /// Whether `keyPath` walks the same properties, with the same types, as the identified key path.
    func matches(_ keyPath: AnyKeyPath) -> Bool {
        Swift.type(of: keyPath) == type && keyPath.hashValue == hash
    }
}
