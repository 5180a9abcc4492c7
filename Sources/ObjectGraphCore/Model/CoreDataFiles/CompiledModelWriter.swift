import Foundation

/// Writes a model as Core Data compiles it: an `NSKeyedArchiver` archive of `NSManagedObjectModel`,
/// the inverse of ``CompiledModelReader``, in the shape Core Data caches in a store's
/// `Z_MODELCACHE` (Core Data 1344, iOS 17):
///
/// - the model's `NSEntities` is an `NSKnownKeysDictionary1` over the entity names in order;
/// - each entity lists every property it has, inherited ones as copies of their own whose
///   `NSEntity` is the sub-entity (Core Data refuses a property whose entity is another);
/// - each property carries its flags twice, as booleans (`NSIsOptional`, ...) and packed in `_P`
///   (1, optional 2, read-only 4, transient 8, no validation predicates 0x10, no warnings 0x20,
///   no user info 0x40, no version hash modifier 0x80, ordered 0x400), and its renaming
///   identifier (its name when it has none);
/// - an indexed attribute has `NSIsIndexed` and a fetch index named after it; fetch indexes of
///   several properties also appear in `NSCompoundIndexes`.
enum CompiledModelWriter {
    /// The archive of `model`: the content of a `.mom` file.
    ///
    /// - Throws: ``BinaryPropertyListWriter/Unencodable`` only for an archive too large for the format.
    static func archive(_ model: ManagedObjectModel) throws -> Data {
        var writer = Writer(model: model)
        return try writer.write()
    }

    /// What Core Data stores in `Z_MODELCACHE.Z_CONTENT`: the archive, as a raw DEFLATE stream.
    /// Made once per model, and again only when what it records changes (see ``ManagedObjectModel/Derived``).
    static func modelCacheContent(_ model: ManagedObjectModel) throws -> Data {
        let (cached, generation) = model.derived.withLock { ($0.modelCache, $0.modelCacheGeneration) }
        if let cached { return cached }
        let content = Deflate.compress(try archive(model))
        model.derived.withLock { if $0.modelCacheGeneration == generation { $0.modelCache = content } }
        return content
    }

    private struct Writer {
        let model: ManagedObjectModel
        var archive = KeyedArchiveWriter()
        /// The archived object of each entity, by entity name.
        var entityObjects: [String: Int] = [:]
        /// The archived object of each property as each entity has it: "<entity>\u{0}<property>".
        var propertyObjects: [String: Int] = [:]

        init(model: ManagedObjectModel) { self.model = model }

        static func byName(_ a: String, _ b: String) -> Bool { a.utf8.lexicographicallyPrecedes(b.utf8) }

        static func key(_ entity: EntityDescription, _ property: String) -> String { entity.name + "\u{0}" + property }

        mutating func write() throws -> Data {
            let root = archive.reserve()
            let entities = model.entities.sorted { Self.byName($0.name, $1.name) }
            for entity in entities { entityObjects[entity.name] = archive.reserve() }
            for entity in entities {
                for property in entity.properties { propertyObjects[Self.key(entity, property.name)] = archive.reserve() }
            }
            // NSKnownKeysDictionary1: the keys in a mapping strategy, the values in the same order.
            let names = entities.map { archive.string($0.name) }
            let mapping = archive.object("NSKnownKeysMappingStrategy1", [
                "keys": archive.collection("NSArray", names), "length": .integer(Int64(names.count)), "version": .integer(1),
            ])
            let emptyToken = archive.string("__empty_slot_token_4c24_98dc_ac1e_b773__")
            let values = archive.collection("NSArray", entities.map { .uid(entityObjects[$0.name]!) })
            let entitiesObject = archive.object("NSKnownKeysDictionary1", [
                "searchMapping": mapping, "emptyToken": emptyToken, "values": values, "version": .integer(1),
            ])
            for entity in entities { try writeEntity(entity, modelObject: root) }
            var identifiers = model.versionIdentifiers.sorted()
            if identifiers.isEmpty { identifiers = [""] }  // what momc writes for a model without one
            var fields: [String: PropertyListValue] = [
                "NSEntities": entitiesObject,
                "NSFetchRequestTemplates": KeyedArchiveWriter.null,
                "NSVersionIdentifiers": archive.collection("NSSet", identifiers.map { archive.string($0) }),
            ]
            let configurations = model.configurations
            if !configurations.isEmpty {
                var entries: [(key: PropertyListValue, value: PropertyListValue)] = []
                for name in configurations {
                    let members = (model.entities(forConfigurationName: name) ?? []).compactMap { entityObjects[$0.name] }
                    entries.append((archive.string(name), archive.collection("NSSet", members.map { .uid($0) })))
                }
                fields["NSConfigurations"] = archive.dictionary("NSMutableDictionary", entries)
            }
            archive.set(root, className: "NSManagedObjectModel", fields: fields)
            return try archive.encode(root: root)
        }

