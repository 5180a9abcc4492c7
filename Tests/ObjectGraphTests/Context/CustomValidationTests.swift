import Foundation
import Testing
import ObjectGraph
@testable import ObjectGraphCore

/// An account whose own validation refuses reserved names (with ObjectGraph's error) and negative
/// balances (with an error of its own).
final class ValidatedAccount: ManagedObject {
    struct NegativeBalance: Error, CustomStringConvertible {
        var balance: Int64
        var description: String { "a balance of \(balance) is below zero" }
    }

    override func validateValue(_ value: Any?, forKey key: String) throws {
        switch key {
        case "name" where (value as? String) == "root":
            throw ObjectGraphError(.validation, "the name root is reserved")
        case "balance":
            if let balance = value as? Int64, balance < 0 { throw NegativeBalance(balance: balance) }
        default:
            break
        }
    }
}

@Suite("An app's own validation")
struct CustomValidationTests {
    static func model() -> ManagedObjectModel {
        ManagedObjectModel(entities: [
            EntityDescription(name: "Account", managedObjectClass: ValidatedAccount.self, properties: [
                .attribute("name", .string, isOptional: false),
                .attribute("balance", .integer64, defaultValue: Int64(0)),
            ])
        ])
    }

    @Test(arguments: StoreKind.allCases)
    func everyRefusalIsReportedWithItsObjectAndNothingIsWritten(_ kind: StoreKind) throws {
        let stack = try TestStack(kind, model: Self.model())
        let context = stack.context()
        let account = context.insertNewObject(forEntityName: "Account")
        account.setValue("root", forKey: "name")
        account.setValue(Int64(-5), forKey: "balance")
        let error = try #require(throws: ObjectGraphError.self) { try context.save() }
        #expect(error.code == .validation)
        #expect(error.underlyingErrors.count == 2, "\(error)")
        let reserved = try #require(error.underlyingErrors.first { $0.key == "name" })
        #expect(reserved.message == "the name root is reserved")
        #expect(reserved.entityName == "Account")
        #expect(reserved.objectID == account.objectID)
        let negative = try #require(error.underlyingErrors.first { $0.key == "balance" })
        #expect(negative.code == .validation)
        #expect(negative.message.contains("Account.balance"))
        #expect(negative.message.contains("a balance of -5 is below zero"))
        #expect(negative.objectID == account.objectID)
        #expect(context.hasChanges, "the context keeps its changes")
        #expect(try stack.context("check").count(for: FetchRequest<ManagedObject>(entityName: "Account")) == 0)

        account.setValue("alice", forKey: "name")
        account.setValue(Int64(10), forKey: "balance")
        try context.save()
        #expect(try stack.context("check").count(for: FetchRequest<ManagedObject>(entityName: "Account")) == 1)
    }

    @Test func aSingleRefusalIsThrownAsItself() throws {
        let stack = try TestStack(.inMemory, model: Self.model())
        let context = stack.context()
        let account = context.insertNewObject(forEntityName: "Account")
        account.setValue("root", forKey: "name")
        let error = try #require(throws: ObjectGraphError.self) { try context.save() }
        #expect(error.message == "the name root is reserved")
        #expect(error.key == "name")
        #expect(error.entityName == "Account")
    }
}
