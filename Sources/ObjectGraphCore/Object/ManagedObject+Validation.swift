import Foundation

// Validation of an object's values at save (Core Data's validateForInsert / validateForUpdate /
// validateForDelete): every failure is reported, not only the first.

extension ManagedObject {
    func validateProperties() throws {
        var errors: [ObjectGraphError] = []
        for property in entity.properties {
            do { try validate(property) } catch var error as ObjectGraphError {
                // An app's `validateValue(_:forKey:)` may throw without saying which object it refused.
                if error.entityName == nil { error.entityName = entity.name }
                if error.key == nil { error.key = property.name }
                if error.objectID == nil { error.objectID = objectID }
                if error.underlyingErrors.isEmpty { errors.append(error) } else { errors += error.underlyingErrors }
            } catch {
                // Any other error an app's validation throws refuses the value too, and the object's
                // other properties are still checked.
                errors.append(failure(property, "\(error)"))
            }
        }
        if errors.count == 1 { throw errors[0] }
        if errors.count > 1 {
            throw ObjectGraphError(
                .validation, "\(errors.count) validation errors on \(entity.name) \(objectID)", entityName: entity.name,
                objectID: objectID, underlyingErrors: errors)
        }
    }

    private func failure(_ property: PropertyDescription, _ message: String) -> ObjectGraphError {
        ObjectGraphError(.validation, "\(entity.name).\(property.name) of \(objectID): \(message)", entityName: entity.name, key: property.name, objectID: objectID)
    }

    private func validate(_ property: PropertyDescription) throws {
        if let attribute = property as? AttributeDescription {
            let index = attribute.index
            let value = values[index]
            if attribute.attributeType != .transformable, !boxed.isEmpty, let wrong = boxed[index] {
                throw failure(attribute, "\(type(of: wrong)) value \(wrong) is not a valid \(attribute.attributeType) (expected \(attribute.attributeType.swiftTypeName))")
            }
            let isNil = attribute.attributeType == .transformable ? (boxed.isEmpty || boxed[index] == nil) && value.isNull : value.isNull
            if isNil {
                if !attribute.isOptional { throw failure(attribute, "a value is required") }
                return
            }
            if attribute.attributeType == .transformable, let box = boxed[index] {
                if let valueType = attribute.valueType, !Self.isValue(box, of: valueType) {
                    throw failure(attribute, "a \(type(of: box)) is not a \(valueType), the attribute's value type")
                }
                do { _ = try TransformableCoding.encode(box, valueType: attribute.valueType) } catch {
                    throw failure(attribute, "\(type(of: box)) cannot be encoded: \(error)")
                }
            }
            if case .date(let date) = value, date.timeIntervalSinceReferenceDate.isNaN {
                throw failure(attribute, "a date whose time interval is NaN is no point in time")
            }
            if value.isNaN, attribute.minimumValue != nil || attribute.maximumValue != nil {
                let bounds = [attribute.minimumValue.map { "minimum \($0.debugText)" }, attribute.maximumValue.map { "maximum \($0.debugText)" }]
                throw failure(attribute, "NaN is within no bounds (\(bounds.compactMap { $0 }.joined(separator: ", ")))")
            }
            if let minimum = attribute.minimumValue, Value.compare(value, minimum) == .orderedAscending {
                throw failure(attribute, "\(value.debugText) is less than the minimum \(minimum.debugText)")
            }
            if let maximum = attribute.maximumValue, Value.compare(value, maximum) == .orderedDescending {
                throw failure(attribute, "\(value.debugText) is greater than the maximum \(maximum.debugText)")
            }
            if case .string(let s) = value {
                if let minimumLength = attribute.minimumLength, s.count < minimumLength {
                    throw failure(attribute, "\(s.debugDescription) is shorter than \(minimumLength) characters")
                }
                if let maximumLength = attribute.maximumLength, s.count > maximumLength {
                    throw failure(attribute, "\(s.debugDescription) is longer than \(maximumLength) characters")
                }
                if let regex = attribute.compiledRegularExpression,
                   regex.firstMatch(in: s, range: NSRange(s.startIndex..., in: s)) == nil {
                    throw failure(attribute, "\(s.debugDescription) does not match the pattern \(attribute.regularExpression ?? "")")
                }
            }
            // An object of the base class has the default hook, which accepts every value: no value
            // is boxed to ask it. (A subclass may override it, so its objects are always asked.)
            if type(of: self) != ManagedObject.self {
                try validateValue(attributeValue(attribute), forKey: attribute.name)
            }
        } else if let relationship = property as? RelationshipDescription {
            if relationship.isToMany {
                // Only count the destinations when a rule needs the count (loading them costs a read).
                guard !relationship.isOptional || relationship.minCount > 0 || relationship.maxCount > 0 else { return }
                let count = destinationIDs(relationship).count
                if count == 0 && !relationship.isOptional && relationship.minCount == 0 {
                    throw failure(relationship, "at least one destination is required")
                }
                if relationship.minCount > 0 && count < relationship.minCount && !(relationship.isOptional && count == 0) {
                    throw failure(relationship, "has \(count) destinations, fewer than the minimum \(relationship.minCount)")
                }
                if relationship.maxCount > 0 && count > relationship.maxCount {
                    throw failure(relationship, "has \(count) destinations, more than the maximum \(relationship.maxCount)")
                }
            } else if !relationship.isOptional && toOneID(relationship) == nil {
                throw failure(relationship, "a destination is required")
            }
        }
    }

    private static func isValue<T: Codable>(_ value: Any, of type: T.Type) -> Bool { value is T }

    func validateDenyRules() throws {
        var errors: [ObjectGraphError] = []
        for relationship in entity.relationships where relationship.deleteRule == .deny {
            let count = relationship.isToMany ? destinationIDs(relationship).count : (toOneID(relationship) == nil ? 0 : 1)
            if count > 0 {
                errors.append(failure(relationship, "cannot be deleted: its delete rule is deny and it still has \(count) destination\(count == 1 ? "" : "s")"))
            }
        }
        if errors.count == 1 { throw errors[0] }
        if errors.count > 1 {
            throw ObjectGraphError(.validation, "\(errors.count) deny-rule violations on \(objectID)", entityName: entity.name, objectID: objectID, underlyingErrors: errors)
        }
    }
}
