import Foundation

/// Who a save or batch request is recorded as, in persistent history: set by the coordinator
/// around the store call (a task-local value, so that every backend's save and batch signatures
/// stay as they are), read by the store when it records the transaction.
struct TransactionInfo: Sendable {
    var author: String?
    var contextName: String?

    @TaskLocal static var current = TransactionInfo()
}

/// A store that records persistent history (Core Data's: the SQLite store).
protocol HistoryBackend: AnyObject, Sendable {
    /// Whether the store was added with ``PersistentStoreOption/persistentHistoryTracking``.
    var tracksHistory: Bool { get }
    /// The transactions after a transaction number (nil: all) or after a date, oldest first.
    ///
    /// - Throws: ``ObjectGraphError/historyTokenExpired`` when history after `number` was deleted.
    func historyTransactions(after number: Int64?, orAfter date: Date?, withChanges: Bool, store: PersistentStore) throws
        -> [PersistentHistoryTransaction]
    /// Deletes the transactions before a transaction number (nil: all) or a date, but those a
    /// registered consumer has not read. Returns how many were deleted.
    func deleteHistory(before number: Int64?, orBefore date: Date?) throws -> Int
    /// The number of the last transaction recorded, or nil when there is none.
    func lastTransactionNumber() throws -> Int64?
    /// Records (or, with nil, forgets) a consumer's last transaction read.
    func setConsumer(_ name: String, transactionNumber: Int64?, registered: Bool) throws
    /// A registered consumer's last transaction read; `registered` false when there is no such consumer.
    func consumer(_ name: String) throws -> (registered: Bool, transactionNumber: Int64?)
}
