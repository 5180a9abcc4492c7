import Foundation
import Logging
import Testing
import ObjectGraph
@testable import ObjectGraphCore

/// A small save of inserts and updates goes to PostgreSQL as one statement outside a
/// transaction (its rows and its change-log row as common table expressions); anything else, and a
/// statement the server refuses, runs in a transaction as before.
@Suite("PostgreSQL: a small save is one statement", .needsPostgreSQL)
struct PostgresOneStatementSaveTests {
    struct Stack {
        let coordinator: PersistentStoreCoordinator
        let backend: PostgresStore
        let context: ManagedObjectContext
    }

    func stack(_ url: URL, driver: any PostgresDriver, uniqueTagNames: Bool = false) throws -> Stack {
        let model = TestModels.notes(uniqueTagNames: uniqueTagNames)
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        let backend = try PostgresStore(url: url, model: model, readOnly: false, maximumConnections: 4, logger: Logger(label: "test"), driver: driver)
        _ = try coordinator.addTestStore(type: .postgres, url: url, backend: backend)
        let context = ManagedObjectContext(concurrencyType: .confinement)
        context.persistentStoreCoordinator = coordinator
        context.mergePolicy = .error
        return Stack(coordinator: coordinator, backend: backend, context: context)
    }

    /// A new database, its driver, and a driver on it that records the statements of writes.
    func interposed() throws -> (URL, any PostgresDriver, InterposingDriver) {
        let url = try PostgresTestServer.shared.get().makeDatabase()
        let real = try PostgresDrivers.factory().connect(url: url, maximumConnections: 4, logger: Logger(label: "test"))
        return (url, real, InterposingDriver(real: real) { _, _, _ in })
    }

    /// The change log's rows, by number: their author and changes.
    func log(_ stack: Stack, driver: any PostgresDriver) throws -> [(number: Int64, changes: String)] {
        try driver.readOneStatement { session in
            try session.query("SELECT \"Z_TX\", \"Z_CHANGES\" FROM \(stack.backend.table(PostgresStoreTables.changeTable)) ORDER BY \"Z_TX\"", [])
        }.map { row in
            let changes: String = if case .text(let text) = row[1] { text } else { "" }
            return (row[0].integer ?? -1, changes)
        }
    }

    @Test func insertsAndAnUpdateAreOneStatementWithTheirLogRow() throws {
        let (url, real, driver) = try interposed()
        let stack = try stack(url, driver: driver)
        let context = stack.context
        let folder = context.insert("Folder", ["name": "inbox"])
        let first = context.insert("Note", ["title": "a", "folder": folder])
        try context.save()  // the first save reserves the keys later ones take
        #expect(driver.takeStatements().count > 1)

        let before = stack.coordinator.statistics.sqlStatements
        first.setValue("renamed", forKey: "title")
        let second = context.insert("Note", ["title": "b", "rank": Int64(7)])
        try context.save()
        let statements = driver.takeStatements()
        #expect(statements.count == 1)
        let statement = try #require(statements.first)
        #expect(statement.hasPrefix("/* ObjectGraph save "))
        #expect(statement.contains("INSERT INTO") && statement.contains("UPDATE") && statement.contains("pg_notify"))
        #expect(stack.coordinator.statistics.sqlStatements - before == 1)
        #expect(!context.hasChanges)
        #expect(!second.objectID.isTemporaryID)

        // What another coordinator reads, and the log's row (whose nonce line readers skip).
        let check = try self.stack(url, driver: real).context
        let titles = try check.all("Note", sortedBy: "title").map { $0.value(forKey: "title") as? String }
        #expect(titles == ["b", "renamed"])
        let rows = try log(stack, driver: real)
        #expect(rows.map(\.number) == [1, 2])
        let last = try #require(rows.last)
        #expect(last.changes.split(separator: "\n").contains { $0.hasPrefix("n ") })
        let entry = PostgresChangeLog.decode(last.changes, number: last.number, author: "", schema: stack.backend.schema, store: check.persistentStoreCoordinator!.persistentStores[0])
        #expect(entry.inserted.map { $0.primaryKey } == [second.objectID.primaryKey])
        #expect(entry.updated.map { $0.primaryKey } == [first.objectID.primaryKey])

        // The version the save gave the updated object is the row's: a second update is not a conflict.
        first.setValue("again", forKey: "title")
        try context.save()
        #expect(driver.takeStatements().count == 1)
    }

    @Test func aConflictRollsTheWholeStatementBackAndIsReportedAsAlways() throws {
        let url = try PostgresTestServer.shared.get().makeDatabase()
        let real = try PostgresDrivers.factory().connect(url: url, maximumConnections: 4, logger: Logger(label: "test"))
        let ours = try stack(url, driver: real)
        let theirs = try stack(url, driver: real)
        let note = ours.context.insert("Note", ["title": "a"])
        try ours.context.save()
        let changed = try theirs.context.existingObject(with: note.objectID)
        changed.setValue("theirs", forKey: "title")
        try theirs.context.save()
        let logged = try log(ours, driver: real).count

        note.setValue("ours", forKey: "title")
        ours.context.insert("Note", ["title": "new"])
        let error = try #require(throws: ObjectGraphError.self) { try ours.context.save() }
        #expect(error.code == .mergeConflict)
        #expect(error.conflicts.first?.persistedSnapshot?["title"] as? String == "theirs")
        #expect(ours.context.hasChanges)
        // Nothing of the save was written: not the new note, not a log row.
        let check = try stack(url, driver: real).context
        #expect(try check.all("Note").compactMap { $0.value(forKey: "title") as? String } == ["theirs"])
        #expect(try log(ours, driver: real).count == logged)
    }

