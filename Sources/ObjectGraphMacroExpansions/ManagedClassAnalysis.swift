import SwiftDiagnostics
import SwiftSyntax

/// What `@Managed` reads from a class: its name, its superclass, and its persistent properties in
/// declaration order, with the mistakes found along the way.
struct ManagedClassAnalysis {
    /// One stored property that becomes an attribute or a relationship.
    struct Property {
        let name: String
        let type: TypeSyntax
        let initializer: ExprSyntax?
        let relationship: AttributeSyntax?
        let attribute: AttributeSyntax?
        /// Position among the class's own persistent properties.
        let position: Int

        /// Whether the initial value is evaluated for each new object rather than being the
        /// attribute's default value in the model (see ``ManagedInitialValue``).
        var isEvaluatedAtInsert: Bool {
            guard let initializer else { return false }
            return !ManagedInitialValue.isModelDefault(initializer, type: type, isRelationship: relationship != nil)
        }

        /// The name of the stored property that keeps the initial value an instance evaluated, until
        /// the object is inserted.
        var initialValueStorageName: String { ManagedInitialValue.storageName(of: name) }
    }

    let className: String
    /// The superclass as written (`ManagedObject` for a root entity).
    let superclassName: String?
    let properties: [Property]
    let diagnostics: [Diagnostic]

    /// Whether the class inherits directly from `ManagedObject` (its entity has no super-entity).
    var isRoot: Bool {
        guard let superclassName else { return true }
        return superclassName == "ManagedObject" || superclassName == "ObjectGraph.ManagedObject"
    }

    /// Reads a declaration; a declaration that is not a class gives a diagnostic and no properties.
    init(_ declaration: some DeclGroupSyntax, attribute node: AttributeSyntax) {
        var diagnostics: [Diagnostic] = []
        guard let classDecl = declaration.as(ClassDeclSyntax.self) else {
            let keyword: String
            if declaration.is(StructDeclSyntax.self) { keyword = "struct" }
            else if declaration.is(EnumDeclSyntax.self) { keyword = "enum" }
            else if declaration.is(ActorDeclSyntax.self) { keyword = "an" }
            else if declaration.is(ProtocolDeclSyntax.self) { keyword = "protocol" }
            else { keyword = "extension" }
            diagnostics.append(Diagnostic(node: node, message: ManagedDiagnostic.notAClass(keyword)))
            self.className = ""
            self.superclassName = nil
            self.properties = []
            self.diagnostics = diagnostics
            return
        }
        let className = classDecl.name.trimmedDescription
        self.className = className
        if let first = classDecl.inheritanceClause?.inheritedTypes.first {
            self.superclassName = first.type.trimmedDescription
        } else {
            self.superclassName = nil
            diagnostics.append(Diagnostic(
                node: classDecl.name, message: ManagedDiagnostic.missingSuperclass(className),
                fixIt: FixIt(
                    message: ManagedFixIt("Inherit from ManagedObject"),
                    changes: [.replace(
                        oldNode: Syntax(classDecl.name),
                        newNode: Syntax(classDecl.name.with(\.tokenKind, .identifier("\(className): ManagedObject"))))])))
        }
        var properties: [Property] = []
        for member in classDecl.memberBlock.members {
            guard let variable = member.decl.as(VariableDeclSyntax.self) else { continue }
            if let property = Self.property(variable, position: properties.count, diagnostics: &diagnostics) {
                properties.append(property)
            }
        }
        self.properties = properties
        self.diagnostics = diagnostics
    }

