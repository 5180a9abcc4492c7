import Foundation

/// Reads the `contents` XML of an Xcode `.xcdatamodel` (every format Xcode has written since 4.0).
enum XcodeModelReader {
    static func read(_ data: Data) throws -> CoreDataModelContents {
        let document: ModelXMLDocument
        do { document = try ModelXMLDocument(data: data) } catch let error as ModelXMLDocument.Malformed {
            throw InvalidModelFile(reason: "malformed XML, \(error)")
        }
        let root = document.root
        guard root.name == "model" else { throw InvalidModelFile(reason: "the root element is <\(root.name)>, not <model>") }
        var contents = CoreDataModelContents()
        if let identifier = root["userDefinedModelVersionIdentifier"], !identifier.isEmpty {
            contents.versionIdentifiers = [identifier]
        }
        var names: Set<String> = []
        for element in root.children {
            switch element.name {
            case "entity":
                let entity = try readEntity(element, into: &contents)
                guard names.insert(entity.name).inserted else { throw InvalidModelFile(reason: "line \(element.line): entity '\(entity.name)' is declared twice") }
                contents.entities.append(entity)
            case "configuration":
                guard let name = element["name"] else { throw InvalidModelFile(reason: "line \(element.line): a configuration has no name") }
                contents.configurations[name] = element.elements(named: "memberEntity").compactMap { $0["name"] }
            case "fetchRequest":
                contents.report(.fetchRequestTemplate, nil, nil, "\(element["name"] ?? "?") on \(element["entity"] ?? "?")")
            default:
                break  // <elements> (the diagram's layout) and anything newer that carries no schema.
            }
        }
        return contents
    }

    private static func readEntity(_ element: ModelXMLElement, into contents: inout CoreDataModelContents) throws -> EntityDescription {
        guard let name = element["name"], !name.isEmpty else { throw InvalidModelFile(reason: "line \(element.line): an entity has no name") }
        var properties: [PropertyDescription] = []
        var constraints: [[String]] = []
        var indexes: [[String]] = []
        for child in element.children {
            switch child.name {
            case "attribute":
                if let attribute = try readAttribute(child, entity: name, into: &contents) { properties.append(attribute) }
            case "relationship":
                properties.append(try readRelationship(child, entity: name))
            case "fetchedProperty":
                let request = child.elements(named: "fetchRequest").first
                contents.report(.fetchedProperty, name, child["name"], "fetch request on \(request?["entity"] ?? "?")"
                    + (request?["predicateString"].map { " where \($0)" } ?? ""))
            case "compositeAttribute":
                guard let propertyName = child["name"] else { throw InvalidModelFile(reason: "line \(child.line): a composite attribute of '\(name)' has no name") }
                let attribute = AttributeDescription(name: propertyName, attributeType: .transformable, isOptional: child.isYes("optional"), isTransient: child.isYes("transient"))
                attribute.coreDataAttributeTypeCode = 2100
                applyCommon(child, to: attribute)
                properties.append(attribute)
                contents.report(.compositeAttribute, name, propertyName, "elements: " + child.elements(named: "attribute").compactMap { $0["name"] }.joined(separator: ", "))
            case "uniquenessConstraints":
                for constraint in child.elements(named: "uniquenessConstraint") {
                    constraints.append(constraint.elements(named: "constraint").compactMap { $0["value"] })
                }
            case "fetchIndex":
                let elements = child.elements(named: "fetchIndexElement")
                let names = elements.compactMap { $0["property"] }
                for element in elements where element["type"].map({ $0 != "Binary" }) ?? false || element["order"] == "descending" || element["property"] == nil {
                    contents.report(.fetchIndexElement, name, element["property"],
                                    "index '\(child["name"] ?? "")': type \(element["type"] ?? "?"), order \(element["order"] ?? "ascending")")
                }
                if !names.isEmpty { indexes.append(names) }
            case "compoundIndexes":
                for compound in child.elements(named: "compoundIndex") {
                    let names = compound.elements(named: "index").compactMap { $0["value"] }
                    if !names.isEmpty { indexes.append(names) }
                }
            default:
                break  // <userInfo> is read below.
            }
        }
        let entity = EntityDescription(
            name: name, superentity: element["parentEntity"], isAbstract: element.isYes("isAbstract"),
            properties: properties, uniquenessConstraints: constraints, indexes: indexes)
        entity.userInfo = readUserInfo(element)
        entity.renamingIdentifier = element["elementID"]
        entity.versionHashModifier = element["versionHashModifier"]
        entity.managedObjectClassName = element["representedClassName"]
        return entity
    }