        mutating func writeEntity(_ entity: EntityDescription, modelObject: Int) throws {
            let object = entityObjects[entity.name]!
            var fields: [String: PropertyListValue] = [
                "NSEntityName": archive.string(entity.name),
                "NSClassNameForEntity": archive.string(entity.managedObjectClassName),
                "NSManagedObjectModel": .uid(modelObject),
                "NSSuperentity": entity.superentity.flatMap { entityObjects[$0.name] }.map { .uid($0) } ?? KeyedArchiveWriter.null,
                "NSUserInfo": userInfo(entity.userInfo),
                "NSVersionHashModifier": archive.string(entity.versionHashModifier),
                "NSRenamingIdentifier": archive.string(entity.renamingIdentifier ?? entity.name),
            ]
            if entity.isAbstract { fields["NSIsAbstract"] = .boolean(true) }
            let subentities = entity.subentities.sorted { Self.byName($0.name, $1.name) }
            fields["NSSubentities"] = archive.dictionary("NSMutableDictionary", subentities.map {
                (archive.string($0.name), .uid(entityObjects[$0.name]!))
            })
            var properties: [(key: PropertyListValue, value: PropertyListValue)] = []
            for property in entity.properties {
                let propertyObject = propertyObjects[Self.key(entity, property.name)]!
                try writeProperty(property, as: propertyObject, in: entity, entityObject: object)
                properties.append((archive.string(property.name), .uid(propertyObject)))
            }
            fields["NSProperties"] = archive.dictionary("NSMutableDictionary", properties)
            if !entity.uniquenessConstraints.isEmpty {
                fields["NSUniqueTuples"] = archive.collection("NSMutableArray", entity.uniquenessConstraints.map { tuple in
                    archive.collection("NSMutableArray", tuple.map { archive.string($0) })
                })
            }
            // Fetch indexes: one per indexed attribute (named after it, as momc names them), then the
            // entity's own, named as Xcode names a new one ("byNameIndex": the model keeps no names).
            var indexes: [(name: String, properties: [String])] = entity.declaredProperties
                .compactMap { $0 as? AttributeDescription }.filter(\.isIndexed).map { ($0.name, [$0.name]) }
            for index in entity.indexes where !index.isEmpty {
                var name = "by" + index.map { $0.prefix(1).uppercased() + $0.dropFirst() }.joined() + "Index"
                while indexes.contains(where: { $0.name == name }) { name += "1" }
                indexes.append((name, index))
            }
            if !indexes.isEmpty {
                var descriptions: [PropertyListValue] = []
                var compound: [PropertyListValue] = []
                for index in indexes {
                    let indexObject = archive.reserve()
                    let elements = index.properties.map { name in
                        archive.object("NSFetchIndexElementDescription", [
                            "NSPropertyName": archive.string(name), "NSFetchIndexElementType": .integer(0),
                            "NSFetchIndexDescription": .uid(indexObject), "NSAscending": .boolean(true),
                        ])
                    }
                    archive.set(indexObject, className: "NSFetchIndexDescription", fields: [
                        "NSIndexName": archive.string(index.name), "NSPartialIndexPredicate": KeyedArchiveWriter.null,
                        "NSIndexElements": archive.collection("NSMutableArray", elements), "NSEntity": .uid(object),
                    ])
                    descriptions.append(.uid(indexObject))
                    if index.properties.count > 1 {
                        compound.append(archive.collection("NSMutableArray", index.properties.map { archive.string($0) }))
                    }
                }
                fields["NSFetchIndexDescriptions"] = archive.collection("NSMutableArray", descriptions)
                fields["NSCompoundIndexes"] = archive.collection("NSMutableArray", compound)
            }
            archive.set(object, className: "NSEntityDescription", fields: fields)
        }

