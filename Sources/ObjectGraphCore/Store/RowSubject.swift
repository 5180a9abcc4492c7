import Foundation

/// The rows a fetch evaluated in memory reads, related rows included (the in-memory store's, and
/// those a PostgreSQL fetch reads for what the server does not answer).
protocol RowView: AnyObject {
    /// The row of `id`, if it exists.
    func subject(for id: ManagedObjectID) throws -> RowSubject<Self>?
    /// The destinations of a to-many relationship from one row, in the relationship's order.
    func destinations(of relationship: RelationshipDescription, from id: ManagedObjectID) throws -> [ManagedObjectID]
}

/// A row seen by predicates and sort descriptors evaluated in memory: its values, and its
/// relationships' rows read through its view.
struct RowSubject<View: RowView>: PredicateSubject {
    let view: View
    let id: ManagedObjectID
    let snapshot: Snapshot

    var predicateObjectID: ManagedObjectID? { id }
    var predicateEntity: EntityDescription { snapshot.entity }

    func predicateValue(forKey key: String) throws -> PredicateOperand {
        guard let property = snapshot.entity.propertiesByName[key] else {
            throw ObjectGraphError(
                .invalidFetchRequest, "Entity '\(snapshot.entity.name)' has no property '\(key)'", entityName: snapshot.entity.name, key: key)
        }
        if let relationship = property as? RelationshipDescription {
            if relationship.isToMany {
                return .objects(try view.destinations(of: relationship, from: id).compactMap { try view.subject(for: $0) })
            }
            guard case .objectID(let destination) = snapshot.values[relationship.index] else { return .object(nil) }
            return .object(try view.subject(for: destination))
        }
        return .value(snapshot.values[property.index])
    }
}

extension StoreFetchRequest {
    /// The rows of `subjects` (evaluated in memory) as this fetch returns them: sorted, offset and
    /// limited, with their snapshots when the fetch wants values.
    func rows<View>(of subjects: [RowSubject<View>]) throws -> [StoreRow] {
        var subjects = subjects
        if !sortDescriptors.isEmpty {
            subjects = try FetchSortDescriptor.sorted(subjects, by: sortDescriptors, subject: { $0 })
        }
        var slice = subjects[...]
        if fetchOffset > 0 { slice = slice.dropFirst(fetchOffset) }
        if fetchLimit > 0 { slice = slice.prefix(fetchLimit) }
        return slice.map { StoreRow(id: $0.id, snapshot: includesPropertyValues ? $0.snapshot : nil) }
    }
}
