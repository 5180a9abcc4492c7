import ObjectGraphMacroExpansions
import SwiftCompilerPlugin
import SwiftSyntax
import SwiftSyntaxMacros

// The compiler plug-in that provides ObjectGraph's macros. The expansions live in the library
// ObjectGraphMacroExpansions, which the macro tests import: a test target that depended on this
// macro target would make SwiftPM build the whole test product, and everything it links (GRDB,
// SwiftNIO, the store, the tests), a second time for the host. The plug-in finds a macro by the
// name `#externalMacro` gives (`ObjectGraphMacros.ManagedMacro`), so each type here keeps that
// name and hands its expansions to the library's type of the same name.

@main
struct ObjectGraphMacrosPlugin: CompilerPlugin {
    let providingMacros: [any Macro.Type] = [
        ManagedMacro.self,
        ManagedPropertyMacro.self,
        ManagedMarkerMacro.self,
    ]
}

/// `@Managed` (`ObjectGraphMacroExpansions.ManagedMacro`).
public struct ManagedMacro: MemberMacro, MemberAttributeMacro, ExtensionMacro {
    public static func expansion(
        of node: AttributeSyntax, providingMembersOf declaration: some DeclGroupSyntax,
        conformingTo protocols: [TypeSyntax], in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] {
        try ObjectGraphMacroExpansions.ManagedMacro.expansion(
            of: node, providingMembersOf: declaration, conformingTo: protocols, in: context)
    }

    public static func expansion(
        of node: AttributeSyntax, attachedTo declaration: some DeclGroupSyntax,
        providingAttributesFor member: some DeclSyntaxProtocol, in context: some MacroExpansionContext
    ) throws -> [AttributeSyntax] {
        try ObjectGraphMacroExpansions.ManagedMacro.expansion(
            of: node, attachedTo: declaration, providingAttributesFor: member, in: context)
    }

    public static func expansion(
        of node: AttributeSyntax, attachedTo declaration: some DeclGroupSyntax,
        providingExtensionsOf type: some TypeSyntaxProtocol, conformingTo protocols: [TypeSyntax],
        in context: some MacroExpansionContext
    ) throws -> [ExtensionDeclSyntax] {
        try ObjectGraphMacroExpansions.ManagedMacro.expansion(
            of: node, attachedTo: declaration, providingExtensionsOf: type, conformingTo: protocols, in: context)
    }
}

/// `@_ManagedProperty(index:)` (`ObjectGraphMacroExpansions.ManagedPropertyMacro`).
public struct ManagedPropertyMacro: AccessorMacro {
    public static func expansion(
        of node: AttributeSyntax, providingAccessorsOf declaration: some DeclSyntaxProtocol,
        in context: some MacroExpansionContext
    ) throws -> [AccessorDeclSyntax] {
        try ObjectGraphMacroExpansions.ManagedPropertyMacro.expansion(of: node, providingAccessorsOf: declaration, in: context)
    }
}

/// `@Attribute`, `@Relationship` and `@Transient` (`ObjectGraphMacroExpansions.ManagedMarkerMacro`).
public struct ManagedMarkerMacro: PeerMacro {
    public static func expansion(
        of node: AttributeSyntax, providingPeersOf declaration: some DeclSyntaxProtocol,
        in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] {
        try ObjectGraphMacroExpansions.ManagedMarkerMacro.expansion(of: node, providingPeersOf: declaration, in: context)
    }
}
