import Foundation

// Arithmetic and subqueries in memory, with the answers SQLite's operators give, so that a
// predicate selects the same objects from the store and over pending changes.

extension PredicateArithmetic {
    /// A numeric operand: an integer (integers and booleans) or a real (doubles, decimals, dates).
    private enum Number {
        case integer(Int64)
        case real(Double)

        /// Nil for what is not a number, NaN included: SQLite binds NaN as NULL, so arithmetic
        /// with it gives nil.
        init?(_ value: Value) {
            if value.isNaN { return nil }
            switch value {
            case .int(let v): self = .integer(v)
            case .bool(let v): self = .integer(v ? 1 : 0)
            case .double(let v): self = .real(v)
            case .decimal(let v): self = .real(NSDecimalNumber(decimal: v).doubleValue)
            case .date(let v): self = .real(v.timeIntervalSinceReferenceDate)
            default: return nil
            }
        }

        var real: Double {
            switch self {
            case .integer(let v): Double(v)
            case .real(let v): v
            }
        }

        /// SQLite's conversion of a real to an integer: truncation, clamped to the range.
        var integer: Int64 {
            switch self {
            case .integer(let v): return v
            case .real(let v):
                if v.isNaN { return 0 }
                if v <= -9.223372036854775808e18 { return .min }
                if v >= 9.223372036854775807e18 { return .max }
                return Int64(v)
            }
        }
    }

    /// `x op y` as SQLite computes it: nil when either is nil (or not a number); integers give an
    /// integer, or a real when the result overflows; division and remainder by zero give nil; a
    /// result that is not a number gives nil.
    func apply(_ x: Value, _ y: Value) -> Value {
        guard let a = Number(x), let b = Number(y) else { return .null }
        if case .integer(let i) = a, case .integer(let j) = b {
            switch self {
            case .add:
                let (r, overflow) = i.addingReportingOverflow(j)
                return overflow ? .double(Double(i) + Double(j)) : .int(r)
            case .subtract:
                let (r, overflow) = i.subtractingReportingOverflow(j)
                return overflow ? .double(Double(i) - Double(j)) : .int(r)
            case .multiply:
                let (r, overflow) = i.multipliedReportingOverflow(by: j)
                return overflow ? .double(Double(i) * Double(j)) : .int(r)
            case .divide:
                if j == 0 { return .null }
                if j == -1 && i == .min { return .double(-Double(i)) }
                return .int(i / j)
            case .remainder:
                if j == 0 { return .null }
                return .int(j == -1 ? 0 : i % j)
            }
        }
        let result: Double
        switch self {
        case .add: result = a.real + b.real
        case .subtract: result = a.real - b.real
        case .multiply: result = a.real * b.real
        case .divide:
            if b.real == 0 { return .null }
            result = a.real / b.real
        case .remainder:
            // SQLite's `%` truncates real operands to integers and gives a real.
            let (i, j) = (a.integer, b.integer)
            if j == 0 { return .null }
            result = Double(j == -1 ? 0 : i % j)
        }
        return result.isNaN ? .null : .double(result)
    }

    // MARK: Checks shared by evaluation and SQL generation

    /// Throws unless `value` is nil or a number.
    static func checkOperand(_ value: Value) throws {
        if value.isNull || value.isNaN || Number(value) != nil { return }
        throw notANumber("the value \(value.predicateLiteral)")
    }

    /// Throws unless `path` gives one number per object: a numeric attribute or a count.
    static func checkOperand(_ path: AnalyzedKeyPath) throws {
        let name = "'\(path.components.isEmpty ? "SELF" : path.components.joined(separator: "."))' of entity '\(path.entity.name)'"
        if path.isCollection { throw notANumber("\(name), a to-many key path,", entity: path.entity) }
        if path.isCount { return }
        guard let attribute = path.finalAttribute else { throw notANumber("\(name), a relationship,", entity: path.entity) }
        switch attribute.attributeType {
        case .integer16, .integer32, .integer64, .decimal, .double, .float, .boolean, .date: return
        default: throw notANumber("\(name), a \(attribute.attributeType) attribute,", entity: path.entity)
        }
    }

    static func notANumber(_ what: String, entity: EntityDescription? = nil) -> ObjectGraphError {
        ObjectGraphError(.invalidFetchRequest, "Arithmetic needs numbers, and \(what) is not one", entityName: entity?.name)
    }

    /// Throws unless `path` ends with a to-many relationship (the elements a SUBQUERY ranges over).
    static func checkSubqueryCollection(_ path: AnalyzedKeyPath) throws {
        guard let index = path.toManyIndex, index == path.steps.count - 1, !path.isCount else {
            throw ObjectGraphError(
                .invalidFetchRequest,
                "The collection of a SUBQUERY must be a key path ending with a to-many relationship, not '\(path.components.joined(separator: "."))' of entity '\(path.entity.name)'",
                entityName: path.entity.name, key: path.components.joined(separator: "."))
        }
    }

    static func undefinedVariable(_ name: String) -> ObjectGraphError {
        ObjectGraphError(.invalidFetchRequest, "Variable '$\(name)' is not defined by an enclosing SUBQUERY")
    }
}
