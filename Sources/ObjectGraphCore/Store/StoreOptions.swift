import Foundation

/// The options of `addPersistentStore(type:configuration:at:options:)`, read once into typed values:
/// a known key with a value of the wrong type is refused with a message, rather than ignored.
/// Keys ObjectGraph does not know are ignored, as Core Data ignores them.
struct StoreOptions: Sendable, Equatable {
    var readOnly = false
    var durability = StoreDurability.full
    var maximumReaderCount = 5
    var busyTimeout: Double = 5
    var historyTracking = false
    var remoteChangeNotifications = false
    var mergesRemoteChanges = false
    var sqlDebugLevel = 0

    /// - Throws: ``ObjectGraphError/unsupported`` naming the key, the value and the type expected.
    init(_ options: [String: any Sendable]?) throws {
        guard let options else { return }
        func refuse(_ key: String, _ value: any Sendable, expected: String) -> ObjectGraphError {
            ObjectGraphError(.unsupported, "Store option \(key) must be \(expected), not \(type(of: value)) \(value)", key: key)
        }
        if let value = options[PersistentStoreOption.readOnly] {
            guard let flag = value as? Bool else { throw refuse(PersistentStoreOption.readOnly, value, expected: "a Bool") }
            readOnly = flag
        }
        func flag(_ key: String) throws -> Bool? {
            guard let value = options[key] else { return nil }
            if let flag = value as? Bool { return flag }
            if let number = value as? Int, number == 0 || number == 1 { return number == 1 }
            throw refuse(key, value, expected: "a Bool")
        }
        historyTracking = try flag(PersistentStoreOption.persistentHistoryTracking) ?? false
        remoteChangeNotifications = try flag(PersistentStoreOption.remoteChangeNotificationPost) ?? false
        mergesRemoteChanges = try flag(PersistentStoreOption.mergesRemoteChangesAutomatically) ?? false
        if let value = options[PersistentStoreOption.durability] {
            if let durability = value as? StoreDurability {
                self.durability = durability
            } else if let text = value as? String, let durability = StoreDurability(rawValue: text.lowercased()) {
                self.durability = durability
            } else {
                throw refuse(PersistentStoreOption.durability, value, expected: "a StoreDurability or \"full\" / \"normal\"")
            }
        }
        if let value = options[PersistentStoreOption.maximumReaderCount] {
            guard let count = value as? Int, count > 0 else {
                throw refuse(PersistentStoreOption.maximumReaderCount, value, expected: "a positive Int")
            }
            maximumReaderCount = count
        }
        if let value = options[PersistentStoreOption.sqlDebugLevel] {
            guard let level = value as? Int, (0...4).contains(level) else {
                throw refuse(PersistentStoreOption.sqlDebugLevel, value, expected: "an Int from 0 to 4")
            }
            sqlDebugLevel = level
        }
        if let value = options[PersistentStoreOption.busyTimeout] {
            guard let seconds = (value as? Double) ?? (value as? Int).map(Double.init), seconds >= 0, seconds.isFinite else {
                throw refuse(PersistentStoreOption.busyTimeout, value, expected: "a number of seconds (Double) of 0 or more")
            }
            busyTimeout = seconds
        }
    }
}
