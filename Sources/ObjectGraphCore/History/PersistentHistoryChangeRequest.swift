import Foundation

/// What a ``PersistentHistoryChangeRequest`` returns (`NSPersistentHistoryResultType`).
public enum PersistentHistoryResultType: Int, Sendable, Hashable {
    /// `true` when the request ran.
    case statusOnly = 0
    /// The IDs of the objects changed, in the order of the changes (`[ManagedObjectID]`).
    case objectIDs = 1
    /// The number of transactions fetched or deleted (`Int`).
    case count = 2
    /// The transactions, without their changes (`[PersistentHistoryTransaction]`).
    case transactionsOnly = 3
    /// The changes, without their transactions (`[PersistentHistoryChange]`).
    case changesOnly = 4
    /// The transactions with their changes (the default).
    case transactionsAndChanges = 5
}

/// A fetch or purge of persistent history, run with ``ManagedObjectContext/execute(_:)``
/// (`NSPersistentHistoryChangeRequest`). See <doc:HistoryAndMultipleProcesses>.
///
/// ```swift
/// let request = PersistentHistoryChangeRequest.fetchHistory(after: lastToken)
/// let transactions = (try context.execute(request) as! PersistentHistoryResult).result as! [PersistentHistoryTransaction]
/// try context.execute(PersistentHistoryChangeRequest.deleteHistory(before: oldestTokenAnyoneNeeds))
/// ```
///
/// The stores must have been added with ``PersistentStoreOption/persistentHistoryTracking``.
public final class PersistentHistoryChangeRequest: PersistentStoreRequest {
    enum Operation: Sendable {
        case fetchAfterToken(PersistentHistoryToken?)
        case fetchAfterDate(Date)
        case deleteBeforeToken(PersistentHistoryToken?)
        case deleteBeforeDate(Date)
    }

    let operation: Operation

    /// What ``PersistentHistoryResult/result`` holds; ``PersistentHistoryResultType/transactionsAndChanges`` by default.
    public var resultType: PersistentHistoryResultType = .transactionsAndChanges
    /// A fetch request over ``PersistentHistoryTransaction/entityDescription`` (its predicate
    /// filters transactions by `author`, `contextName`, `timestamp`, `processID`, `bundleID`,
    /// `storeID`, `transactionNumber`; its `fetchLimit` caps them) or over
    /// ``PersistentHistoryChange/entityDescription`` (its predicate filters changes by
    /// `changeType`, `changeID`, `entityName`). Nil: everything after the token or date.
    public var fetchRequest: FetchRequest<ManagedObject>?

    /// The token the request fetches after or deletes before, if it was made with one.
    public var token: PersistentHistoryToken? {
        switch operation {
        case .fetchAfterToken(let token), .deleteBeforeToken(let token): token
        case .fetchAfterDate, .deleteBeforeDate: nil
        }
    }

    public override var requestType: PersistentStoreRequestType { .persistentHistoryChangeRequestType }

    init(_ operation: Operation) {
        self.operation = operation
    }

    /// The transactions committed after `token` (all of them for nil), oldest first.
    ///
    /// Executing it throws ``ObjectGraphError/historyTokenExpired`` when history before the
    /// transactions after `token` was deleted: the app has missed changes and must refetch.
    public static func fetchHistory(after token: PersistentHistoryToken?) -> PersistentHistoryChangeRequest {
        PersistentHistoryChangeRequest(.fetchAfterToken(token))
    }

    /// The transactions committed after `date`, oldest first.
    public static func fetchHistory(after date: Date) -> PersistentHistoryChangeRequest {
        PersistentHistoryChangeRequest(.fetchAfterDate(date))
    }

    /// Deletes the transactions before `token` (all of them for nil), keeping the token's own
    /// transaction, so that the token stays valid. Never deletes a transaction a registered
    /// consumer has not read (see ``PersistentStoreCoordinator/setHistoryToken(_:forConsumer:)``).
    public static func deleteHistory(before token: PersistentHistoryToken?) -> PersistentHistoryChangeRequest {
        PersistentHistoryChangeRequest(.deleteBeforeToken(token))
    }

    /// Deletes the transactions committed before `date` (except what a registered consumer has not read).
    public static func deleteHistory(before date: Date) -> PersistentHistoryChangeRequest {
        PersistentHistoryChangeRequest(.deleteBeforeDate(date))
    }

    override func execute(in context: ManagedObjectContext) throws -> PersistentStoreResult {
        try context.coordinator.executeHistory(self)
    }
}

