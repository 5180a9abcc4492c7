import Foundation

/// One committed save or batch request, as persistent history recorded it
/// (`NSPersistentHistoryTransaction`).
///
/// ```swift
/// let result = try context.execute(PersistentHistoryChangeRequest.fetchHistory(after: lastToken)) as! PersistentHistoryResult
/// for transaction in result.result as! [PersistentHistoryTransaction] where transaction.author != "importer" {
///     view.mergeChanges(fromContextDidSave: transaction.objectIDNotification())
///     lastToken = transaction.token
/// }
/// ```
public final class PersistentHistoryTransaction: Sendable, CustomStringConvertible {
    /// The position just after this transaction: fetching history after it starts with the next.
    public let token: PersistentHistoryToken
    /// When the transaction was committed.
    public let timestamp: Date
    /// The saving context's ``ManagedObjectContext/transactionAuthor``.
    public let author: String?
    /// The saving context's ``ManagedObjectContext/name``.
    public let contextName: String?
    /// The UUID of the store the transaction was committed to.
    public let storeID: String
    /// The identifier of the process that committed it: its process ID as a decimal string for
    /// transactions ObjectGraph wrote (Core Data writes the process name).
    public let processID: String
    /// The bundle identifier (ObjectGraph writes the process name: Linux has no bundles).
    public let bundleID: String?
    /// The transaction's number in its store (its row's `Z_PK` in `ATRANSACTION`); increasing.
    public let transactionNumber: Int64
    /// The changes, when the request asked for them (``PersistentHistoryResultType/transactionsAndChanges``).
    public let changes: [PersistentHistoryChange]?

    init(token: PersistentHistoryToken, timestamp: Date, author: String?, contextName: String?, storeID: String, processID: String,
         bundleID: String?, transactionNumber: Int64, changes: [PersistentHistoryChange]?) {
        self.token = token
        self.timestamp = timestamp
        self.author = author
        self.contextName = contextName
        self.storeID = storeID
        self.processID = processID
        self.bundleID = bundleID
        self.transactionNumber = transactionNumber
        self.changes = changes
    }

    /// The same transaction without its changes.
    func withoutChanges() -> PersistentHistoryTransaction {
        PersistentHistoryTransaction(
            token: token, timestamp: timestamp, author: author, contextName: contextName, storeID: storeID, processID: processID,
            bundleID: bundleID, transactionNumber: transactionNumber, changes: nil)
    }

    /// The same transaction with other changes, which it then owns.
    func with(changes: [PersistentHistoryChange]) -> PersistentHistoryTransaction {
        let copy = PersistentHistoryTransaction(
            token: token, timestamp: timestamp, author: author, contextName: contextName, storeID: storeID, processID: processID,
            bundleID: bundleID, transactionNumber: transactionNumber, changes: changes)
        copy.adoptChanges()
        return copy
    }

    /// Makes the transaction its changes' ``PersistentHistoryChange/transaction``.
    func adoptChanges() {
        guard let changes, !changes.isEmpty else { return }
        let header = withoutChanges()
        for change in changes { change.attach(to: self, header: header) }
    }

    /// The transaction as a did-save notification of object IDs, to merge into any context with
    /// ``ManagedObjectContext/mergeChanges(fromContextDidSave:)``. Its user info also has Core
    /// Data's keys (``ManagedObjectContext/NotificationKey/insertedObjectIDs`` and the others) with
    /// sets of IDs. A transaction fetched without its changes gives an empty notification.
    public func objectIDNotification() -> Notification {
        var inserted: Set<ManagedObjectID> = [], updated: Set<ManagedObjectID> = [], deleted: Set<ManagedObjectID> = []
        var changedKeys: [ManagedObjectID: Set<String>] = [:]
        for change in changes ?? [] {
            switch change.changeType {
            case .insert: inserted.insert(change.changedObjectID)
            case .update:
                updated.insert(change.changedObjectID)
                if let properties = change.updatedProperties {
                    changedKeys[change.changedObjectID, default: []].formUnion(properties.map(\.name))
                }
            case .delete: deleted.insert(change.changedObjectID)
            }
        }
        // An object inserted and changed in one transaction is an insert; deleted wins over both.
        updated.subtract(inserted)
        updated.subtract(deleted)
        inserted.subtract(deleted)
        let changes = ManagedObjectContext.SaveChanges(
            insertedObjectIDs: inserted, updatedObjectIDs: updated, deletedObjectIDs: deleted, changedKeys: changedKeys)
        return Notification(
            name: ManagedObjectContext.didSaveObjectIDsNotification, object: nil,
            userInfo: [
                ManagedObjectContext.SaveChanges.userInfoKey: changes,
                ManagedObjectContext.NotificationKey.insertedObjectIDs.rawValue: inserted,
                ManagedObjectContext.NotificationKey.updatedObjectIDs.rawValue: updated,
                ManagedObjectContext.NotificationKey.deletedObjectIDs.rawValue: deleted,
            ])
    }