    /// The persistent property a member declares, or nil (computed, static, transient, or wrong).
    static func property(_ variable: VariableDeclSyntax, position: Int, diagnostics: inout [Diagnostic]) -> Property? {
        let modifiers = variable.modifiers.map(\.name.text)
        if modifiers.contains("static") || modifiers.contains("class") { return nil }
        let transient = variable.attributes.first(named: "Transient")
        let relationship = variable.attributes.first(named: "Relationship")
        let attribute = variable.attributes.first(named: "Attribute")
        guard let binding = variable.bindings.first else { return nil }
        let name = binding.pattern.trimmedDescription
        if let accessors = binding.accessorBlock {
            // Computed properties are not managed; observers cannot coexist with the accessors.
            if case .accessors(let list) = accessors.accessors,
               let observer = list.first(where: { ["willSet", "didSet"].contains($0.accessorSpecifier.text) }), transient == nil {
                diagnostics.append(Diagnostic(node: observer, message: ManagedDiagnostic.observers(name)))
            }
            return nil
        }
        if let transient {
            if relationship != nil || attribute != nil {
                diagnostics.append(Diagnostic(
                    node: transient, message: ManagedDiagnostic.transientConflict(name, relationship != nil ? "Relationship" : "Attribute")))
            }
            return nil
        }
        if variable.bindingSpecifier.tokenKind == .keyword(.let) {
            diagnostics.append(Diagnostic(
                node: variable.bindingSpecifier, message: ManagedDiagnostic.letProperty(name),
                fixIt: FixIt(
                    message: ManagedFixIt("Replace 'let' with 'var'"),
                    changes: [.replace(
                        oldNode: Syntax(variable.bindingSpecifier),
                        newNode: Syntax(variable.bindingSpecifier.with(\.tokenKind, .keyword(.var))))])))
            return nil
        }
        if variable.bindings.count > 1 {
            diagnostics.append(Diagnostic(node: variable, message: ManagedDiagnostic.multipleBindings()))
            return nil
        }
        for modifier in ["lazy", "weak", "unowned"] where modifiers.contains(modifier) {
            diagnostics.append(Diagnostic(node: variable, message: ManagedDiagnostic.unsupportedModifier(name, modifier)))
            return nil
        }
        guard let typeNode = binding.typeAnnotation?.type else {
            diagnostics.append(Diagnostic(node: binding.pattern, message: ManagedDiagnostic.missingType(name)))
            return nil
        }
        let type = typeNode.trimmed
        if !ManagedTypeShape.isStorable(type) {
            diagnostics.append(Diagnostic(node: typeNode, message: ManagedDiagnostic.unsupportedType(name, type.trimmedDescription)))
            return nil
        }
        if let relationship {
            let destination = ManagedTypeShape.destination(of: type)
            if ManagedTypeShape.isKnownValueType(destination) {
                diagnostics.append(Diagnostic(node: relationship, message: ManagedDiagnostic.relationshipToValue(name, type.trimmedDescription)))
                return nil
            }
            if let inverse = relationship.argument(named: "inverse"), inverse.trimmedDescription != "nil" {
                if let keyPath = inverse.as(KeyPathExprSyntax.self), let root = keyPath.root,
                   keyPath.components.count == 1, keyPath.components.first?.component.is(KeyPathPropertyComponentSyntax.self) == true {
                    let rootName = root.trimmedDescription
                    if let destination, rootName != destination {
                        diagnostics.append(Diagnostic(
                            node: inverse, message: ManagedDiagnostic.inverseOnWrongType(name, root: rootName, destination: destination)))
                        return nil
                    }
                } else {
                    diagnostics.append(Diagnostic(node: inverse, message: ManagedDiagnostic.unresolvableInverse(name, destination: destination)))
                    return nil
                }
            }
        }
        return Property(
            name: name, type: type, initializer: binding.initializer?.value.trimmed, relationship: relationship,
            attribute: attribute, position: position)
    }
}

/// Questions about the shape of a property's type that syntax alone can answer.
enum ManagedTypeShape {
    static let valueTypeNames: Set<String> = [
        "Int", "Int8", "Int16", "Int32", "Int64", "UInt8", "UInt16", "UInt32", "Double", "Float", "Decimal", "Bool",
        "String", "Date", "Data", "UUID", "URL", "Swift.Int", "Swift.String", "Foundation.Date",
    ]

