import Foundation

extension CoreDataLayout {
    /// Core Data's names for a model's columns and join tables, given its entity numbers: each
    /// step names one kind, in the order Core Data does (a later name that is taken gets a number).
    struct Naming {
        let model: ManagedObjectModel
        /// `Z_ENT` by entity code.
        let numbers: [Int]
        var columns: [ObjectIdentifier: String] = [:]
        var toOneEntityColumns: [ObjectIdentifier: String] = [:]
        var toMany: [ObjectIdentifier: ToManyStorage] = [:]
        var extra: [String: [String]] = [:]
        var joins: [(table: String, first: String, second: String, orders: [String])] = []
        private var usedInTable: [String: Set<String>] = [:]
        private var joinColumnsUsed: Set<String> = []

        init(model: ManagedObjectModel, numbers: [Int]) {
            self.model = model
            self.numbers = numbers
        }

        private func number(_ entity: EntityDescription) -> Int { numbers[entity.entityCode] }

        /// `base`, or `base` with a number when the table has a column of that name already.
        private mutating func unique(_ base: String, in table: String) -> String {
            var taken = usedInTable[table, default: [CoreDataLayout.primaryKeyColumn, CoreDataLayout.entityColumn, CoreDataLayout.versionColumn]]
            var name = base, n = 0
            while taken.contains(name) { n += 1; name = base + String(n) }
            taken.insert(name)
            usedInTable[table] = taken
            return name
        }

        /// `base`, or `base` with a number when a join table has a column of that name already.
        private mutating func uniqueJoinColumn(_ base: String) -> String {
            var name = base, n = 0
            while joinColumnsUsed.contains(name) { n += 1; name = base + String(n) }
            joinColumnsUsed.insert(name)
            return name
        }

        /// The columns of attributes and to-ones (with a to-one's entity-number column where its
        /// destination has sub-entities), table by table, entity by entity in number order.
        mutating func nameColumns() {
            let roots = model.entitiesByCode.filter { $0.superentity == nil }.sorted { number($0) < number($1) }
            for root in roots {
                let table = CoreDataLayout.tableName(root)
                for entity in root.selfAndDescendants.sorted(by: { number($0) < number($1) }) {
                    for property in entity.declaredProperties {
                        if let attribute = property as? AttributeDescription, !attribute.isTransient {
                            columns[ObjectIdentifier(property)] = unique("Z" + property.name.uppercased(), in: table)
                        } else if let relationship = property as? RelationshipDescription, !relationship.isToMany {
                            let name = unique("Z" + property.name.uppercased(), in: table)
                            columns[ObjectIdentifier(property)] = name
                            if let destination = relationship.destinationEntity, !destination.subentities.isEmpty {
                                toOneEntityColumns[ObjectIdentifier(property)] = unique("Z\(number(destination))_" + property.name.uppercased(), in: table)
                            }
                        }
                    }
                }
            }
        }

        /// The declared to-many relationships, by entity number, then name.
        private var declaredToMany: [RelationshipDescription] {
            model.entitiesByCode.sorted { number($0) < number($1) }.flatMap { entity in
                entity.declaredProperties.compactMap { $0 as? RelationshipDescription }
                    .filter { $0.isToMany && $0.destinationEntity != nil }
                    .sorted { $0.name < $1.name }
            }
        }

        /// To-many relationships read through a foreign key in the destination's table: the
        /// inverse to-one's, or a hidden one for a to-many without an inverse; with an order
        /// column for an ordered one.
        mutating func nameForeignKeyToMany() {
            for relationship in declaredToMany {
                guard let entity = relationship.entity, let destination = relationship.destinationEntity else { continue }
                let destinationTable = CoreDataLayout.tableName(destination.rootEntity)
                let column: String
                if let inverse = relationship.inverseRelationship, !inverse.isToMany {
                    column = columns[ObjectIdentifier(inverse)] ?? "Z" + inverse.name.uppercased()
                } else if relationship.inverseRelationship == nil {
                    column = unique("Z\(number(entity))" + relationship.name.uppercased(), in: destinationTable)
                    extra[destinationTable, default: []].append(column)
                } else {
                    continue
                }
                let order = relationship.isOrdered ? "Z_FOK_" + String(column.dropFirst()) : nil
                if let order { extra[destinationTable, default: []].append(order) }
                toMany[ObjectIdentifier(relationship)] = .foreignKey(table: destinationTable, column: column, orderColumn: order)
            }
        }

        /// Many-to-many: one join table per pair, named after the side whose entity numbers first,
        /// or as the store's existing tables name it.
        mutating func nameJoinTables(existingColumns: [String: [String]]?) {
            for relationship in declaredToMany {
                guard let inverse = relationship.inverseRelationship, inverse.isToMany, toMany[ObjectIdentifier(relationship)] == nil,
                      let entity = relationship.entity, let destination = relationship.destinationEntity,
                      let inverseEntity = inverse.entity else { continue }
                let isFirst = relationship === inverse
                    || (number(entity), relationship.name) <= (number(inverseEntity), inverse.name)
                guard isFirst else { continue }
                var table = "Z_\(number(entity))" + relationship.name.uppercased()
                var first = uniqueJoinColumn("Z_\(number(entity))" + inverse.name.uppercased())
                var second = uniqueJoinColumn("Z_\(number(destination))" + relationship.name.uppercased())
                if let existingColumns {
                    (table, first, second) = Self.existingNames(
                        table: table, first: first, second: second, other: "Z_\(number(inverseEntity))" + inverse.name.uppercased(), in: existingColumns)
                }
                let forwardOrder = relationship.isOrdered ? "Z_FOK_" + String(second.dropFirst(2)) : nil
                let backwardOrder = inverse.isOrdered && relationship !== inverse ? "Z_FOK_" + String(first.dropFirst(2)) : nil
                toMany[ObjectIdentifier(relationship)] = .joinTable(
                    table: table, sourceColumn: first, destinationColumn: second, destinationEntityColumn: nil, orderColumn: forwardOrder)
                if relationship !== inverse {
                    toMany[ObjectIdentifier(inverse)] = .joinTable(
                        table: table, sourceColumn: second, destinationColumn: first, destinationEntityColumn: nil, orderColumn: backwardOrder)
                }
                joins.append((table, first, second, [forwardOrder, backwardOrder].compactMap { $0 }))
            }
        }

        /// A join table's names as a store's file has them: Core Data may have named the table
        /// after the other side (`other`), or numbered its columns otherwise.
        private static func existingNames(
            table: String, first: String, second: String, other: String, in existingColumns: [String: [String]]
        ) -> (String, String, String) {
            var (table, first, second) = (table, first, second)
            var swapped = false
            if existingColumns[table] == nil, existingColumns[other] != nil { table = other; swapped = true }
            let actual = (existingColumns[table] ?? []).filter { !$0.hasPrefix("Z_FOK_") }
            if actual.count == 2 {
                let strip = { (s: String) in String(s.reversed().drop(while: \.isNumber).reversed()) }
                if swapped || (strip(actual[0]) == strip(second) && strip(actual[1]) == strip(first) && strip(first) != strip(second)) {
                    (first, second) = (actual[1], actual[0])
                } else {
                    (first, second) = (actual[0], actual[1])
                }
            }
            return (table, first, second)
        }
    }
}
