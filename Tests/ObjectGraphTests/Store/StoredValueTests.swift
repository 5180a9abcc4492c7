import Foundation
import GRDB
import Testing
import ObjectGraph
@testable import ObjectGraphCore

/// A value is stored exactly or refused at save with a validation error naming the entity and the
/// attribute: never changed on the way to the file and back, never a crash.
@Suite("Stored values are exact or refused")
struct StoredValueTests {
    @Test(arguments: EveryStore.allCases)
    func notANumberComesBackAsNotANumberEvenInARequiredAttribute(_ kind: EveryStore) throws {
        let stack = try ReopenableStack(kind)
        let object = try stack.roundTrip(["double": Double.nan, "float": Float.nan, "required": Double.nan])
        #expect((object.value(forKey: "double") as? Double)?.isNaN == true)
        #expect((object.value(forKey: "float") as? Float)?.isNaN == true)
        #expect((object.value(forKey: "required") as? Double)?.isNaN == true)
    }

    @Test(arguments: EveryStore.allCases)
    func negativeZeroKeepsItsSignAndInfinitiesComeBack(_ kind: EveryStore) throws {
        let stack = try ReopenableStack(kind)
        let object = try stack.roundTrip(["double": -0.0, "float": Float(-0.0), "required": -Double.infinity, "bounded": 0.0])
        let double = try #require(object.value(forKey: "double") as? Double)
        #expect(double == 0 && double.sign == .minus)
        let float = try #require(object.value(forKey: "float") as? Float)
        #expect(float == 0 && float.sign == .minus)
        #expect(object.value(forKey: "required") as? Double == -.infinity)
        let positive = try #require(object.value(forKey: "bounded") as? Double)
        #expect(positive == 0 && positive.sign == .plus)
    }

    @Test(arguments: EveryStore.allCases)
    func aDecimalNotANumberComesBackAsADecimal(_ kind: EveryStore) throws {
        let stack = try ReopenableStack(kind)
        let object = try stack.roundTrip(["decimal": Decimal.nan])
        let decimal = try #require(object.value(forKey: "decimal") as? Decimal)
        #expect(decimal.isNaN)
    }

    @Test(arguments: EveryStore.allCases)
    func stringsAndDataComeBackWithTheirLengthEmbeddedNULsAndEmptinessIncluded(_ kind: EveryStore) throws {
        let stack = try ReopenableStack(kind)
        let text = "a\0b\0\u{1F600}"
        let bytes = Data([0, 1, 0, 255, 0])
        let object = try stack.roundTrip(["string": text, "data": bytes])
        #expect(object.value(forKey: "string") as? String == text)
        #expect(object.value(forKey: "data") as? Data == bytes)
        let empty = try ReopenableStack(kind).roundTrip(["string": "", "data": Data()])
        #expect(empty.value(forKey: "string") as? String == "")
        #expect(empty.value(forKey: "data") as? Data == Data())
    }

    @Test(arguments: EveryStore.allCases)
    func aDateWhoseIntervalIsNotANumberIsRefusedAtSaveNamingTheAttribute(_ kind: EveryStore) throws {
        let stack = try ReopenableStack(kind)
        let context = stack.context()
        let object = context.insert("Sample", ["date": Date(timeIntervalSinceReferenceDate: .nan)])
        #expect(object.value(forKey: "date") is Date)
        let error = try #require(throws: ObjectGraphError.self) { try context.save() }
        #expect(error.code == .validation)
        #expect(error.entityName == "Sample" && error.key == "date")
        #expect(context.hasChanges)
    }

    @Test(arguments: EveryStore.allCases)
    func aTransformableValueOfAnotherTypeThanTheDeclaredOneIsRefusedAtSave(_ kind: EveryStore) throws {
        let stack = try ReopenableStack(kind)
        let context = stack.context()
        _ = context.insert("Sample", ["tags": [1, 2, 3]])
        let error = try #require(throws: ObjectGraphError.self) { try context.save() }
        #expect(error.code == .validation)
        #expect(error.entityName == "Sample" && error.key == "tags")
        #expect(error.message.contains("Array<String>"))
        #expect(context.hasChanges)
    }

    @Test(arguments: EveryStore.allCases)
    func aTransformableValueOfTheDeclaredTypeComesBack(_ kind: EveryStore) throws {
        let stack = try ReopenableStack(kind)
        let object = try stack.roundTrip(["tags": ["a", "b"]])
        #expect(object.value(forKey: "tags") as? [String] == ["a", "b"])
    }

    @Test(arguments: EveryStore.allCases)
    func notANumberIsOutsideEveryMinimumAndMaximum(_ kind: EveryStore) throws {
        let stack = try ReopenableStack(kind)
        let context = stack.context()
        _ = context.insert("Sample", ["bounded": Double.nan])
        let error = try #require(throws: ObjectGraphError.self) { try context.save() }
        #expect(error.code == .validation)
        #expect(error.entityName == "Sample" && error.key == "bounded")
    }

    @Test func aNotANumberColumnEqualsNoNumberInSQL() throws {
        let stack = try ReopenableStack(.sqlite)
        let context = stack.context()
        _ = context.insert("Sample", ["double": Double.nan, "required": 0.0])
        try context.save()
        try stack.close()
        let queue = try DatabaseQueue(path: stack.url.path)
        let (equal, null, storage) = try queue.read { db throws -> (Int, Int, String?) in
            var equal = 0
            for number in [0.0, 1.0, -1.0] {
                equal += try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM ZSAMPLE WHERE ZDOUBLE = ?", arguments: [number]) ?? 0
            }
            let null = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM ZSAMPLE WHERE ZDOUBLE IS NULL") ?? -1
            return (equal, null, try String.fetchOne(db, sql: "SELECT typeof(ZDOUBLE) FROM ZSAMPLE"))
        }
        #expect(equal == 0)
        #expect(null == 0)
        #expect(storage == "blob")
    }

    @Test func aDecimalColumnHoldingTheTextNaNReadsAsDecimalNotANumber() throws {
        let stack = try ReopenableStack(.sqlite)
        let context = stack.context()
        _ = context.insert("Sample", ["decimal": Decimal(1)])
        try context.save()
        try stack.close()
        let queue = try DatabaseQueue(path: stack.url.path)
        try queue.write { db in try db.execute(sql: "UPDATE ZSAMPLE SET ZDECIMAL = 'NaN'") }
        try queue.close()
        try stack.reopen()
        let object = try #require(try stack.context().all("Sample").first)
        let decimal = try #require(object.value(forKey: "decimal") as? Decimal)
        #expect(decimal.isNaN)
    }
}
