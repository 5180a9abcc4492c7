import Foundation

// Persistent history through the coordinator: requests run against every store that tracks it,
// tokens name positions in all of them, and consumers register what they have read.

extension PersistentStoreCoordinator {
    /// The stores of `stores` (all when nil) that keep persistent history.
    func historyStores(_ stores: [PersistentStore]?) -> [(PersistentStore, any HistoryBackend)] {
        let own = persistentStores
        return (stores ?? own).compactMap { store in
            guard own.contains(where: { $0 === store }), let backend = store.backend as? any HistoryBackend, backend.tracksHistory else { return nil }
            return (store, backend)
        }
    }

    /// A token for the last transaction recorded in each store that keeps history
    /// (`currentPersistentHistoryToken(fromStores:)`): fetching history after it returns only what
    /// is committed later. Nil when no store keeps history.
    ///
    /// - Parameter stores: the stores to include; nil for all.
    public func currentPersistentHistoryToken(fromStores stores: [PersistentStore]?) -> PersistentHistoryToken? {
        let stores = historyStores(stores)
        guard !stores.isEmpty else { return nil }
        var numbers: [String: Int64] = [:]
        for (store, backend) in stores {
            numbers[store.identifier] = (try? backend.lastTransactionNumber()).flatMap { $0 } ?? 0
        }
        return PersistentHistoryToken(transactionNumbers: numbers)
    }

    /// Runs a history fetch or purge against the stores that keep history.
    func executeHistory(_ request: PersistentHistoryChangeRequest) throws -> PersistentHistoryResult {
        let stores = historyStores(request.affectedStores)
        guard !stores.isEmpty else {
            throw ObjectGraphError(
                .unsupported,
                "No store of the coordinator keeps persistent history: add the SQLite store with the \(PersistentStoreOption.persistentHistoryTracking) option set to true")
        }
        return try access {
            switch request.operation {
            case .deleteBeforeToken(let token):
                var deleted = 0
                for (store, backend) in stores {
                    // A token that says nothing of a store leaves its history alone, unless it is nil (delete all).
                    if let token {
                        guard let number = token.transactionNumber(inStore: store.identifier) else { continue }
                        deleted += try backend.deleteHistory(before: number, orBefore: nil)
                    } else {
                        deleted += try backend.deleteHistory(before: nil, orBefore: nil)
                    }
                }
                return PersistentHistoryResult(resultType: request.resultType, result: Self.purgeResult(request.resultType, deleted))
            case .deleteBeforeDate(let date):
                var deleted = 0
                for (_, backend) in stores { deleted += try backend.deleteHistory(before: nil, orBefore: date) }
                return PersistentHistoryResult(resultType: request.resultType, result: Self.purgeResult(request.resultType, deleted))
            case .fetchAfterToken, .fetchAfterDate:
                return try fetchHistory(request, stores: stores)
            }
        }
    }

    private static func purgeResult(_ type: PersistentHistoryResultType, _ deleted: Int) -> Any? {
        switch type {
        case .count: deleted
        default: true
        }
    }

    private func fetchHistory(_ request: PersistentHistoryChangeRequest, stores: [(PersistentStore, any HistoryBackend)]) throws
        -> PersistentHistoryResult {
        let filter = request.fetchRequest
        let filtersChanges = filter?.entity === HistoryEntities.shared.change || filter?.entityName == HistoryEntities.shared.change.name
        let withChanges = request.resultType != .transactionsOnly && request.resultType != .count && request.resultType != .statusOnly || filtersChanges
        var transactions: [PersistentHistoryTransaction] = []
        for (store, backend) in stores {
            switch request.operation {
            case .fetchAfterToken(let token):
                let number = token?.transactionNumber(inStore: store.identifier)
                transactions += try backend.historyTransactions(after: number, orAfter: nil, withChanges: withChanges, store: store)
            case .fetchAfterDate(let date):
                transactions += try backend.historyTransactions(after: nil, orAfter: date, withChanges: withChanges, store: store)
            case .deleteBeforeToken, .deleteBeforeDate:
                break
            }
        }
        if stores.count > 1 { transactions.sort { ($0.timestamp, $0.transactionNumber) < ($1.timestamp, $1.transactionNumber) } }
        if let filter {
            try filter.predicate?.validate()
            if filtersChanges {
                if let predicate = filter.predicate {
                    transactions = try transactions.map { transaction in
                        transaction.with(changes: try (transaction.changes ?? []).filter { try predicate.evaluate(with: HistorySubject($0)) })
                    }.filter { !($0.changes ?? []).isEmpty }
                }
            } else if let predicate = filter.predicate {
                transactions = try transactions.filter { try predicate.evaluate(with: HistorySubject($0)) }
            }
            if filter.fetchLimit > 0 && transactions.count > filter.fetchLimit { transactions = Array(transactions.prefix(filter.fetchLimit)) }
        }
        let result: Any? = switch request.resultType {
        case .statusOnly: true
        case .count: transactions.count
        case .objectIDs: transactions.flatMap { ($0.changes ?? []).map(\.changedObjectID) }
        case .transactionsOnly: transactions.map { $0.withoutChanges() }
        case .changesOnly: transactions.flatMap { $0.changes ?? [] }
        case .transactionsAndChanges: transactions
        }
        return PersistentHistoryResult(resultType: request.resultType, result: result)
    }

    // MARK: - Consumers

    /// Records that the consumer `name` has read history up to `token` (registering it when new):
    /// from then on, ``PersistentHistoryChangeRequest/deleteHistory(before:)-(PersistentHistoryToken?)`` keeps every
    /// transaction after it, so that one consumer's purge never expires another's token.
    /// ObjectGraph's own (Core Data has no registry).
    ///
    /// ```swift
    /// try coordinator.setHistoryToken(nil, forConsumer: "search-indexer")     // registers: keep everything
    /// …
    /// try coordinator.setHistoryToken(transactions.last?.token, forConsumer: "search-indexer")
    /// ```
    ///
    /// - Parameters:
    ///   - token: what the consumer has read; nil for nothing yet (everything is kept).
    ///   - name: the consumer's name, unique among the store's consumers.
    /// - Throws: ``ObjectGraphError/unsupported`` when no store keeps history; store errors.
    public func setHistoryToken(_ token: PersistentHistoryToken?, forConsumer name: String) throws {
        let stores = historyStores(nil)
        guard !stores.isEmpty else {
            throw ObjectGraphError(.unsupported, "No store of the coordinator keeps persistent history to register consumer '\(name)' with")
        }
        for (store, backend) in stores {
            try backend.setConsumer(name, transactionNumber: token?.transactionNumber(inStore: store.identifier), registered: true)
        }
    }

    /// The token the consumer `name` last recorded with ``setHistoryToken(_:forConsumer:)``; nil
    /// when it is not registered or has read nothing.
    public func historyToken(forConsumer name: String) throws -> PersistentHistoryToken? {
        var numbers: [String: Int64] = [:]
        for (store, backend) in historyStores(nil) {
            if let number = try backend.consumer(name).transactionNumber { numbers[store.identifier] = number }
        }
        return numbers.isEmpty ? nil : PersistentHistoryToken(transactionNumbers: numbers)
    }

    /// Forgets the consumer `name`: its unread history may be deleted from then on.
    public func removeHistoryConsumer(named name: String) throws {
        for (_, backend) in historyStores(nil) { try backend.setConsumer(name, transactionNumber: nil, registered: false) }
    }
}