    /// Whether the type can be stored at all (it may still fail to type-check as a value).
    static func isStorable(_ type: TypeSyntax) -> Bool {
        if let optional = type.as(OptionalTypeSyntax.self) {
            if optional.wrappedType.is(OptionalTypeSyntax.self) { return false }
            return isStorable(optional.wrappedType)
        }
        if let identifier = type.as(IdentifierTypeSyntax.self) {
            if ["Any", "AnyObject", "Self", "Void", "Never"].contains(identifier.name.text) { return false }
            return identifier.genericArgumentClause?.arguments.allSatisfy { argument in
                guard let type = argument.typeArgument else { return true }
                return isStorable(type)
            } ?? true
        }
        if let array = type.as(ArrayTypeSyntax.self) { return isStorable(array.element) }
        if let dictionary = type.as(DictionaryTypeSyntax.self) { return isStorable(dictionary.key) && isStorable(dictionary.value) }
        if type.is(MemberTypeSyntax.self) { return true }
        // Tuples, functions, existentials, opaque types, metatypes, implicitly unwrapped optionals.
        return false
    }

    /// The destination a relationship of this type would point to: `X` for `X`, `X?`, `Set<X>`, `[X]`.
    static func destination(of type: TypeSyntax) -> String? {
        if let optional = type.as(OptionalTypeSyntax.self) { return destination(of: optional.wrappedType) }
        if let array = type.as(ArrayTypeSyntax.self) { return array.element.trimmedDescription }
        if let identifier = type.as(IdentifierTypeSyntax.self) {
            if let arguments = identifier.genericArgumentClause?.arguments, arguments.count == 1,
               ["Set", "Array", "Optional"].contains(identifier.name.text), let element = arguments.first!.typeArgument {
                return identifier.name.text == "Optional" ? destination(of: element) : element.trimmedDescription
            }
            return identifier.trimmedDescription
        }
        return type.trimmedDescription
    }

    static func isKnownValueType(_ name: String?) -> Bool {
        guard let name else { return false }
        return valueTypeNames.contains(name)
    }

    /// Whether a type is one of the standard library's or Foundation's value types an attribute can
    /// have (`Int`, `String`, `Date`, `UUID`, `Foundation.Date`, ...), whose static members may be
    /// computed (`Date.now`).
    static func isStandardValueType(_ type: TypeSyntax) -> Bool {
        let name: String
        if let member = type.as(MemberTypeSyntax.self), ["Swift", "Foundation"].contains(member.baseType.trimmedDescription) {
            name = member.name.text
        } else if let identifier = type.as(IdentifierTypeSyntax.self), identifier.genericArgumentClause == nil {
            name = identifier.name.text
        } else {
            return false
        }
        return valueTypeNames.contains(name) || ["UInt", "UInt64", "Character", "Substring"].contains(name)
    }

    /// The type an optional wraps (`T` for `T?` and `Optional<T>`), or the type itself.
    static func unwrappingOptional(_ type: TypeSyntax) -> TypeSyntax {
        if let optional = type.as(OptionalTypeSyntax.self) { return unwrappingOptional(optional.wrappedType) }
        if let identifier = type.as(IdentifierTypeSyntax.self), identifier.name.text == "Optional",
           let arguments = identifier.genericArgumentClause?.arguments, arguments.count == 1, let wrapped = arguments.first!.typeArgument {
            return unwrappingOptional(wrapped)
        }
        return type
    }
}

extension AttributeListSyntax {
    /// The first attribute with this name (`@Name` or `@ObjectGraph.Name`).
    func first(named name: String) -> AttributeSyntax? {
        for element in self {
            guard case .attribute(let attribute) = element else { continue }
            let written = attribute.attributeName.trimmedDescription
            if written == name || written == "ObjectGraph.\(name)" { return attribute }
        }
        return nil
    }
}

extension AttributeSyntax {
    /// The argument with this label.
    func argument(named label: String) -> ExprSyntax? {
        guard case .argumentList(let arguments) = self.arguments else { return nil }
        return arguments.first { $0.label?.text == label }?.expression
    }

    /// The arguments as written, for a call with the same labels; empty when there are none.
    var argumentText: String {
        guard case .argumentList(let arguments) = self.arguments else { return "" }
        return arguments.trimmedDescription
    }
}