    @Test func aRowAUniqueIndexRefusesRollsTheStatementBackAndIsReportedAsAlways() throws {
        let (url, real, driver) = try interposed()
        let stack = try stack(url, driver: driver, uniqueTagNames: true)
        let context = stack.context
        context.insert("Tag", ["name": "t"])
        context.insert("Note", ["title": "first"])
        try context.save()
        context.insert("Tag", ["name": "u"])
        try context.save()
        #expect(driver.takeStatements().last?.contains("ON CONFLICT DO NOTHING RETURNING 1") == true)

        let duplicate = context.insert("Tag", ["name": "t"])
        context.insert("Note", ["title": "second"])
        let error = try #require(throws: ObjectGraphError.self) { try context.save() }
        #expect(error.code == .constraintConflict)
        #expect(context.hasChanges)
        let statements = driver.takeStatements()
        #expect(statements.first?.hasPrefix("/* ObjectGraph save ") == true)
        #expect(statements.count > 1)
        let check = try self.stack(url, driver: real, uniqueTagNames: true).context
        #expect(try check.all("Note").compactMap { $0.value(forKey: "title") as? String } == ["first"])
        #expect(try check.all("Tag", sortedBy: "name").compactMap { $0.value(forKey: "name") as? String } == ["t", "u"])

        // Renamed, the tag is saved with the same keys the refused statement had taken.
        duplicate.setValue("v", forKey: "name")
        try context.save()
        #expect(driver.takeStatements().count == 1)
        #expect(try check.count(for: FetchRequest<ManagedObject>(entityName: "Tag")) == 3)
    }

    @Test func savesThatNeedATransactionStillRunInOne() throws {
        let (url, real, driver) = try interposed()
        let stack = try stack(url, driver: driver)
        let context = stack.context
        let notes = (0..<3).map { context.insert("Note", ["title": "n\($0)"]) }
        let tag = context.insert("Tag", ["name": "t"])
        try context.save()
        _ = driver.takeStatements()

        // A deletion, and a many-to-many pair.
        context.delete(notes[0])
        try context.save()
        #expect(!driver.takeStatements().contains { $0.hasPrefix("/* ObjectGraph save") })
        notes[1].setValue(Set([tag]), forKey: "tags")
        try context.save()
        #expect(!driver.takeStatements().contains { $0.hasPrefix("/* ObjectGraph save") })
        let check = try self.stack(url, driver: real).context
        #expect(try check.all("Note", sortedBy: "title").compactMap { $0.value(forKey: "title") as? String } == ["n1", "n2"])
    }

    @Test func severalUpdatesAreOneStatementInKeyOrderAndAConflictInAnyWritesNothing() throws {
        let (url, real, driver) = try interposed()
        let ours = try stack(url, driver: driver)
        let folder = ours.context.insert("Folder", ["name": "f"])
        let notes = (0..<4).map { ours.context.insert("Note", ["title": "n\($0)"]) }
        try ours.context.save()
        _ = driver.takeStatements()

        // Changed in reverse key order, written in key order (notes, then the folder, by entity code).
        for note in notes.reversed() { note.setValue((note.value(forKey: "title") as! String) + "!", forKey: "title") }
        folder.setValue("g", forKey: "name")
        try ours.context.save()
        let statements = driver.takeStatements()
        #expect(statements.count == 1)
        let statement = try #require(statements.first)
        let updates = statement.components(separatedBy: "UPDATE ").dropFirst().filter { !$0.hasPrefix("\"public\".\"Z_OGCHANGECOUNT\"") }
        #expect(updates.count == 5)
        let folderFirst = folder.objectID.entity.rootEntity.entityCode < notes[0].objectID.entity.rootEntity.entityCode
        #expect(updates.map { $0.hasPrefix("\"public\".\"ZFOLDER\"") } == (folderFirst ? [true, false, false, false, false] : [false, false, false, false, true]))

        // Another coordinator changes the third note: the next save of all four writes none of them.
        let theirs = try stack(url, driver: real)
        try theirs.context.existingObject(with: notes[2].objectID).setValue("theirs", forKey: "title")
        try theirs.context.save()
        for note in notes { note.setValue("again", forKey: "title") }
        let error = try #require(throws: ObjectGraphError.self) { try ours.context.save() }
        #expect(error.code == .mergeConflict)
        #expect(error.conflicts.map(\.objectID) == [notes[2].objectID])
        let check = try stack(url, driver: real).context
        #expect(try check.all("Note", sortedBy: "title").compactMap { $0.value(forKey: "title") as? String } == ["n0!", "n1!", "n3!", "theirs"])
    }

    @Test func parametersAreRenumberedOutsideQuotesOnly() {
        let sql = #"UPDATE "a$1" SET "b" = $1, "c" = '$2' WHERE "Z_PK" = $2 AND "Z_OPT" = $10 RETURNING "Z_OPT""#
        #expect(PostgresOneStatementSave.renumbered(sql, after: 5) == #"UPDATE "a$1" SET "b" = $6, "c" = '$2' WHERE "Z_PK" = $7 AND "Z_OPT" = $15 RETURNING "Z_OPT""#)
        #expect(PostgresOneStatementSave.renumbered(sql, after: 0) == sql)
    }
}
