import Foundation

/// What changed about an object or a section of a ``FetchedResultsController``
/// (`NSFetchedResultsChangeType`).
public enum FetchedResultsChangeType: UInt, Sendable {
    /// It entered the results.
    case insert = 1
    /// It left the results.
    case delete = 2
    /// A value it is sorted or sectioned by changed, and it took another place.
    case move = 3
    /// It changed and kept its place among the others.
    case update = 4
}

/// A section of a ``FetchedResultsController``'s results (`NSFetchedResultsSectionInfo`).
public protocol FetchedResultsSectionInfo {
    /// The section's name: the value of the controller's `sectionNameKeyPath` its objects share.
    var name: String { get }
    /// The section's index title (by default the name's first letter, capitalized).
    var indexTitle: String? { get }
    /// How many objects the section has.
    var numberOfObjects: Int { get }
    /// The section's objects, in order.
    var objects: [ManagedObject]? { get }
}

/// The receiver of a ``FetchedResultsController``'s changes (`NSFetchedResultsControllerDelegate`).
/// Every method is optional (each has an empty default). A delegate of a controller without
/// sections that implements `controller(_:didChangeContentWith:)` gets only that call.
///
/// A delegate implements them with exactly these signatures: a generic method of the same name is
/// not called (Swift prefers the default as the witness).
///
/// ```swift
/// final class Recorder: FetchedResultsControllerDelegate {
///     func controller(_ controller: FetchedResultsController<ManagedObject>, didChange anObject: ManagedObject,
///                     at indexPath: IndexPath?, for type: FetchedResultsChangeType, newIndexPath: IndexPath?) { … }
/// }
/// ```
public protocol FetchedResultsControllerDelegate: AnyObject {
    /// The results are about to change.
    func controllerWillChangeContent(_ controller: FetchedResultsController<ManagedObject>)
    /// An object was inserted, deleted, moved or updated: `indexPath` is where it was (nil for an
    /// insert), `newIndexPath` where it is now (nil for a delete).
    ///
    /// As in Core Data, a changed object is a move only when a value it is sorted or sectioned by
    /// changed and it took another place among the others; any other change is an update, at the
    /// index path it had before the changes (`indexPath`, the row to reload) and the one it has
    /// after them (`newIndexPath`), which differ when inserts and deletes before it shift it.
    /// Objects shifted by other objects' changes are not reported. Section changes come first.
    func controller(
        _ controller: FetchedResultsController<ManagedObject>, didChange anObject: ManagedObject,
        at indexPath: IndexPath?, for type: FetchedResultsChangeType, newIndexPath: IndexPath?)
    /// A section was inserted (at its new index) or deleted (at its old index).
    func controller(
        _ controller: FetchedResultsController<ManagedObject>, didChange sectionInfo: any FetchedResultsSectionInfo,
        atSectionIndex sectionIndex: Int, for type: FetchedResultsChangeType)
    /// The results changed; the controller's objects and sections are the new ones.
    func controllerDidChangeContent(_ controller: FetchedResultsController<ManagedObject>)
    /// The results changed, as one difference of the objects' IDs, for a controller without
    /// sections. As in Core Data, a delegate that implements it is told nothing else: neither
    /// `controllerWillChangeContent`, nor the per-object and per-section changes, nor
    /// `controllerDidChangeContent`. A controller with a `sectionNameKeyPath` never calls it.
    func controller(
        _ controller: FetchedResultsController<ManagedObject>,
        didChangeContentWith difference: CollectionDifference<ManagedObjectID>)
}

extension FetchedResultsControllerDelegate {
    public func controllerWillChangeContent(_ controller: FetchedResultsController<ManagedObject>) {}
    public func controller(
        _ controller: FetchedResultsController<ManagedObject>, didChange anObject: ManagedObject,
        at indexPath: IndexPath?, for type: FetchedResultsChangeType, newIndexPath: IndexPath?) {}
    public func controller(
        _ controller: FetchedResultsController<ManagedObject>, didChange sectionInfo: any FetchedResultsSectionInfo,
        atSectionIndex sectionIndex: Int, for type: FetchedResultsChangeType) {}
    public func controllerDidChangeContent(_ controller: FetchedResultsController<ManagedObject>) {}
    /// Not implemented by the delegate: the controller learns it here (Objective-C's
    /// `respondsToSelector:`, which Swift protocols lack), and sends the other calls instead.
    public func controller(
        _ controller: FetchedResultsController<ManagedObject>,
        didChangeContentWith difference: CollectionDifference<ManagedObjectID>) {
        controller.state.delegateTakesDifferences = false
    }
}

/// A section's objects, as a ``FetchedResultsController`` groups them.
struct ResultsSection: FetchedResultsSectionInfo {
    var name: String
    var indexTitle: String?
    var managedObjects: [ManagedObject]
    var numberOfObjects: Int { managedObjects.count }
    var objects: [ManagedObject]? { managedObjects }
}
