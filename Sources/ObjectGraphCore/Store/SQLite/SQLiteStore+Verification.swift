import Foundation
import GRDB

extension SQLiteStore {
    /// Checks the store: `PRAGMA integrity_check`, then, for every table of the model, that
    /// optimistic-lock versions are positive, `Z_ENT` names an entity of the table, `Z_PRIMARYKEY`'s
    /// `Z_MAX` is at or above every key, every to-one points at a row of its destination, and every
    /// join-table row at rows of both sides. Reads only.
    ///
    /// - Parameter progress: called with (checks done, checks in all) as it goes.
    /// - Throws: ``ObjectGraphError`` when the file cannot be opened or read with the model.
    static func verify(at url: URL, model: ManagedObjectModel, progress: (Int, Int) -> Void = { _, _ in }) throws -> StoreVerification {
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        let store = try coordinator.addPersistentStore(type: .sqlite, at: url, options: [PersistentStoreOption.readOnly: true])
        defer { try? coordinator.removePersistentStore(store) }
        guard let backend = store.backend as? SQLiteStore else {
            throw ObjectGraphError(.unsupported, "The store at \(url.path) is not an SQLite store", url: url)
        }
        return try backend.verify(progress: progress)
    }

    private func verify(progress: (Int, Int) -> Void) throws -> StoreVerification {
        let checks = schema.verificationChecks(primaryKeyTable: CoreDataLayout.quote(CoreDataLayout.primaryKeyTable)) { CoreDataLayout.quote($0) }
        let total = checks.count + 1
        progress(0, total)
        return try read("verifying the store") { db in
            var result = StoreVerification(integrity: "")
            result.checks.append("integrity")
            result.integrity = try String.fetchAll(db, sql: "PRAGMA integrity_check").joined(separator: "; ")
            progress(1, total)
            for (i, check) in checks.enumerated() {
                result.checks.append("\(check.check) \(check.table)")
                let rows = try Int.fetchOne(db, sql: check.sql) ?? 0
                if rows > 0 { result.problems.append(.init(check: check.check, table: check.table, detail: check.detail, rows: rows)) }
                progress(i + 2, total)
            }
            return result
        }
    }
}
