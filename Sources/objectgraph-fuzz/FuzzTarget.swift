import Foundation
import ObjectGraphCore

/// What a fuzz target feeds its bytes to. Every target treats a thrown error as a correct answer;
/// a crash, a trap, a sanitizer report or a hang is a bug.
enum FuzzTarget: String, CaseIterable, Sendable {
    /// The predicate format parser, then the predicate's format parsed again, and a fetch with it
    /// from an in-memory store (the evaluator) and from an SQLite store (the SQL compiler).
    case predicate
    /// An XML atomic store file, added to a coordinator and read whole.
    case xmlStore = "xml-store"
    /// A binary atomic store file, added to a coordinator and read whole.
    case binaryStore = "binary-store"
    /// The `contents` file of an Xcode `.xcdatamodel`, loaded as a model, validated and hashed.
    case xcodeModel = "xcode-model"
    /// A compiled model (`.mom`), loaded as a model, validated and hashed.
    case compiledModel = "compiled-model"
    /// An SQLite store file, added to a coordinator and read whole.
    case sqliteOpen = "sqlite-open"

    /// Runs the target on one input.
    func run(_ data: Data) {
        switch self {
        case .predicate: FuzzPredicate.run(data)
        case .xmlStore: FuzzStoreFile.run(data, type: .xml)
        case .binaryStore: FuzzStoreFile.run(data, type: .binary)
        case .sqliteOpen: FuzzStoreFile.run(data, type: .sqlite)
        case .xcodeModel: FuzzModelFile.run(data, name: "Fuzz.xcdatamodel/contents")
        case .compiledModel: FuzzModelFile.run(data, name: "Fuzz.mom")
        }
    }
}

/// Runs `body`, whose thrown error is a correct answer to a bad input: with OBJECTGRAPH_FUZZ_VERBOSE
/// set, the error is printed (to see how far the seeds get).
func attempt<T>(_ what: String, _ body: () throws -> T) -> T? {
    do { return try body() } catch {
        if verbose { FileHandle.standardError.write(Data("\(what): \(error)\n".utf8)) }
        return nil
    }
}

private let verbose = ProcessInfo.processInfo.environment["OBJECTGRAPH_FUZZ_VERBOSE"] != nil

/// The folder the targets write their files in: one per process, in memory when the system has
/// `/dev/shm`.
enum FuzzScratch {
    static let directory: URL = {
        let base = FileManager.default.fileExists(atPath: "/dev/shm") ? URL(fileURLWithPath: "/dev/shm") : FileManager.default.temporaryDirectory
        let url = base.appendingPathComponent("objectgraph-fuzz-\(getpid())")
        try? FileManager.default.removeItem(at: url)
        try! FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        atexit { try? FileManager.default.removeItem(at: FuzzScratch.directory) }
        return url
    }()

    /// Writes `data` to `name` in the folder's `input` folder (its parent folders made), removing
    /// what else was there.
    static func write(_ data: Data, to name: String) -> URL {
        let input = directory.appendingPathComponent("input")
        try? FileManager.default.removeItem(at: input)
        let url = input.appendingPathComponent(name)
        try! FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try! data.write(to: url)
        return url
    }
}

/// Reads every object of every entity of a coordinator's stores (or of the entities named), with
/// their attributes and prefetched relationships; an entity that throws does not stop the others.
enum FuzzReader {
    static func readEverything(_ coordinator: PersistentStoreCoordinator, entities names: [String]? = nil, predicate: FetchPredicate? = nil) {
        let context = ManagedObjectContext(concurrencyType: .confinement)
        context.persistentStoreCoordinator = coordinator
        context.shouldDeleteInaccessibleFaults = true
        for entity in coordinator.managedObjectModel.entities where names?.contains(entity.name) ?? true {
            let request = FetchRequest<ManagedObject>(entityName: entity.name)
            request.predicate = predicate
            request.returnsObjectsAsFaults = false
            request.relationshipKeyPathsForPrefetching = entity.relationshipsByName.keys.sorted()
            if let first = entity.attributesByName.keys.sorted().first {
                request.sortDescriptors = [FetchSortDescriptor(key: first)]
            }
            guard let objects = attempt("fetch \(entity.name)", { try context.fetch(request) }) else { continue }
            _ = attempt("count \(entity.name)") { try context.count(for: request) }
            for object in objects {
                for name in entity.attributesByName.keys { _ = object.value(forKey: name) }
            }
        }
    }
}
