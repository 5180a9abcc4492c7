import Foundation

/// What every store that keeps persistent history records the same way: the changes of a save or
/// a batch request, in the order they are recorded; the column masks of updates; the attributes
/// a delete's tombstone keeps; who the process is.
enum HistoryRecording {
    /// Each entity's attributes preserved on deletion, in the order of their tombstone columns.
    static func preservedAttributes(of entity: EntityDescription) -> [AttributeDescription] {
        entity.attributes.filter { $0.preservesValueInHistoryOnDeletion && !$0.isTransient }.sorted { $0.name < $1.name }
    }

    /// One object's change, before it is written.
    struct Change {
        var type: PersistentHistoryChangeType
        var id: ManagedObjectID
        var columns: [Int]?
        var tombstone: [Value]? = nil
    }

    /// The changes of a committed save.
    static func changes(of request: StoreSaveRequest, result: StoreSaveResult) -> [Change] {
        func permanent(_ id: ManagedObjectID) -> ManagedObjectID { result.permanentIDs[id] ?? id }
        var changes: [Change] = []
        changes.reserveCapacity(request.inserted.count + request.updated.count + request.deleted.count)
        var touched = Set<ManagedObjectID>()
        for object in request.inserted {
            let id = permanent(object.id)
            touched.insert(id)
            changes.append(Change(type: .insert, id: id, columns: nil))
        }
        for object in request.deleted { touched.insert(object.id) }
        // An update's columns, with the to-many relationships whose join rows or order changed.
        var updates: [ManagedObjectID: Set<Int>] = [:]
        var order: [ManagedObjectID] = []
        func note(_ id: ManagedObjectID, _ indices: some Sequence<Int>) {
            let id = permanent(id)
            guard !touched.contains(id) || updates[id] != nil else { return }
            if updates[id] == nil { order.append(id); touched.insert(id) }
            updates[id, default: []].formUnion(indices)
        }
        for object in request.updated { note(object.id, object.changedIndices) }
        for change in request.joinInserts + request.joinDeletes { note(change.source, [change.relationship.index]) }
        for change in request.orderings { note(change.source, [change.relationship.index]) }
        for id in order { changes.append(Change(type: .update, id: id, columns: updates[id]!.sorted())) }
        for object in request.deleted { changes.append(Change(type: .delete, id: object.id, columns: nil)) }
        return changes
    }

    /// The changes of a batch request.
    static func changes(of request: StoreBatchRequest, result: StoreBatchResult) -> [Change] {
        var columns: [Int]?
        switch request {
        case .insert(_, let rows): columns = Array(Set(rows.flatMap(\.given))).sorted()
        case .update(let fetch, let values, _): columns = values.compactMap { fetch.entity.propertiesByName[$0.name]?.index }.sorted()
        case .delete, .deleteObjects: columns = nil
        }
        let inserted = Set(result.inserted), deleted = Set(result.deleted)
        var changes = result.inserted.map { Change(type: .insert, id: $0, columns: nil) }
        var seen = Set<ManagedObjectID>()
        for id in result.updated where !inserted.contains(id) && !deleted.contains(id) && seen.insert(id).inserted {
            // Rows whose to-one a delete cleared record no columns: which relationship is not known here.
            changes.append(Change(type: .update, id: id, columns: request.isDelete ? nil : columns))
        }
        changes += result.deleted.map { Change(type: .delete, id: $0, columns: nil) }
        return changes
    }

    /// This process, as transactions record it: its ID (decimal) and its name (in the bundle ID column).
    static let processIdentifier = String(ProcessInfo.processInfo.processIdentifier)
    static let processName = ProcessInfo.processInfo.processName

    static func columnMask(_ indices: [Int]) -> Data {
        var bytes = [UInt8](repeating: 0, count: (indices.max() ?? 0) / 8 + 1)
        for i in indices { bytes[i / 8] |= 1 << UInt8(i % 8) }
        return Data(bytes)
    }

    static func columnIndices(_ mask: Data) -> [Int] {
        var result: [Int] = []
        for (byte, bits) in mask.enumerated() {
            for bit in 0..<8 where bits & (1 << UInt8(bit)) != 0 { result.append(byte * 8 + bit) }
        }
        return result
    }
}

private extension StoreBatchRequest {
    var isDelete: Bool {
        switch self {
        case .delete, .deleteObjects: true
        case .insert, .update: false
        }
    }
}
