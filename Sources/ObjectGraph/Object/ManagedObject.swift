import Foundation
// Stand-in, replaced by the real ManagedObject.
open class ManagedObject {
    public let entity: EntityDescription
    public internal(set) var objectID: ManagedObjectID
    init(entity: EntityDescription) { self.entity = entity; self.objectID = .temporary(for: entity) }
}