        mutating func userInfo(_ info: [String: String]) -> PropertyListValue {
            let keys = info.keys.sorted()
            return archive.dictionary("NSDictionary", keys.map { (archive.string($0), archive.string(info[$0]!)) })
        }

        mutating func writeProperty(_ property: PropertyDescription, as object: Int, in entity: EntityDescription, entityObject: Int) throws {
            var fields: [String: PropertyListValue] = [
                "NSPropertyName": archive.string(property.name),
                "NSEntity": .uid(entityObject),
                "NSRenamingIdentifier": archive.string(property.renamingIdentifier ?? property.name),
            ]
            var packed: Int64 = 1 | 0x10 | 0x20
            if property.isOptional { fields["NSIsOptional"] = .boolean(true); packed |= 2 }
            if property.isReadOnly { fields["NSIsReadOnly"] = .boolean(true); packed |= 4 }
            if property.isTransient { fields["NSIsTransient"] = .boolean(true); packed |= 8 }
            if property.userInfo.isEmpty { packed |= 0x40 } else { fields["NSUserInfo"] = userInfo(property.userInfo) }
            if let modifier = property.versionHashModifier, !modifier.isEmpty {
                fields["NSVersionHashModifier"] = archive.string(modifier)
            } else {
                packed |= 0x80
            }
            var className: String
            switch property {
            case let attribute as AttributeDescription:
                className = "NSAttributeDescription"
                writeAttribute(attribute, into: &fields)
                if let derivation = attribute.derivation, let expression = expression(derivation.expression) {
                    // A derived attribute (reported as unsupported when its model was loaded) keeps its
                    // derivation, which is its version hash. A filtering predicate is not archived.
                    className = "NSDerivedAttributeDescription"
                    fields["NSDerivationExpression"] = expression
                    fields["NSFilteringPredicate"] = KeyedArchiveWriter.null
                }
            case let relationship as RelationshipDescription:
                className = "NSRelationshipDescription"
                if relationship.isOrdered { fields["NSIsOrdered"] = .boolean(true); packed |= 0x400 }
                writeRelationship(relationship, into: &fields)
            default:
                throw InvalidModelFile(reason: "property '\(entity.name).\(property.name)' is neither an attribute nor a relationship")
            }
            fields["_P"] = .integer(packed)
            archive.set(object, className: className, fields: fields)
        }

        mutating func writeAttribute(_ attribute: AttributeDescription, into fields: inout [String: PropertyListValue]) {
            let code = attribute.coreDataAttributeTypeCode ?? attribute.attributeType.coreDataTypeCode
            fields["NSAttributeType"] = .integer(Int64(code))
            fields["NSAttributeValueClassName"] = archive.string(attribute.attributeValueClassName ?? Self.valueClassName(attribute))
            fields["NSValueTransformerName"] = archive.string(attribute.valueTransformerName)
            fields["NSDefaultValue"] = defaultValue(attribute)
            // Core Data's `isIndexed`: the attribute's own flag, or a fetch index of it alone.
            if attribute.isIndexed || attribute.entity?.indexes.contains([attribute.name]) == true {
                fields["NSIsIndexed"] = .boolean(true)
            }
            var flags: Int64 = 0
            if attribute.allowsExternalBinaryDataStorage { flags |= 4 }
            if attribute.preservesValueInHistoryOnDeletion { flags |= 0x10 }
            // Bounds: NSMaxValueName (flag 1) and NSMinValueName (flag 2), integers for integer
            // types and string lengths, doubles for the others.
            let bounds: (minimum: PropertyListValue?, maximum: PropertyListValue?)
            if attribute.attributeType == .string {
                bounds = (attribute.minimumLength.map { .integer(Int64($0)) }, attribute.maximumLength.map { .integer(Int64($0)) })
            } else {
                bounds = (Self.bound(attribute.minimumValue, type: attribute.attributeType),
                          Self.bound(attribute.maximumValue, type: attribute.attributeType))
            }
            if let maximum = bounds.maximum { fields["NSMaxValueName"] = maximum; flags |= 1 }
            if let minimum = bounds.minimum { fields["NSMinValueName"] = minimum; flags |= 2 }
            fields["NSFlagsKey"] = .integer(flags)
        }

