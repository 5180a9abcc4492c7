import Foundation

/// The predicate-format text of an archived `NSExpression` or `NSPredicate` (Foundation's
/// `predicateFormat`), for the shapes derived attributes use: key paths, constants, variables,
/// `SELF`, functions, comparisons and compound predicates. Core Data hashes a derived attribute by
/// this text. Shapes it does not know give nil, and the caller reports the hash as approximate.
enum ArchivedExpressionFormat {
    static func expression(_ object: KeyedArchive.Object, in archive: KeyedArchive, depth: Int = 0) throws -> String? {
        guard depth < 32 else { return nil }
        switch object.className {
        case "NSSelfExpression":
            return "SELF"
        case "NSVariableExpression":
            return try archive.string(object.fields["NSVariable"]).map { "$" + $0 }
        case "NSKeyPathSpecifierExpression":
            return try archive.string(object.fields["NSKeyPath"])
        case "NSConstantValueExpression":
            return try constant(archive.value(object.fields["NSConstantValue"]), archive)
        case "NSKeyPathExpression":
            let arguments = try archive.elements(object.fields["NSArguments"])
            guard let argument = try archive.object(arguments.first),
                  let path = try expression(argument, in: archive, depth: depth + 1) else { return nil }
            guard let operand = try archive.object(object.fields["NSOperand"]), operand.className != "NSSelfExpression" else { return path }
            return try expression(operand, in: archive, depth: depth + 1).map { "\($0).\(path)" }
        case "NSFunctionExpression":
            guard let selector = try archive.string(object.fields["NSSelectorName"]) else { return nil }
            var arguments: [String] = []
            for reference in try archive.elements(object.fields["NSArguments"]) {
                guard let argument = try archive.object(reference), let text = try expression(argument, in: archive, depth: depth + 1) else { return nil }
                arguments.append(text)
            }
            let operand = try archive.object(object.fields["NSOperand"])
            if operand == nil || operand?.className == "NSConstantValueExpression" && operand?.fields["NSConstantValueClassName"] != nil {
                return "\(selector)(\(arguments.joined(separator: ", ")))"
            }
            guard let operand, let target = try expression(operand, in: archive, depth: depth + 1) else { return nil }
            return "FUNCTION(\(([target, "\"\(selector)\""] + arguments).joined(separator: ", ")))"
        default:
            return nil
        }
    }

    static func predicate(_ object: KeyedArchive.Object, in archive: KeyedArchive, depth: Int = 0) throws -> String? {
        guard depth < 32 else { return nil }
        switch object.className {
        case "NSComparisonPredicate":
            guard let left = try archive.object(object.fields["NSLeftExpression"]).flatMap({ try expression($0, in: archive, depth: depth + 1) }),
                  let right = try archive.object(object.fields["NSRightExpression"]).flatMap({ try expression($0, in: archive, depth: depth + 1) }),
                  let comparison = try archive.object(object.fields["NSPredicateOperator"])
            else { return nil }
            let operators: [Int64: String] = [0: "<", 1: "<=", 2: ">", 3: ">=", 4: "==", 5: "!=", 6: "MATCHES", 7: "LIKE",
                                              8: "BEGINSWITH", 9: "ENDSWITH", 10: "IN", 99: "CONTAINS", 100: "BETWEEN"]
            guard let type = try archive.value(comparison.fields["NSOperatorType"])?.integer, let symbol = operators[type] else { return nil }
            let modifier = try archive.value(comparison.fields["NSModifier"])?.integer ?? 0
            let prefix = modifier == 1 ? "ALL " : modifier == 2 ? "ANY " : ""
            return "\(prefix)\(left) \(symbol) \(right)"
        case "NSCompoundPredicate":
            let type = try archive.value(object.fields["NSCompoundPredicateType"])?.integer ?? -1
            var parts: [String] = []
            for reference in try archive.elements(object.fields["NSSubpredicates"]) {
                guard let sub = try archive.object(reference), let text = try predicate(sub, in: archive, depth: depth + 1) else { return nil }
                parts.append(sub.className == "NSCompoundPredicate" ? "(\(text))" : text)
            }
            switch type {
            case 0: return parts.count == 1 ? "NOT \(parts[0])" : nil
            case 1: return parts.joined(separator: " AND ")
            case 2: return parts.joined(separator: " OR ")
            default: return nil
            }
        case "NSTruePredicate": return "TRUEPREDICATE"
        case "NSFalsePredicate": return "FALSEPREDICATE"
        default: return nil
        }
    }

    private static func constant(_ value: PropertyListValue?, _ archive: KeyedArchive) throws -> String? {
        switch value {
        case nil: return "nil"
        case .string(let text)?: return "\"\(text)\""
        case .integer(let number)?: return String(number)
        case .real(let number)?: return number.rounded() == number && abs(number) < 1e15 ? String(Int64(number)) : String(number)
        case .boolean(let flag)?: return flag ? "1" : "0"
        default: return nil
        }
    }

    /// Core Data's rewriting of a derivation typed as a key path ending in a collection operator
    /// (`NSDerivedAttributeDescription.derivationExpression`'s setter): `a.@count` becomes
    /// `count:(a)`, `a.@sum` and `a.@total` become `sum:(a)`.
    static func derivationFormat(xcodeText text: String) -> String {
        for (suffix, function) in [(".@count", "count:"), (".@sum", "sum:"), (".@total", "sum:")] where text.hasSuffix(suffix) {
            return "\(function)(\(text.dropLast(suffix.count)))"
        }
        return text
    }
}