/// What a ``PersistentHistoryChangeRequest`` returned (`NSPersistentHistoryResult`).
public final class PersistentHistoryResult: PersistentStoreResult {
    /// What ``result`` holds.
    public let resultType: PersistentHistoryResultType
    /// `true`, an `Int`, `[ManagedObjectID]`, `[PersistentHistoryTransaction]` or
    /// `[PersistentHistoryChange]`, as ``resultType`` says.
    public let result: Any?

    init(resultType: PersistentHistoryResultType, result: Any?) {
        self.resultType = resultType
        self.result = result
    }
}

extension PersistentHistoryTransaction {
    /// The entity a ``PersistentHistoryChangeRequest/fetchRequest`` names to filter transactions:
    /// attributes `author`, `contextName`, `processID`, `bundleID`, `storeID` (strings),
    /// `timestamp` (date) and `transactionNumber` (integer).
    public static var entityDescription: EntityDescription { HistoryEntities.shared.transaction }

    /// A fetch request over ``entityDescription``, to give a predicate and a limit.
    ///
    /// ```swift
    /// let request = PersistentHistoryChangeRequest.fetchHistory(after: token)
    /// let filter = PersistentHistoryTransaction.fetchRequest
    /// filter.predicate = FetchPredicate(format: "author != %@", "importer")
    /// request.fetchRequest = filter
    /// ```
    public static var fetchRequest: FetchRequest<ManagedObject> { HistoryEntities.fetchRequest(over: entityDescription) }
}

extension PersistentHistoryChange {
    /// The entity a ``PersistentHistoryChangeRequest/fetchRequest`` names to filter changes:
    /// `changeType` and `changeID` (integers), `entityName` (the changed object's entity).
    public static var entityDescription: EntityDescription { HistoryEntities.shared.change }

    /// A fetch request over ``entityDescription``.
    public static var fetchRequest: FetchRequest<ManagedObject> { HistoryEntities.fetchRequest(over: entityDescription) }
}

/// The entities history fetch requests filter with: a model of their own, never a store's.
struct HistoryEntities: Sendable {
    let model: ManagedObjectModel
    let transaction: EntityDescription
    let change: EntityDescription

    static let shared = HistoryEntities()

    private init() {
        model = ManagedObjectModel(entities: [
            EntityDescription(name: "PersistentHistoryTransaction", properties: [
                .attribute("author", .string), .attribute("contextName", .string), .attribute("processID", .string),
                .attribute("bundleID", .string), .attribute("storeID", .string), .attribute("timestamp", .date),
                .attribute("transactionNumber", .integer64),
            ]),
            EntityDescription(name: "PersistentHistoryChange", properties: [
                .attribute("changeType", .integer64), .attribute("changeID", .integer64), .attribute("entityName", .string),
            ]),
        ])
        transaction = model.entitiesByName["PersistentHistoryTransaction"]!
        change = model.entitiesByName["PersistentHistoryChange"]!
    }

    /// A new fetch request over `entity`, by name and by description.
    static func fetchRequest(over entity: EntityDescription) -> FetchRequest<ManagedObject> {
        let request = FetchRequest<ManagedObject>(entityName: entity.name)
        request.entity = entity
        return request
    }
}

/// A transaction or change as a predicate's subject.
struct HistorySubject: PredicateSubject {
    let predicateEntity: EntityDescription
    let values: [String: Value]
    var predicateObjectID: ManagedObjectID? { nil }

    func predicateValue(forKey key: String) throws -> PredicateOperand {
        guard let value = values[key] else {
            throw ObjectGraphError(
                .invalidFetchRequest, "A history fetch request's predicate names '\(key)', which \(predicateEntity.name) does not have", key: key)
        }
        return .value(value)
    }

    init(_ transaction: PersistentHistoryTransaction) {
        predicateEntity = HistoryEntities.shared.transaction
        values = [
            "author": transaction.author.map(Value.string) ?? .null, "contextName": transaction.contextName.map(Value.string) ?? .null,
            "processID": .string(transaction.processID), "bundleID": transaction.bundleID.map(Value.string) ?? .null,
            "storeID": .string(transaction.storeID), "timestamp": .date(transaction.timestamp),
            "transactionNumber": .int(transaction.transactionNumber),
        ]
    }

    init(_ change: PersistentHistoryChange) {
        predicateEntity = HistoryEntities.shared.change
        values = [
            "changeType": .int(Int64(change.changeType.rawValue)), "changeID": .int(change.changeID),
            "entityName": .string(change.changedObjectID.entityName),
        ]
    }
}
