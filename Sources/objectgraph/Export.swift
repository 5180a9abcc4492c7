import ArgumentParser
import Foundation
import Logging
import ObjectGraphCore

/// `objectgraph export STORE [--model MODEL]`: every object of a Core Data store (an SQLite file or
/// a PostgreSQL store's URL) as JSON,
/// streamed (a page of objects at a time), with a progress bar on standard error when it is a terminal.
struct Export: ToolCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write every object of a Core Data store (an SQLite file or a postgres:// URL) as JSON.",
        discussion: """
            Writes one JSON array: an object per managed object, {"entity", "id" (its URI), "attributes", \
            "relationships" (URIs)}. Dates are ISO 8601, data base64, decimals strings. The store is opened \
            read-only and read a page at a time, so memory stays flat whatever its size. A progress bar is \
            drawn on standard error when it is a terminal.
            """)

    @Argument(help: "The store's .sqlite file (its -wal and -shm beside it are read too), or a postgres:// URL.") var store: String
    @Option(help: "The model: an .xcdatamodeld, .xcdatamodel, .momd or .mom (default: the model cached in the store).") var model: String?
    @Flag(help: "Write JSON: the default and only format, so the flag may be left out.") var json = false
    @Option(help: "Write to this file instead of standard output.") var output: String?
    @Option(help: "How many objects are read at a time.") var page = 1_000

    func validate() throws {
        guard page > 0 else { throw ValidationError("--page must be positive") }
    }

    func execute() throws {
        let location = try StoreLocation(store)
        let url = location.url
        // Adding a PostgreSQL store makes one in an empty schema: read it first, to fail without writing.
        if case .postgres = location { _ = try StoreTools.postgresSummary(of: url) }
        let loaded = try model.map { try ManagedObjectModel(contentsOf: URL(fileURLWithPath: $0)) } ?? ManagedObjectModel(contentsOfStoreAt: url)
        let coordinator = PersistentStoreCoordinator(managedObjectModel: loaded, logger: ToolLogging.quiet)
        try coordinator.addPersistentStore(type: location.isPostgreSQL ? .postgres : .sqlite, at: url, options: [PersistentStoreOption.readOnly: true])
        let context = ManagedObjectContext(concurrencyType: .confinement)
        context.persistentStoreCoordinator = coordinator
        let entities = loaded.entities.filter { !$0.isAbstract }.sorted { $0.name < $1.name }
        var counts: [String: Int] = [:]
        for entity in entities {
            let request = FetchRequest<ManagedObject>(entityName: entity.name)
            request.includesSubentities = false
            counts[entity.name] = try context.count(for: request)
        }
        let total = counts.values.reduce(0, +)

        let sink: FileHandle
        if let output {
            try Data().write(to: URL(fileURLWithPath: output))  // a failure names the file and says why
            sink = try FileHandle(forWritingTo: URL(fileURLWithPath: output))
        } else {
            sink = FileHandle.standardOutput
        }
        defer { if output != nil { try? sink.close() } }
        let progress = TerminalProgress()
        var buffer = Data("[".utf8)
        var written = 0
        var first = true
        for entity in entities where counts[entity.name, default: 0] > 0 {
            var offset = 0
            while true {
                let request = FetchRequest<ManagedObject>(entityName: entity.name)
                request.includesSubentities = false
                request.fetchLimit = page
                request.fetchOffset = offset
                let objects = try context.fetch(request)
                for object in objects {
                    buffer.append(contentsOf: Array((first ? "\n" : ",\n").utf8))
                    buffer.append(try JSONSerialization.data(withJSONObject: Self.json(object), options: [.sortedKeys]))
                    first = false
                }
                try sink.write(contentsOf: buffer)
                buffer.removeAll(keepingCapacity: true)
                written += objects.count
                progress.show(written, of: total, "exporting")
                context.reset()  // the page is written: let its objects go
                if objects.count < page { break }
                offset += page
            }
        }
        try sink.write(contentsOf: Data("\n]\n".utf8))
        progress.finish()
    }

    /// An object as a JSON dictionary.
    static func json(_ object: ManagedObject) -> [String: Any] {
        var attributes: [String: Any] = [:]
        for (name, attribute) in object.entity.attributesByName where !attribute.isTransient {
            attributes[name] = jsonValue(object.value(forKey: name))
        }
        var relationships: [String: Any] = [:]
        for (name, relationship) in object.entity.relationshipsByName {
            let value = object.value(forKey: name)
            if relationship.isToMany {
                let members: [ManagedObject] = (value as? Set<ManagedObject>).map(Array.init) ?? (value as? [ManagedObject]) ?? []
                let uris = members.map { $0.objectID.uriRepresentation().absoluteString }
                relationships[name] = relationship.isOrdered ? uris : uris.sorted()
            } else {
                relationships[name] = (value as? ManagedObject).map { $0.objectID.uriRepresentation().absoluteString } ?? NSNull()
            }
        }
        return [
            "entity": object.entity.name, "id": object.objectID.uriRepresentation().absoluteString,
            "attributes": attributes, "relationships": relationships,
        ]
    }

    private static let dates = Date.ISO8601FormatStyle(includingFractionalSeconds: true)

    /// A value JSON can hold.
    static func jsonValue(_ value: Any?) -> Any {
        switch value {
        case nil: return NSNull()
        case let v as String: return v
        case let v as Bool: return v
        case let v as Int: return v
        case let v as Int16: return Int(v)
        case let v as Int32: return Int(v)
        case let v as Int64: return v
        case let v as Double: return v.isFinite ? v : "\(v)"
        case let v as Float: return v.isFinite ? Double(v) : "\(v)"
        case let v as Decimal: return "\(v)"
        case let v as Date: return dates.format(v)
        case let v as Data: return v.base64EncodedString()
        case let v as UUID: return v.uuidString
        case let v as URL: return v.absoluteString
        case let v as [Any]: return v.map(jsonValue)
        case let v as [String: Any]: return v.mapValues(jsonValue)
        case let v?: return "\(v)"
        }
    }
}

/// The logging of the coordinators `export` and `inspect` open: errors only. Standard error
/// carries a command's own errors, nothing on success (a crossed inverse in an old model, which
/// the coordinator logs as a warning, does not make reading the store fail).
enum ToolLogging {
    static var quiet: Logger {
        var logger = Logger(label: "objectgraph")
        logger.logLevel = .error
        return logger
    }
}
