import Foundation

/// A position in the persistent history of a coordinator's stores (`NSPersistentHistoryToken`):
/// the last transaction it covers, in each store.
///
/// ```swift
/// let token = coordinator.currentPersistentHistoryToken(fromStores: nil)
/// let data = try JSONEncoder().encode(token)        // keep it between runs
/// let request = PersistentHistoryChangeRequest.fetchHistory(after: token)
/// ```
///
/// Tokens are values: `Codable`, `Sendable` and `Hashable`; they name stores by their UUID, so a
/// token kept across a restart, or made by another coordinator or process on the same store,
/// still means the same position.
public struct PersistentHistoryToken: Codable, Sendable, Hashable, CustomStringConvertible {
    /// The number of the last transaction covered, by store UUID.
    public let transactionNumbers: [String: Int64]

    init(transactionNumbers: [String: Int64]) {
        self.transactionNumbers = transactionNumbers
    }

    init(store: String, transactionNumber: Int64) {
        self.transactionNumbers = [store: transactionNumber]
    }

    /// The last transaction number covered in a store, or nil when the token says nothing of it.
    func transactionNumber(inStore identifier: String) -> Int64? {
        transactionNumbers[identifier] ?? transactionNumbers.first { $0.key.caseInsensitiveCompare(identifier) == .orderedSame }?.value
    }

    public var description: String {
        "PersistentHistoryToken(" + transactionNumbers.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: ", ") + ")"
    }
}
