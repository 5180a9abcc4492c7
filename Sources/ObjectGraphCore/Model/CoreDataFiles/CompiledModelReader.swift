import Foundation

/// Reads a compiled model (`.mom`, and the model Core Data caches in a store's `Z_MODELCACHE`): an
/// `NSKeyedArchiver` archive of `NSManagedObjectModel`, walked without Core Data's classes.
enum CompiledModelReader {
    static func read(_ data: Data) throws -> CoreDataModelContents {
        let archive: KeyedArchive
        do { archive = try KeyedArchive(data: data) } catch let error as BinaryPropertyList.Malformed {
            throw InvalidModelFile(reason: "not a compiled model: \(error)")
        } catch let error as KeyedArchive.Malformed {
            throw InvalidModelFile(reason: "not a compiled model: \(error)")
        }
        do {
            return try Reader(archive: archive).readModel()
        } catch let error as KeyedArchive.Malformed {
            throw InvalidModelFile(reason: "damaged archive: \(error)")
        }
    }

    private struct Reader {
        let archive: KeyedArchive

        func readModel() throws -> CoreDataModelContents {
            let model = try archive.object(at: archive.root)
            guard model.className == "NSManagedObjectModel" else {
                throw InvalidModelFile(reason: "the archive holds an \(model.className), not an NSManagedObjectModel")
            }
            var contents = CoreDataModelContents()
            for identifier in try archive.elements(model.fields["NSVersionIdentifiers"]) {
                if let string = try archive.string(identifier), !string.isEmpty { contents.versionIdentifiers.insert(string) }
            }
            var names: Set<String> = []
            for (_, reference) in try archive.entries(model.fields["NSEntities"]) {
                guard let object = try archive.object(reference) else { continue }
                let entity = try readEntity(object, into: &contents)
                guard names.insert(entity.name).inserted else { throw InvalidModelFile(reason: "entity '\(entity.name)' appears twice") }
                contents.entities.append(entity)
            }
            Self.removeInheritedCopies(from: &contents)
            for (name, reference) in try archive.entries(model.fields["NSConfigurations"]) {
                contents.configurations[name] = try archive.elements(reference).compactMap { element in
                    try archive.object(element).flatMap { try archive.string($0.fields["NSEntityName"]) }
                }
            }
            for (name, _) in try archive.entries(model.fields["NSFetchRequestTemplates"]) {
                contents.report(.fetchRequestTemplate, nil, nil, name)
            }
            return contents
        }

