import SwiftSyntax

// What differs between the swift-syntax versions that Package.swift admits (600 up to 603), in one
// place: the macros call these and never test a version themselves. Scripts/check-swift-syntax
// builds and tests the macros against the oldest and the newest version of the range.

extension GenericArgumentSyntax {
    /// The argument when it is a type (`Int` in `Set<Int>`); nil when it is a value (`3` in
    /// `InlineArray<3, Int>`).
    ///
    /// swift-syntax 600 types `argument` as `TypeSyntax`; 601 made it an enum of a type or an
    /// expression (value generics). Both are syntax nodes, so one cast reads either, with no
    /// `#if canImport(SwiftSyntax601)` (601.0.0 itself lacks that marker module).
    var typeArgument: TypeSyntax? {
        Syntax(argument).as(TypeSyntax.self)
    }
}