    private static func readUserInfo(_ element: ModelXMLElement) -> [String: String] {
        var info: [String: String] = [:]
        for userInfo in element.elements(named: "userInfo") {
            for entry in userInfo.elements(named: "entry") {
                if let key = entry["key"] { info[key] = entry["value"] ?? "" }
            }
        }
        return info
    }

    private static func applyCommon(_ element: ModelXMLElement, to property: PropertyDescription) {
        property.userInfo = readUserInfo(element)
        property.renamingIdentifier = element["elementID"]
        property.versionHashModifier = element["versionHashModifier"]
    }

    private static func readAttribute(
        _ element: ModelXMLElement, entity: String, into contents: inout CoreDataModelContents
    ) throws -> AttributeDescription? {
        guard let name = element["name"], !name.isEmpty else { throw InvalidModelFile(reason: "line \(element.line): an attribute of '\(entity)' has no name") }
        let typeName = element["attributeType"] ?? "Undefined"
        guard let code = CoreDataAttributeTypeName.code(forXcodeName: typeName) else {
            throw InvalidModelFile(reason: "line \(element.line): attribute '\(entity).\(name)' has unknown type '\(typeName)'")
        }
        if code == 2000 {
            contents.report(.objectIDAttribute, entity, name)
            return nil
        }
        var isTransient = element.isYes("transient")
        let type: AttributeType
        if let known = CoreDataAttributeTypeName.attributeType(forCode: code) {
            type = known
        } else {
            type = .transformable
            contents.report(code == 0 ? .undefinedAttributeType : .compositeAttribute, entity, name)
            if code == 0 { isTransient = true }
        }
        let defaultValue = try AttributeValueText.defaultValue(element, type: type, entity: entity, name: name, into: &contents)
        let bounds = AttributeValueText.bounds(element, type: type)
        let attribute = AttributeDescription(
            name: name, attributeType: type, isOptional: element.isYes("optional"), defaultValue: defaultValue,
            isTransient: isTransient, minimum: bounds.minimum, maximum: bounds.maximum,
            minimumLength: bounds.minimumLength, maximumLength: bounds.maximumLength,
            regularExpression: element["regularExpressionString"], isIndexed: element.isYes("indexed"))
        if CoreDataAttributeTypeName.attributeType(forCode: code) == nil { attribute.coreDataAttributeTypeCode = code }
        applyCommon(element, to: attribute)
        attribute.valueTransformerName = element["valueTransformerName"]
        attribute.attributeValueClassName = element["customClassName"]
        attribute.allowsExternalBinaryDataStorage = element.isYes("allowsExternalBinaryDataStorage")
        attribute.preservesValueInHistoryOnDeletion = element.isYes("preserveAfterDeletion")
        if element.isYes("derived") {
            attribute.isReadOnly = true
            let expression = ArchivedExpressionFormat.derivationFormat(xcodeText: element["derivationExpression"] ?? "")
            attribute.derivation = (expression, nil)
            contents.report(.derivedAttribute, entity, name, expression)
        }
        return attribute
    }

    private static func readRelationship(_ element: ModelXMLElement, entity: String) throws -> RelationshipDescription {
        guard let name = element["name"], !name.isEmpty else { throw InvalidModelFile(reason: "line \(element.line): a relationship of '\(entity)' has no name") }
        guard let destination = element["destinationEntity"] else {
            throw InvalidModelFile(reason: "line \(element.line): relationship '\(entity).\(name)' has no destination entity")
        }
        let deleteRule: DeleteRule
        switch element["deletionRule"] ?? "Nullify" {
        case "Nullify": deleteRule = .nullify
        case "Cascade": deleteRule = .cascade
        case "Deny": deleteRule = .deny
        case "No Action": deleteRule = .noAction
        case let other: throw InvalidModelFile(reason: "line \(element.line): relationship '\(entity).\(name)' has unknown delete rule '\(other)'")
        }
        func count(_ attribute: String) throws -> Int {
            guard let text = element[attribute] else { return 0 }
            guard let value = Int(text), value >= 0 else {
                throw InvalidModelFile(reason: "line \(element.line): relationship '\(entity).\(name)' has \(attribute) '\(text)'")
            }
            return value
        }
        let relationship = RelationshipDescription(
            name: name, destinationEntityName: destination, isToMany: element.isYes("toMany"), isOrdered: element.isYes("ordered"),
            inverseName: element["inverseName"], deleteRule: deleteRule, isOptional: element.isYes("optional"),
            minCount: try count("minCount"), maxCount: try count("maxCount"), isTransient: element.isYes("transient"))
        applyCommon(element, to: relationship)
        return relationship
    }
}