    public var description: String {
        "PersistentHistoryTransaction(\(transactionNumber), author: \(author ?? "nil"), context: \(contextName ?? "nil"), \(changes.map { "\($0.count) changes" } ?? "changes not fetched"))"
    }
}

/// The kind of a ``PersistentHistoryChange`` (`NSPersistentHistoryChangeType`).
public enum PersistentHistoryChangeType: Int, Sendable, Hashable {
    case insert = 0
    case update = 1
    case delete = 2
}

/// One object's change in a ``PersistentHistoryTransaction`` (`NSPersistentHistoryChange`).
public final class PersistentHistoryChange: Sendable, CustomStringConvertible {
    /// The change's number in its store (its row's `Z_PK` in `ACHANGE`).
    public let changeID: Int64
    /// Insert, update or delete.
    public let changeType: PersistentHistoryChangeType
    /// The object changed.
    public let changedObjectID: ManagedObjectID
    /// For an update, the attributes and relationships that changed; nil for inserts and deletes,
    /// and for updates whose properties were not recorded (a to-one a batch delete cleared).
    public let updatedProperties: Set<PropertyDescription>?
    /// For a delete, the values of the entity's attributes marked `preservesValueInHistoryOnDeletion`
    /// (Xcode's "Preserve After Deletion") as they were, by name; nil otherwise.
    public let tombstone: [String: any Sendable]?
    private let owner = Protected(Owner())

    /// The transaction, weakly (it owns its changes), and, strongly, the same transaction without
    /// its changes, for when the program kept the change but not the transaction.
    private struct Owner {
        weak var transaction: PersistentHistoryTransaction?
        var header: PersistentHistoryTransaction?
    }

    /// The transaction the change belongs to: the one fetched with it while the program keeps it,
    /// else the same transaction without its ``PersistentHistoryTransaction/changes`` (a
    /// `.changesOnly` result's changes have only that).
    public var transaction: PersistentHistoryTransaction? { owner.withLock { $0.transaction ?? $0.header } }

    init(changeID: Int64, changeType: PersistentHistoryChangeType, changedObjectID: ManagedObjectID,
         updatedProperties: Set<PropertyDescription>?, tombstone: [String: any Sendable]?) {
        self.changeID = changeID
        self.changeType = changeType
        self.changedObjectID = changedObjectID
        self.updatedProperties = updatedProperties
        self.tombstone = tombstone
    }

    func attach(to transaction: PersistentHistoryTransaction, header: PersistentHistoryTransaction) {
        owner.withLock {
            $0.transaction = transaction
            $0.header = header
        }
    }

    public var description: String {
        let properties = updatedProperties.map { " [" + $0.map(\.name).sorted().joined(separator: ", ") + "]" } ?? ""
        return "PersistentHistoryChange(\(changeID), \(changeType), \(changedObjectID)\(properties))"
    }
}

extension PropertyDescription: Hashable {
    /// Properties are equal when they are the same description (``PersistentHistoryChange/updatedProperties``).
    public static func == (lhs: PropertyDescription, rhs: PropertyDescription) -> Bool { lhs === rhs }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}
