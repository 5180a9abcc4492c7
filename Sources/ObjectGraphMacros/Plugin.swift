import SwiftCompilerPlugin
import SwiftSyntaxMacros

/// The compiler plug-in that provides ObjectGraph's macros.
@main
struct ObjectGraphMacrosPlugin: CompilerPlugin {
    let providingMacros: [any Macro.Type] = [
        ManagedMacro.self,
        ManagedPropertyMacro.self,
        ManagedMarkerMacro.self,
    ]
}
