import Foundation
import GRDB
import Testing

import ObjectGraph
@testable import ObjectGraphCore

/// Binary attributes that allow external storage are kept as Core Data keeps them in its SQLite
/// store: a marker byte and the value, or a marker byte and the name of a file in
/// `.<StoreName>_SUPPORT/_EXTERNAL_DATA`.
@Suite("External binary storage")
struct ExternalStorageTests {
    static func model() -> ManagedObjectModel {
        let photo = AttributeDescription(name: "photo", attributeType: .binaryData)
        photo.allowsExternalBinaryDataStorage = true
        return ManagedObjectModel(entities: [
            EntityDescription(
                name: "Picture", properties: [.attribute("title", .string), photo, .attribute("thumbnail", .binaryData)],
                uniquenessConstraints: [["title"]]),
        ])
    }

    private static func raw(_ url: URL, _ column: String, title: String) throws -> Data? {
        try DatabaseQueue(path: url.path).read {
            try Data.fetchOne($0, sql: "SELECT \(column) FROM ZPICTURE WHERE ZTITLE = ?", arguments: [title])
        }
    }

    private static func context(_ url: URL) throws -> (PersistentStoreCoordinator, ManagedObjectContext) {
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model())
        try coordinator.addPersistentStore(type: .sqlite, at: url)
        let context = ManagedObjectContext(concurrencyType: .confinement)
        context.persistentStoreCoordinator = coordinator
        return (coordinator, context)
    }

    @Test("small values stay in the row behind the 0x01 marker; large ones go to a file named in the row behind 0x02")
    func valuesAreStoredAsCoreDataStoresThem() throws {
        let directory = TemporaryDirectory()
        let url = directory.file("Photos.sqlite")
        let small = Data("tiny".utf8)
        let large = Data((0..<300_000).map { UInt8($0 % 251) })
        do {
            let (coordinator, context) = try Self.context(url)
            _ = context.insert("Picture", ["title": "small", "photo": small, "thumbnail": small])
            _ = context.insert("Picture", ["title": "large", "photo": large])
            try context.save()
            for store in coordinator.persistentStores { try coordinator.removePersistentStore(store) }
        }
        #expect(try Self.raw(url, "ZPHOTO", title: "small") == Data([1]) + small)
        #expect(try Self.raw(url, "ZTHUMBNAIL", title: "small") == small, "an attribute without external storage is unchanged")
        let reference = try #require(try Self.raw(url, "ZPHOTO", title: "large"))
        #expect(reference.first == 2 && reference.last == 0 && reference.count == 38)
        let name = try #require(String(data: reference.dropFirst().dropLast(), encoding: .utf8))
        #expect(UUID(uuidString: name) != nil)
        let file = directory.url.appendingPathComponent(".Photos_SUPPORT/_EXTERNAL_DATA/\(name)")
        #expect(try Data(contentsOf: file) == large)

        let (_, context) = try Self.context(url)
        let pictures = try context.all("Picture", sortedBy: "title")
        #expect(pictures.map { $0.value(forKey: "photo") as? Data } == [large, small])
        // A new large value gets a file of its own; a small one goes back into the row.
        let larger = large + Data([7, 7, 7])
        pictures[0].setValue(larger, forKey: "photo")
        pictures[1].setValue(large, forKey: "photo")
        try context.save()
        let (_, fresh) = try Self.context(url)
        #expect(try fresh.all("Picture", sortedBy: "title").map { $0.value(forKey: "photo") as? Data } == [larger, large])
        #expect(try Self.raw(url, "ZPHOTO", title: "large") != reference)
        // The file the old value was in is gone; the new one is the only file left.
        let folder = directory.url.appendingPathComponent(".Photos_SUPPORT/_EXTERNAL_DATA")
        #expect(!FileManager.default.fileExists(atPath: file.path))
        func referenced() throws -> Set<String> {
            Set(try ["large", "small"].compactMap { try Self.raw(url, "ZPHOTO", title: $0) }.compactMap { reference in
                reference.first == 2 ? String(data: reference.dropFirst().dropLast(), encoding: .utf8) : nil
            })
        }
        func files() throws -> Set<String> { Set(try FileManager.default.contentsOfDirectory(atPath: folder.path)) }
        #expect(try referenced().count == 2)
        #expect(try files() == referenced())

        // A save that fails leaves no file behind; a delete removes the row's file once it commits.
        let failing = try Self.context(url).1
        _ = failing.insert("Picture", ["title": "large", "photo": larger])
        #expect(throws: ObjectGraphError.self) { try failing.save() }
        #expect(try files() == referenced())
        for picture in try fresh.all("Picture") { fresh.delete(picture) }
        try fresh.save()
        #expect(try files() == [])
    }

    @Test("a store as Core Data wrote it reads both encodings; a missing file is an error naming it")
    func applesEncodingReads() throws {
        let directory = TemporaryDirectory()
        let url = directory.file("App.sqlite")
        do {
            let (coordinator, context) = try Self.context(url)
            _ = context.insert("Picture", ["title": "inline"])
            _ = context.insert("Picture", ["title": "external"])
            _ = context.insert("Picture", ["title": "unmarked"])
            try context.save()
            for store in coordinator.persistentStores { try coordinator.removePersistentStore(store) }
        }
        let folder = directory.url.appendingPathComponent(".App_SUPPORT/_EXTERNAL_DATA")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let name = "0BE4B6BF-0F2A-4D5C-9E1B-3C27A31D6E11"
        try Data("from a file".utf8).write(to: folder.appendingPathComponent(name))
        try DatabaseQueue(path: url.path).write { db in
            try db.execute(sql: "UPDATE ZPICTURE SET ZPHOTO = ? WHERE ZTITLE = 'inline'", arguments: [Data([1]) + Data("in the row".utf8)])
            try db.execute(sql: "UPDATE ZPICTURE SET ZPHOTO = ? WHERE ZTITLE = 'external'", arguments: [Data([2]) + Data(name.utf8) + Data([0])])
            try db.execute(sql: "UPDATE ZPICTURE SET ZPHOTO = ? WHERE ZTITLE = 'unmarked'", arguments: [Data([0xFF, 0xD8])])
        }
        let (_, context) = try Self.context(url)
        let photos = try context.all("Picture", sortedBy: "title").map { $0.value(forKey: "photo") as? Data }
        #expect(photos == [Data("from a file".utf8), Data("in the row".utf8), Data([0xFF, 0xD8])])

        try FileManager.default.removeItem(at: folder.appendingPathComponent(name))
        let (_, again) = try Self.context(url)
        let error = try #require(throws: ObjectGraphError.self) { try again.all("Picture") }
        #expect(error.code == .io && error.message.contains(name) && error.message.contains("Picture.photo"))
    }

    @Test("a batch update writes the marker too")
    func batchUpdate() throws {
        let directory = TemporaryDirectory()
        let url = directory.file("Batch.sqlite")
        let (_, context) = try Self.context(url)
        _ = context.insert("Picture", ["title": "one"])
        try context.save()
        let request = BatchUpdateRequest(entityName: "Picture")
        request.propertiesToUpdate = ["photo": Data("batched".utf8)]
        try context.execute(request)
        #expect(try Self.raw(url, "ZPHOTO", title: "one") == Data([1]) + Data("batched".utf8))
        let (_, fresh) = try Self.context(url)
        #expect(try fresh.all("Picture").first?.value(forKey: "photo") as? Data == Data("batched".utf8))
    }
}
