import ArgumentParser
import Foundation
import ObjectGraphCore

/// Feeds ObjectGraph one input that used to crash it, in a process of its own, so a test can
/// check that the process survives and reports the right error (the crashes hostile input once caused).
struct Hostile: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "_hostile", abstract: "Feed ObjectGraph an input that once crashed it (for ObjectGraph's tests).", shouldDisplay: false)

    enum Kind: String, ExpressibleByArgument, CaseIterable {
        case nestedParentheses = "nested-parentheses"
        case manyNots = "many-nots"
        case manyBangs = "many-bangs"
        case nestedArithmetic = "nested-arithmetic"
        case unaryMinuses = "unary-minuses"
        case unclosedParentheses = "unclosed-parentheses"
        case longChain = "long-chain"
        case manyArguments = "many-arguments"
        case nestedXML = "nested-xml"
        case nanDate = "nan-date"
    }

    @Argument var kind: Kind

    func run() throws {
        // The work runs on a thread with a dispatch worker's stack (512 KiB), the smallest a server has.
        let result = Box()
        ThreadOfItsOwn.run(stackSize: 512 * 1024) { result.text = Self.outcome { try feed() } }
        print("survived \(kind.rawValue): \(result.text)")
    }

    final class Box: @unchecked Sendable {  // written by the worker thread, read after it was joined
        var text = ""
    }

    static func outcome(_ body: () throws -> String) -> String {
        do { return try body() } catch let error as ObjectGraphError { return "error \(error.code)" } catch { return "error \(error)" }
    }

    func feed() throws -> String {
        switch kind {
        case .nestedParentheses: return try fetch(String(repeating: "(", count: 5_000) + "rank > 1" + String(repeating: ")", count: 5_000))
        case .manyNots: return try fetch(String(repeating: "NOT ", count: 1_000) + "rank > 1")
        case .manyBangs: return try fetch(String(repeating: "!", count: 10_000) + "(rank > 1)")
        case .nestedArithmetic:
            return try fetch("rank > " + String(repeating: "(1 + ", count: 1_000) + "1" + String(repeating: ")", count: 1_000))
        case .unaryMinuses: return try fetch("rank > " + String(repeating: "-", count: 10_000) + "1")
        case .unclosedParentheses: return try fetch(String(repeating: "(", count: 10_000) + "rank > 1")
        case .longChain: return try fetch((0..<3_000).map { "rank != \($0)" }.joined(separator: " AND "))
        case .manyArguments:
            let values: [Any] = (0..<40_000).map { Int64($0) }
            let format = (0..<40_000).map { _ in "rank == %@" }.joined(separator: " OR ")
            return try fetch(FetchPredicate(format: format, argumentArray: values))
        case .nestedXML:
            let url = FileManager.default.temporaryDirectory.appendingPathComponent("hostile-\(UUID().uuidString).xml")
            defer { try? FileManager.default.removeItem(at: url) }
            let depth = 100_000
            let text = #"<?xml version="1.0" encoding="UTF-8"?><plist version="1.0">"# + String(repeating: "<array>", count: depth)
                + String(repeating: "</array>", count: depth) + "</plist>"
            try Data(text.utf8).write(to: url)
            let coordinator = PersistentStoreCoordinator(managedObjectModel: Self.model)
            try coordinator.addPersistentStore(type: .xml, at: url)
            return "opened"
        case .nanDate:
            let (context, _) = try Self.stack()
            let note = context.insertNewObject(forEntityName: "Note")
            note.setValue(Date(timeIntervalSinceReferenceDate: .nan), forKey: "created")
            _ = note.value(forKey: "created")
            try context.save()
            return "saved"
        }
    }

    static let model = ManagedObjectModel(entities: [
        EntityDescription(name: "Note", properties: [
            .attribute("rank", .integer64, defaultValue: Int64(0)),
            .attribute("created", .date),
        ]),
    ])

    static func stack() throws -> (ManagedObjectContext, URL) {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("hostile-\(UUID().uuidString).sqlite")
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        try coordinator.addPersistentStore(type: .sqlite, at: url)
        let context = ManagedObjectContext(concurrencyType: .confinement)
        context.persistentStoreCoordinator = coordinator
        return (context, url)
    }

    func fetch(_ format: String) throws -> String { try fetch(FetchPredicate(format: format)) }

    func fetch(_ predicate: FetchPredicate) throws -> String {
        let (context, url) = try Self.stack()
        defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: url.path + suffix) } }
        for rank in 0..<3 { context.insertNewObject(forEntityName: "Note").setValue(Int64(rank), forKey: "rank") }
        try context.save()
        let request = FetchRequest<ManagedObject>(entityName: "Note")
        request.predicate = predicate
        _ = predicate.predicateFormat
        return "fetched \(try context.fetch(request).count)"
    }
}
