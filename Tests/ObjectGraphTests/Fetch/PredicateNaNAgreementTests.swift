import Foundation
import Testing
import ObjectGraph
@testable import ObjectGraphCore

/// A NaN stored in a REAL column (as a BLOB of its bits, on SQLite) is selected by the same
/// comparisons in the store as in memory: it equals nothing, orders nowhere, and is not nil.
@Suite("NaN in stored values: SQLite and in-memory answers agree")
struct PredicateNaNAgreementTests {
    static func model() -> ManagedObjectModel {
        ManagedObjectModel(entities: [
            EntityDescription(name: "Reading", properties: [
                .attribute("label", .string, isOptional: false, defaultValue: ""),
                .attribute("value", .double),
                .attribute("at", .date),
            ]),
        ])
    }

    static let formats = [
        "value > 0", "value >= 5", "value < 6", "value <= 5", "value == 5", "value != 5", "value == nil", "value != nil",
        "value BETWEEN {0, 100}", "0 < value", "value > -1000000 AND value < 1000000", "NOT value > 0",
        "at > %@", "at <= %@",
    ]

    @Test(arguments: [StoreKind.sqlite, .inMemory, .binary])
    func comparisonsSelectTheSameReadingsInTheStoreAndInMemory(_ kind: StoreKind) throws {
        let stack = try TestStack(kind, model: Self.model())
        let context = stack.context()
        let reference = Date(timeIntervalSinceReferenceDate: 1_000)
        let values: [(String, Double?)] = [("nan", .nan), ("minus", -1), ("five", 5), ("ten", 10), ("none", nil), ("inf", .infinity)]
        for (label, value) in values {
            let reading = context.insert("Reading", ["label": label])
            reading.setValue(value, forKey: "value")
            reading.setValue(label == "nan" ? Date(timeIntervalSinceReferenceDate: 2_000) : reference, forKey: "at")
        }
        try context.save()
        context.reset()
        let all = try context.all("Reading")
        for format in Self.formats {
            let predicate = FetchPredicate(format: format, Date(timeIntervalSinceReferenceDate: 1_500))
            let request = FetchRequest<ManagedObject>(entityName: "Reading")
            request.predicate = predicate
            let fromStore = Set(try context.fetch(request).map { $0.value(forKey: "label") as! String })
            let inMemory = Set(try all.filter { try predicate.evaluate(with: $0) }.map { $0.value(forKey: "label") as! String })
            #expect(fromStore == inMemory, "\(format)")
            #expect(!fromStore.contains("nan") || format.contains("!=") || format.contains("NOT") || format.hasPrefix("at"), "\(format): NaN orders nowhere")
        }
    }
}