        static func bound(_ value: Value?, type: AttributeType) -> PropertyListValue? {
            guard let value, type.isNumeric || type == .date else { return nil }
            if type.isInteger, case .int(let number) = value { return .integer(number) }
            switch value {
            case .int(let number): return .real(Double(number))
            case .double(let number): return .real(number)
            case .decimal(let number): return .real(NSDecimalNumber(decimal: number).doubleValue)
            case .date(let date): return .real(date.timeIntervalSinceReferenceDate)
            default: return nil
            }
        }

        /// The class Core Data names for an attribute type's values (`NSAttributeValueClassName`).
        static func valueClassName(_ attribute: AttributeDescription) -> String? {
            switch attribute.attributeType {
            case .integer16, .integer32, .integer64, .double, .float, .boolean: "NSNumber"
            case .decimal: "NSDecimalNumber"
            case .string: "NSString"
            case .date: "NSDate"
            case .binaryData: "NSData"
            case .uuid: "NSUUID"
            case .uri: "NSURL"
            case .transformable: nil
            }
        }

        /// The default value as `NSKeyedArchiver` archives it: numbers, strings and data in
        /// `$objects`, dates, decimals, UUIDs and URLs as their Foundation objects. A transformable
        /// attribute's default (an object of the app's own class in Core Data) is not archived.
        mutating func defaultValue(_ attribute: AttributeDescription) -> PropertyListValue {
            guard attribute.attributeType != .transformable else { return KeyedArchiveWriter.null }
            switch attribute.defaultStoredValue {
            case .null, .objectID: return KeyedArchiveWriter.null
            case .int(let number):
                return archive.value(attribute.attributeType == .boolean ? .boolean(number != 0) : .integer(number))
            case .bool(let flag): return archive.value(.boolean(flag))
            case .double(let number): return archive.value(.real(number))
            case .string(let string): return archive.string(string)
            case .data(let data): return archive.value(.data(data))
            case .date(let date): return archive.object("NSDate", ["NS.time": .real(date.timeIntervalSinceReferenceDate)])
            case .uuid(let uuid):
                let bytes = withUnsafeBytes(of: uuid.uuid) { Data($0) }
                return archive.object("NSUUID", ["NS.uuidbytes": .data(bytes)])
            case .url(let url):
                return archive.object("NSURL", ["NS.base": KeyedArchiveWriter.null, "NS.relative": archive.string(url.absoluteString)])
            case .decimal(let decimal):
                return Self.decimalFields(decimal).map { archive.object("NSDecimalNumber", $0) } ?? KeyedArchiveWriter.null
            }
        }

        /// `NSDecimalNumber`'s keyed encoding: a little-endian mantissa of up to 128 bits (in 16-bit
        /// words), a power of ten and a sign. Read from the decimal's digits (trailing zeros go to the
        /// exponent, as in Foundation's compact form); nil for NaN or a mantissa wider than 128 bits.
        static func decimalFields(_ decimal: Decimal) -> [String: PropertyListValue]? {
            var text = Substring(decimal.description)
            let negative = text.hasPrefix("-")
            if negative { text = text.dropFirst() }
            var exponent = 0
            if let e = text.firstIndex(where: { $0 == "e" || $0 == "E" }) {
                guard let power = Int(text[text.index(after: e)...].replacingOccurrences(of: "+", with: "")) else { return nil }
                exponent = power
                text = text[..<e]
            }
            if let point = text.firstIndex(of: ".") {
                exponent -= text.distance(from: point, to: text.endIndex) - 1
                text.remove(at: point)
            }
            guard !text.isEmpty, text.allSatisfy(\.isASCII), text.allSatisfy(\.isNumber) else { return nil }
            var digits = Array(text.utf8.map { Int($0 - 48) }.drop(while: { $0 == 0 }))
            while digits.count > 1, digits.last == 0 { digits.removeLast(); exponent += 1 }
            // The mantissa in base 256, least significant byte first.
            var bytes: [UInt8] = []
            for digit in digits {
                var carry = digit
                for i in bytes.indices {
                    let value = Int(bytes[i]) * 10 + carry
                    bytes[i] = UInt8(value & 0xFF)
                    carry = value >> 8
                }
                while carry > 0 { bytes.append(UInt8(carry & 0xFF)); carry >>= 8 }
            }
            if bytes.count % 2 == 1 { bytes.append(0) }
            guard bytes.count <= 16, (-128...127).contains(exponent) else { return nil }
            return [
                "NS.exponent": .integer(Int64(exponent)),
                "NS.length": .integer(Int64(bytes.count / 2)),
                "NS.negative": .boolean(negative && !bytes.isEmpty),
                "NS.compact": .boolean(true),
                "NS.mantissa.bo": .integer(1),
                "NS.mantissa": .data(Data(bytes)),
            ]
        }

