import SwiftSyntax

/// How `@Managed` uses a property's initial value: as the attribute's default value in the model,
/// or as a value evaluated for each new object.
///
/// Swift evaluates a stored property's initial value once per instance, so `UUID()` gives every
/// object its own ID. A model's default value is one value for every object, so only a constant can
/// be one. These initial values are model defaults:
///
/// - `nil`, `true`, `false`, a number (`0`, `-1`, `1.5`), a string without interpolation;
/// - an array or dictionary literal of those (`[]`, `["a", "b"]`, `[:]`);
/// - an enum case written `.name` or `Type.name` (no call), on a property whose type is not a
///   standard value type (`Int`, `String`, `Date`, `UUID`, ...: their static members, like
///   `Date.now`, are computed).
///
/// Any other expression (`UUID()`, `Date()`, `.now`, `[Tag]()`, `"\(x)"`, a function call, a
/// global) is evaluated for each new object and set when the object is inserted. A relationship
/// has no default in a model: on one declared with `@Relationship`, only `nil` and `[]` (what a new
/// object has anyway) are left out.
enum ManagedInitialValue {
    /// Whether `expression`, the initial value of a property of type `type`, is a model default
    /// (true) or is evaluated for each new object (false).
    static func isModelDefault(_ expression: ExprSyntax, type: TypeSyntax, isRelationship: Bool) -> Bool {
        if isRelationship {
            if expression.is(NilLiteralExprSyntax.self) { return true }
            if let array = expression.as(ArrayExprSyntax.self) { return array.elements.isEmpty }
            return false
        }
        if isLiteral(expression) { return true }
        if isEnumCase(expression) {
            return !ManagedTypeShape.isStandardValueType(ManagedTypeShape.unwrappingOptional(type))
        }
        return false
    }

    /// Whether an expression is a literal constant: nil, a Boolean, a number, a string without
    /// interpolation, or an array or dictionary literal of those.
    static func isLiteral(_ expression: ExprSyntax) -> Bool {
        if expression.is(NilLiteralExprSyntax.self) || expression.is(BooleanLiteralExprSyntax.self)
            || expression.is(IntegerLiteralExprSyntax.self) || expression.is(FloatLiteralExprSyntax.self) {
            return true
        }
        if let prefix = expression.as(PrefixOperatorExprSyntax.self) {
            return ["-", "+"].contains(prefix.operator.text)
                && (prefix.expression.is(IntegerLiteralExprSyntax.self) || prefix.expression.is(FloatLiteralExprSyntax.self))
        }
        if let string = expression.as(StringLiteralExprSyntax.self) {
            return string.segments.allSatisfy { $0.is(StringSegmentSyntax.self) }
        }
        if let array = expression.as(ArrayExprSyntax.self) {
            return array.elements.allSatisfy { isLiteral($0.expression) }
        }
        if let dictionary = expression.as(DictionaryExprSyntax.self) {
            switch dictionary.content {
            case .colon: return true
            case .elements(let elements): return elements.allSatisfy { isLiteral($0.key) && isLiteral($0.value) }
            }
        }
        return false
    }

    /// Whether an expression names a static member without calling it: `.draft`, `Status.draft`,
    /// `Note.Status.draft`.
    static func isEnumCase(_ expression: ExprSyntax) -> Bool {
        guard let member = expression.as(MemberAccessExprSyntax.self), member.declName.argumentNames == nil else { return false }
        guard var base = member.base else { return true }
        while let outer = base.as(MemberAccessExprSyntax.self) {
            guard outer.declName.argumentNames == nil, let inner = outer.base else { return false }
            base = inner
        }
        guard let type = base.as(DeclReferenceExprSyntax.self), type.argumentNames == nil else { return false }
        return type.baseName.text.first?.isUppercase == true
    }
}

extension ManagedInitialValue {
    /// The name of the private stored property that keeps a property's initial value, evaluated by
    /// the instance's initializer, until the object is inserted.
    static func storageName(of property: String) -> String {
        "_managedInitialValueOf_" + property.filter { $0 != "`" }
    }
}
