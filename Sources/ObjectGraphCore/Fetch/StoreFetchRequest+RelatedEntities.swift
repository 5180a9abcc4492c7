extension StoreFetchRequest {
    /// The entities whose values the predicate or the sort descriptors read through a relationship:
    /// `Folder` for `folder.name == "Inbox"` or a sort by `folder.name`, `Tag` for
    /// `ANY tags.name == "x"` and for `SUBQUERY(tags, $t, $t.name == "x").@count > 0`.
    ///
    /// A store answers such a request from the related rows it holds, so a context whose unsaved
    /// changes touch one of these entities cannot let the store filter or order for it. Comparing a
    /// relationship itself (`folder == %@`, `tags.@count > 2`) reads no value of the destination:
    /// a change there is a change of the fetched object, which the context already sees.
    var entitiesReadThroughRelationships: [EntityDescription] {
        var reached: [EntityDescription] = []
        if let predicate {
            Self.collect(predicate.node, root: entity, variables: [:], into: &reached)
        }
        for sort in sortDescriptors {
            _ = Self.walk(sort.keyPathComponents[...], from: entity, into: &reached)
        }
        return reached
    }

    private static func collect(
        _ node: PredicateNode, root: EntityDescription, variables: [String: EntityDescription], into reached: inout [EntityDescription]
    ) {
        switch node {
        case .constant:
            break
        case .not(let inner):
            collect(inner, root: root, variables: variables, into: &reached)
        case .and(let nodes), .or(let nodes):
            for inner in nodes { collect(inner, root: root, variables: variables, into: &reached) }
        case .comparison(let comparison):
            collect(comparison.lhs, root: root, variables: variables, into: &reached)
            collect(comparison.rhs, root: root, variables: variables, into: &reached)
        }
    }

    private static func collect(
        _ expression: PredicateExpression, root: EntityDescription, variables: [String: EntityDescription],
        into reached: inout [EntityDescription]
    ) {
        switch expression {
        case .constant, .list:
            break
        case .keyPath(let components):
            _ = walk(components[...], from: root, into: &reached)
        case .variable(let name, let components):
            // A subquery's variable stands for a related object: reading its properties reads that entity.
            guard let start = variables[name] else { return }
            if let first = components.first, !first.hasPrefix("@"), !reached.contains(where: { $0 === start }) {
                reached.append(start)
            }
            _ = walk(components[...], from: start, into: &reached)
        case .arithmetic(_, let lhs, let rhs):
            collect(lhs, root: root, variables: variables, into: &reached)
            collect(rhs, root: root, variables: variables, into: &reached)
        case .subqueryCount(let subquery):
            let element: EntityDescription?
            switch subquery.collection {
            case .keyPath(let components):
                element = walk(components[...], from: root, into: &reached)
            case .variable(let name, let components):
                element = variables[name].flatMap { walk(components[...], from: $0, into: &reached) }
            default:
                element = nil
            }
            guard let element else { return }
            var inner = variables
            inner[subquery.variable] = element
            collect(subquery.predicate, root: root, variables: inner, into: &reached)
        }
    }

    /// Follows a key path from `entity`, adding each relationship's destination whose properties
    /// the path goes on to read. Returns the entity the path ends at when it ends with a
    /// relationship (a subquery's elements), nil otherwise.
    private static func walk(
        _ components: ArraySlice<String>, from entity: EntityDescription, into reached: inout [EntityDescription]
    ) -> EntityDescription? {
        var current = entity
        var index = components.startIndex
        while index < components.endIndex {
            guard let relationship = current.relationshipsByName[components[index]],
                  let destination = relationship.destinationEntity else { return nil }
            let next = components.index(after: index)
            if next < components.endIndex && !components[next].hasPrefix("@") && !reached.contains(where: { $0 === destination }) {
                reached.append(destination)
            }
            current = destination
            index = next
        }
        return current
    }
}