        /// An `NSExpression` archive for the derivations Xcode offers: a key path (`a.b`) or a function
        /// of key paths (`count:(a)`, `now()`); nil for anything else.
        mutating func expression(_ text: String) -> PropertyListValue? {
            let text = text.trimmingCharacters(in: .whitespaces)
            if let open = text.firstIndex(of: "("), text.hasSuffix(")") {
                let selector = String(text[..<open])
                guard !selector.isEmpty, selector.allSatisfy({ $0.isLetter || $0.isNumber || $0 == ":" || $0 == "_" }) else { return nil }
                let inner = text[text.index(after: open)..<text.index(before: text.endIndex)]
                var arguments: [PropertyListValue] = []
                if !inner.trimmingCharacters(in: .whitespaces).isEmpty {
                    for part in inner.split(separator: ",") {
                        guard let argument = expression(String(part)) else { return nil }
                        arguments.append(argument)
                    }
                }
                let operand = archive.object("NSConstantValueExpression", [
                    "NSExpressionType": .integer(0), "NSConstantValueClassName": archive.string("_NSPredicateUtilities"),
                ])
                return archive.object("NSFunctionExpression", [
                    "NSOperand": operand, "NSSelectorName": archive.string(selector), "NSExpressionType": .integer(4),
                    "NSArguments": archive.collection("NSArray", arguments),
                ])
            }
            guard !text.isEmpty, text.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "." || $0 == "_" || $0 == "@" }) else { return nil }
            let specifier = archive.object("NSKeyPathSpecifierExpression", ["NSExpressionType": .integer(10), "NSKeyPath": archive.string(text)])
            return archive.object("NSKeyPathExpression", [
                "NSOperand": archive.object("NSSelfExpression", ["NSExpressionType": .integer(1)]),
                "NSSelectorName": archive.string("valueForKey:"), "NSExpressionType": .integer(3),
                "NSArguments": archive.collection("NSMutableArray", [specifier]),
            ])
        }

        mutating func writeRelationship(_ relationship: RelationshipDescription, into fields: inout [String: PropertyListValue]) {
            let destination = relationship.destinationEntity
            fields["NSDestinationEntity"] = destination.flatMap { entityObjects[$0.name] }.map { .uid($0) } ?? KeyedArchiveWriter.null
            fields["_NSDestinationEntityName"] = archive.string(relationship.destinationEntityName)
            // The inverse as the destination entity has it (a copy, when the destination inherits it).
            let inverse = relationship.inverseRelationship.flatMap { inverse in
                destination.flatMap { propertyObjects[Self.key($0, inverse.name)] }
            }
            fields["NSInverseRelationship"] = inverse.map { .uid($0) } ?? KeyedArchiveWriter.null
            fields["_NSInverseRelationshipName"] = archive.string(relationship.inverseName)
            let rule: Int64 = switch relationship.deleteRule {
            case .noAction: 0
            case .nullify: 1
            case .cascade: 2
            case .deny: 3
            }
            fields["NSDeleteRule"] = .integer(rule)
            fields["NSMaxCount"] = .integer(Int64(relationship.isToMany ? relationship.maxCount : 1))
            fields["NSMinCount"] = .integer(Int64(relationship.minCount))
        }
    }
}
