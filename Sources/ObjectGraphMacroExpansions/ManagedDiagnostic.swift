import SwiftDiagnostics
import SwiftSyntax

/// A mistake in a `@Managed` class, reported at the offending line with what to write instead.
struct ManagedDiagnostic: DiagnosticMessage, Error {
    let message: String
    let diagnosticID: MessageID
    let severity: DiagnosticSeverity

    init(_ id: String, _ message: String, severity: DiagnosticSeverity = .error) {
        self.message = message
        self.diagnosticID = MessageID(domain: "ObjectGraphMacros", id: id)
        self.severity = severity
    }

    static func notAClass(_ keyword: String) -> Self {
        .init("notAClass", "@Managed applies to a class that inherits from ManagedObject, not to \(keyword == "an" ? "an actor" : "a \(keyword)"); write 'final class Name: ManagedObject'")
    }

    static func missingSuperclass(_ name: String) -> Self {
        .init("missingSuperclass", "@Managed class '\(name)' must inherit from ManagedObject; write 'class \(name): ManagedObject'")
    }

    static func letProperty(_ name: String) -> Self {
        .init("letProperty", "'let' property '\(name)' cannot be managed: its context sets it when the object is fetched, faulted or merged; declare it with 'var', or mark it @Transient to keep it out of the store")
    }

    static func missingType(_ name: String) -> Self {
        .init("missingType", "Managed property '\(name)' needs an explicit type, as in 'var \(name): String = \"\"'")
    }

    static func multipleBindings() -> Self {
        .init("multipleBindings", "Declare one managed property per 'var'")
    }

    static func unsupportedModifier(_ name: String, _ modifier: String) -> Self {
        .init("unsupportedModifier", "Managed property '\(name)' cannot be '\(modifier)': its value lives in the object graph; remove '\(modifier)' or mark it @Transient")
    }

    static func observers(_ name: String) -> Self {
        .init("observers", "Managed property '\(name)' cannot have willSet/didSet observers; override willSave() or observe the context's notifications, or mark it @Transient")
    }

    static func unsupportedType(_ name: String, _ type: String) -> Self {
        .init(
            "unsupportedType",
            "Property '\(name)' has type '\(type)', which ObjectGraph cannot store; use an attribute type (Int, Int16, Int32, Int64, Double, Float, Decimal, Bool, String, Date, Data, UUID, URL), a RawRepresentable enum, a Codable value, a @Managed class (to-one) or a Set or Array of one (to-many), optionally optional; or mark it @Transient")
    }

    static func relationshipToValue(_ name: String, _ type: String) -> Self {
        .init("relationshipToValue", "@Relationship '\(name)' has type '\(type)', which is not a managed object; point it at a @Managed class ('var \(name): Destination?' or 'Set<Destination>'), or remove @Relationship")
    }

    static func unresolvableInverse(_ name: String, destination: String?) -> Self {
        let example = destination.map { "\\\($0).property" } ?? "\\Destination.property"
        return .init(
            "unresolvableInverse",
            "The inverse of relationship '\(name)' must be a key path from its destination to one of its properties, such as '\(example)'; write the root type and a single property name")
    }

    static func inverseOnWrongType(_ name: String, root: String, destination: String) -> Self {
        .init(
            "inverseOnWrongType",
            "The inverse of relationship '\(name)' starts from '\(root)', but '\(name)' points to '\(destination)'; write '\\\(destination).<inverse property>'")
    }

    static func transientConflict(_ name: String, _ other: String) -> Self {
        .init("transientConflict", "@Transient property '\(name)' is not stored, so it cannot also be @\(other); remove one of them")
    }
}

/// A fix-it's description.
struct ManagedFixIt: FixItMessage {
    let message: String
    var fixItID: MessageID { MessageID(domain: "ObjectGraphMacros", id: message) }
    init(_ message: String) { self.message = message }
}
