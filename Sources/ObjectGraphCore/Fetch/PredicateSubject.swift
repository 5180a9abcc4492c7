import Foundation

/// Something a predicate or a sort descriptor can be evaluated against in memory: an object in a
/// context (for pending changes), or a row of the in-memory store.
protocol PredicateSubject {
    /// The subject's object ID (for `SELF == %@` and comparisons with objects).
    var predicateObjectID: ManagedObjectID? { get }
    /// The subject's entity.
    var predicateEntity: EntityDescription { get }
    /// The value of one property (no dots): an attribute's value, a to-one relationship's
    /// destination, or a to-many relationship's destinations.
    func predicateValue(forKey key: String) throws -> PredicateOperand
}

/// The value of one property of a ``PredicateSubject``.
enum PredicateOperand {
    /// An attribute's value (a transformable attribute's value is its encoded `.data`).
    case value(Value)
    /// A to-one relationship's destination (nil when there is none).
    case object((any PredicateSubject)?)
    /// A to-many relationship's destinations (in order for an ordered relationship).
    case objects([any PredicateSubject])
}