        /// A model Core Data cached in a store is flattened: a sub-entity lists copies of the properties
        /// it inherits. ObjectGraph's entities declare only their own, so the copies (and the reports
        /// about them) are dropped.
        static func removeInheritedCopies(from contents: inout CoreDataModelContents) {
            let byName = Dictionary(contents.entities.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
            func inheritedNames(_ entity: EntityDescription) -> Set<String> {
                var names: Set<String> = [], seen: Set<String> = [entity.name]
                var next = entity.superentityName
                while let name = next, seen.insert(name).inserted, let ancestor = byName[name] {
                    names.formUnion(ancestor.declaredProperties.map(\.name))
                    names.formUnion(contents.unsupportedFeatures.filter { $0.entityName == name }.compactMap(\.propertyName))
                    next = ancestor.superentityName
                }
                return names
            }
            let inherited = Dictionary(uniqueKeysWithValues: contents.entities.map { ($0.name, inheritedNames($0)) })
            contents.unsupportedFeatures.removeAll { feature in
                guard let entity = feature.entityName, let property = feature.propertyName else { return false }
                return inherited[entity]?.contains(property) ?? false
            }
            contents.entities = contents.entities.map { entity in
                guard let names = inherited[entity.name], entity.declaredProperties.contains(where: { names.contains($0.name) }) else { return entity }
                let own = EntityDescription(
                    name: entity.name, superentity: entity.superentityName, isAbstract: entity.isAbstract,
                    properties: entity.declaredProperties.filter { !names.contains($0.name) },
                    uniquenessConstraints: entity.uniquenessConstraints, indexes: entity.indexes)
                own.userInfo = entity.userInfo
                own.renamingIdentifier = entity.renamingIdentifier
                own.versionHashModifier = entity.versionHashModifier
                own.managedObjectClassName = entity.managedObjectClassName
                return own
            }
        }

        func bool(_ object: KeyedArchive.Object, _ key: String) throws -> Bool { try archive.value(object.fields[key])?.boolean ?? false }
        func int(_ object: KeyedArchive.Object, _ key: String) throws -> Int64 { try archive.value(object.fields[key])?.integer ?? 0 }

        func readEntity(_ object: KeyedArchive.Object, into contents: inout CoreDataModelContents) throws -> EntityDescription {
            guard object.className == "NSEntityDescription", let name = try archive.string(object.fields["NSEntityName"]) else {
                throw InvalidModelFile(reason: "object \(object.index) (\(object.className)) is not a named entity")
            }
            var properties: [PropertyDescription] = []
            for (_, reference) in try archive.entries(object.fields["NSProperties"]).sorted(by: { $0.key < $1.key }) {
                guard let property = try archive.object(reference) else { continue }
                if let read = try readProperty(property, entity: name, into: &contents) { properties.append(read) }
            }
            let superentity = try archive.object(object.fields["NSSuperentity"]).flatMap { try archive.string($0.fields["NSEntityName"]) }
            var constraints: [[String]] = []
            for tuple in try archive.elements(object.fields["NSUniqueTuples"]) {
                constraints.append(try archive.elements(tuple).compactMap { element in
                    if let name = try? archive.string(element) { return name }
                    return try archive.object(element).flatMap { try archive.string($0.fields["NSPropertyName"]) }
                })
            }
            var indexes: [[String]] = []
            for reference in try archive.elements(object.fields["NSFetchIndexDescriptions"]) {
                guard let index = try archive.object(reference) else { continue }
                let indexName = try archive.string(index.fields["NSIndexName"]) ?? ""
                var names: [String] = []
                for elementReference in try archive.elements(index.fields["NSIndexElements"]) {
                    guard let element = try archive.object(elementReference) else { continue }
                    let propertyName = try archive.string(element.fields["NSPropertyName"])
                    let type = try int(element, "NSFetchIndexElementType")
                    let ascending = try archive.value(element.fields["NSAscending"])?.boolean ?? true
                    if let propertyName { names.append(propertyName) }
                    if type != 0 || !ascending || propertyName == nil {
                        contents.report(.fetchIndexElement, name, propertyName, "index '\(indexName)': type \(type), ascending \(ascending)")
                    }
                }
                // momc and Core Data add a fetch index named after each indexed attribute: that is the
                // attribute's `isIndexed`, not an index of the entity's own.
                let indexedAttributes = properties.compactMap { $0 as? AttributeDescription }.filter(\.isIndexed).map(\.name)
                if names.count == 1, names[0] == indexName, indexedAttributes.contains(indexName) { continue }
                if !names.isEmpty { indexes.append(names) }
            }
            let entity = EntityDescription(
                name: name, superentity: superentity, isAbstract: try bool(object, "NSIsAbstract"), properties: properties,
                uniquenessConstraints: constraints, indexes: indexes)
            entity.userInfo = try userInfo(object)
            entity.renamingIdentifier = try archive.string(object.fields["NSRenamingIdentifier"])
            entity.versionHashModifier = try archive.string(object.fields["NSVersionHashModifier"])
            entity.managedObjectClassName = try archive.string(object.fields["NSClassNameForEntity"])
            return entity
        }

        func userInfo(_ object: KeyedArchive.Object) throws -> [String: String] {
            var info: [String: String] = [:]
            for (key, value) in try archive.entries(object.fields["NSUserInfo"]) {
                switch try archive.value(value) {
                case .string(let string)?: info[key] = string
                case .integer(let number)?: info[key] = String(number)
                case .real(let number)?: info[key] = String(number)
                case .boolean(let flag)?: info[key] = flag ? "YES" : "NO"
                default: info[key] = (try? archive.string(value)) ?? ""
                }
            }
            return info
        }

        /// Flags common to every property: `_P` in archives since iOS 11, separate booleans before.
        func flags(_ object: KeyedArchive.Object) throws -> (optional: Bool, transient: Bool, readOnly: Bool, ordered: Bool) {
            let packed = try int(object, "_P")
            if packed & 1 != 0 {
                return (packed & 2 != 0, packed & 8 != 0, packed & 4 != 0, packed & 0x400 != 0)
            }
            return (try bool(object, "NSIsOptional"), try bool(object, "NSIsTransient"), try bool(object, "NSIsReadOnly"),
                    try bool(object, "NSIsOrdered"))
        }

        func readProperty(_ object: KeyedArchive.Object, entity: String, into contents: inout CoreDataModelContents) throws -> PropertyDescription? {
            guard let name = try archive.string(object.fields["NSPropertyName"]) else {
                throw InvalidModelFile(reason: "a property of entity '\(entity)' has no name")
            }
            let flags = try flags(object)
            let property: PropertyDescription
            switch object.className {
            case "NSAttributeDescription", "NSDerivedAttributeDescription", "NSCompositeAttributeDescription":
                let code = UInt(clamping: try int(object, "NSAttributeType"))
                if code == 2000 {
                    contents.report(.objectIDAttribute, entity, name)
                    return nil
                }
                let knownType = CoreDataAttributeTypeName.attributeType(forCode: code)
                if knownType == nil {
                    contents.report(code == 0 ? .undefinedAttributeType : .compositeAttribute, entity, name, "attribute type \(code)")
                }
                let type = knownType ?? .transformable
                let attributeFlags = try int(object, "NSFlagsKey")
                let defaultValue = try self.defaultValue(object, type: type, entity: entity, name: name, into: &contents)
                let isBounded = type.isNumeric || type == .date
                let attribute = AttributeDescription(
                    name: name, attributeType: type, isOptional: flags.optional, defaultValue: defaultValue,
                    isTransient: flags.transient || code == 0,
                    minimum: isBounded && attributeFlags & 2 != 0 ? try bound(object, "NSMinValueName", type: type) : nil,
                    maximum: isBounded && attributeFlags & 1 != 0 ? try bound(object, "NSMaxValueName", type: type) : nil,
                    minimumLength: type == .string && attributeFlags & 2 != 0 ? Int(try int(object, "NSMinValueName")) : nil,
                    maximumLength: type == .string && attributeFlags & 1 != 0 ? Int(try int(object, "NSMaxValueName")) : nil,
                    isIndexed: try bool(object, "NSIsIndexed"))
                if knownType == nil { attribute.coreDataAttributeTypeCode = code }
                attribute.valueTransformerName = try archive.string(object.fields["NSValueTransformerName"])
                attribute.attributeValueClassName = try archive.string(object.fields["NSAttributeValueClassName"])
                attribute.allowsExternalBinaryDataStorage = attributeFlags & 4 != 0
                attribute.preservesValueInHistoryOnDeletion = attributeFlags & 0x10 != 0
                if object.className == "NSDerivedAttributeDescription" {
                    let expression = try archive.object(object.fields["NSDerivationExpression"])
                        .flatMap { try ArchivedExpressionFormat.expression($0, in: archive) }
                    let filterObject = try archive.object(object.fields["NSFilteringPredicate"])
                    let filter = try filterObject.flatMap { try ArchivedExpressionFormat.predicate($0, in: archive) }
                    if let expression, filterObject == nil || filter != nil {
                        attribute.derivation = (expression, filter)
                        contents.report(.derivedAttribute, entity, name, expression + (filter.map { " where \($0)" } ?? ""))
                    } else {
                        attribute.derivation = (expression ?? "", filter)
                        contents.report(.derivedAttribute, entity, name, "an expression ObjectGraph cannot print; its version hash may differ from Core Data's")
                    }
                }
                property = attribute
            case "NSRelationshipDescription":
                let destination = try archive.object(object.fields["NSDestinationEntity"]).flatMap { try archive.string($0.fields["NSEntityName"]) }
                    ?? archive.string(object.fields["_NSDestinationEntityName"])
                guard let destination else { throw InvalidModelFile(reason: "relationship '\(entity).\(name)' has no destination entity") }
                let inverse = try archive.object(object.fields["NSInverseRelationship"]).flatMap { try archive.string($0.fields["NSPropertyName"]) }
                    ?? archive.string(object.fields["_NSInverseRelationshipName"])
                let maxCount = Int(clamping: try int(object, "NSMaxCount"))
                let deleteRule: DeleteRule
                switch try int(object, "NSDeleteRule") {
                case 0: deleteRule = .noAction
                case 1: deleteRule = .nullify
                case 2: deleteRule = .cascade
                case 3: deleteRule = .deny
                case let other: throw InvalidModelFile(reason: "relationship '\(entity).\(name)' has unknown delete rule \(other)")
                }
                property = RelationshipDescription(
                    name: name, destinationEntityName: destination, isToMany: maxCount != 1, isOrdered: flags.ordered,
                    inverseName: inverse, deleteRule: deleteRule, isOptional: flags.optional,
                    minCount: Int(clamping: try int(object, "NSMinCount")), maxCount: maxCount, isTransient: flags.transient)
            case "NSFetchedPropertyDescription":
                let request = try archive.string(object.fields["_NSFetchRequestEntityName"]) ?? "?"
                contents.report(.fetchedProperty, entity, name, "fetch request on \(request)")
                return nil
            default:
                throw InvalidModelFile(reason: "property '\(entity).\(name)' is an \(object.className), which ObjectGraph does not know")
            }
            property.isReadOnly = flags.readOnly
            property.userInfo = try userInfo(object)
            property.renamingIdentifier = try archive.string(object.fields["NSRenamingIdentifier"])
            property.versionHashModifier = try archive.string(object.fields["NSVersionHashModifier"])
            return property
        }

        func bound(_ object: KeyedArchive.Object, _ key: String, type: AttributeType) throws -> (any Sendable)? {
            guard let value = try archive.value(object.fields[key]) else { return nil }
            switch (type, value) {
            case (.date, .real(let seconds)): return Date(timeIntervalSinceReferenceDate: seconds)
            case (_, .integer(let number)): return AttributeValueText.value(String(number), type: type)
            case (_, .real(let number)): return AttributeValueText.value(String(number), type: type) ?? Double(number)
            default: return nil
            }
        }

        func defaultValue(
            _ object: KeyedArchive.Object, type: AttributeType, entity: String, name: String, into contents: inout CoreDataModelContents
        ) throws -> (any Sendable)? {
            guard let value = try archive.value(object.fields["NSDefaultValue"]) else { return nil }
            let read: (any Sendable)?
            switch value {
            case .string(let string): read = AttributeValueText.value(string, type: type)
            case .integer(let number): read = type == .boolean ? number != 0 : AttributeValueText.value(String(number), type: type)
            case .real(let number):
                read = type == .date ? Date(timeIntervalSinceReferenceDate: number)
                    : type == .float ? Float(number) : type == .double ? number : AttributeValueText.value(String(number), type: type)
            case .boolean(let flag): read = type == .boolean ? flag : nil
            case .data(let data): read = type == .binaryData ? data : nil
            case .dictionary(let fields):
                if case .data(let mantissa)? = fields["NS.mantissa"], mantissa.count <= 16,
                   let exponent = fields["NS.exponent"]?.integer, (-128...127).contains(exponent) {
                    // NSDecimalNumber: a little-endian mantissa, a power of ten, a sign.
                    var magnitude = Decimal(0)
                    for byte in mantissa.reversed() { magnitude = magnitude * 256 + Decimal(Int(byte)) }
                    let scaled = Decimal(sign: fields["NS.negative"]?.boolean == true ? .minus : .plus, exponent: Int(exponent), significand: magnitude)
                    read = type == .decimal ? scaled : AttributeValueText.value("\(scaled)", type: type)
                } else if let seconds = fields["NS.time"], case .real(let interval) = seconds {
                    read = Date(timeIntervalSinceReferenceDate: interval)
                } else if case .data(let bytes)? = fields["NS.uuidbytes"], bytes.count == 16 {
                    read = UUID(uuid: (bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                                       bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]))
                } else if let relative = try? archive.string(fields["NS.relative"]) {
                    read = URL(string: relative)
                } else if let string = try? archive.string(fields["NS.string"]) {
                    read = AttributeValueText.value(string, type: type)
                } else {
                    read = nil
                }
            default: read = nil
            }
            if read == nil { contents.report(.unreadableDefaultValue, entity, name, "\(value) is not a valid \(type) value") }
            return read
        }
    }
}
