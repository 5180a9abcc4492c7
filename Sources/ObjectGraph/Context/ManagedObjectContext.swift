import Foundation
// Stand-in, replaced by the real ManagedObjectContext.
public final class ManagedObjectContext: @unchecked Sendable {
    var model: ManagedObjectModel? { nil }
    public func insertNewObject(forEntityName name: String) -> ManagedObject { fatalError() }
}
