import Foundation
import Testing
import ObjectGraph
@testable import ObjectGraphCore

@Suite("Batch delete removes rows and honours delete rules")
struct BatchDeleteTests {
    @Test(arguments: StoreKind.everyStore)
    func theRowsAFetchMatchesAreDeletedAndEachResultTypeReportsThem(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        let context = stack.context()
        let notes = (0..<6).map { context.insert("Note", ["title": "n\($0)", "rank": Int64($0)]) }
        try context.save()
        #expect(BatchDeleteRequestResultType.statusOnly.rawValue == 0)
        #expect(BatchDeleteRequestResultType.objectIDs.rawValue == 1)
        #expect(BatchDeleteRequestResultType.count.rawValue == 2)

        let request = FetchRequest<ManagedObject>(entityName: "Note")
        request.predicate = FetchPredicate(format: "rank < 2")
        let byFetch = BatchDeleteRequest(fetchRequest: request)
        #expect(byFetch.requestType == .batchDeleteRequestType)
        byFetch.resultType = .objectIDs
        let deleted = try #require((try context.execute(byFetch) as? BatchDeleteResult)?.result as? [ManagedObjectID])
        #expect(Set(deleted) == [notes[0].objectID, notes[1].objectID])

        let byIDs = BatchDeleteRequest(objectIDs: [notes[2].objectID, notes[3].objectID, notes[0].objectID])
        byIDs.resultType = .count
        #expect((try context.execute(byIDs) as? BatchDeleteResult)?.result as? Int == 2)

        let typed = FetchRequest<ManagedObjectID>(entityName: "Note")
        typed.predicate = FetchPredicate(format: "rank == 4")
        let status = BatchDeleteRequest(fetchRequest: typed)
        #expect(status.fetchRequest.entityName == "Note")
        #expect((try context.execute(status) as? BatchDeleteResult)?.result as? Bool == true)
        #expect(try stack.stored("Note", sortedBy: "rank").map { $0.value(forKey: "title") as? String } == ["n5"])
    }

    @Test(arguments: StoreKind.everyStore)
    func fetchLimitAndSortChooseTheRows(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        let context = stack.context()
        for rank in [3, 1, 2, 5] { _ = context.insert("Note", ["title": "r\(rank)", "rank": Int64(rank)]) }
        try context.save()
        let request = FetchRequest<ManagedObject>(entityName: "Note")
        request.sortDescriptors = [FetchSortDescriptor(key: "rank", ascending: false)]
        request.fetchLimit = 2
        try context.execute(BatchDeleteRequest(fetchRequest: request))
        #expect(try stack.stored("Note", sortedBy: "rank").map { $0.value(forKey: "rank") as? Int64 } == [1, 2])
    }

    @Test(arguments: StoreKind.everyStore)
    func aCascadeReachesChildrenAndTheirJoinTableRows(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        let context = stack.context()
        let inbox = context.insert("Folder", ["name": "Inbox"])
        let keep = context.insert("Folder", ["name": "Keep"])
        let tag = context.insert("Tag", ["name": "t"])
        let doomed = (0..<3).map { context.insert("Note", ["title": "d\($0)", "folder": inbox, "tags": Set([tag])]) }
        let kept = context.insert("Note", ["title": "k", "folder": keep, "tags": Set([tag])])
        try context.save()

        let request = FetchRequest<ManagedObject>(entityName: "Folder")
        request.predicate = FetchPredicate(format: "name == %@", "Inbox")
        let delete = BatchDeleteRequest(fetchRequest: request)
        delete.resultType = .objectIDs
        let deleted = try #require((try context.execute(delete) as? BatchDeleteResult)?.result as? [ManagedObjectID])
        #expect(deleted.first == inbox.objectID)
        #expect(Set(deleted) == Set([inbox.objectID] + doomed.map(\.objectID)))

        let reader = stack.context("reader")
        #expect(try reader.all("Note", sortedBy: "title").map { $0.value(forKey: "title") as? String } == ["k"])
        #expect(try reader.all("Folder", sortedBy: "name").map { $0.value(forKey: "name") as? String } == ["Keep"])
        let readTag = try reader.existingObject(with: tag.objectID)
        #expect((readTag.value(forKey: "notes") as? Set<ManagedObject>)?.map(\.objectID) == [kept.objectID])
    }

    @Test(arguments: StoreKind.everyStore)
    func aDenyRuleWithADestinationRefusesTheWholeRequestNamingTheObject(_ kind: StoreKind) throws {
        let stack = try TestStack(kind, model: BatchModels.rules())
        let context = stack.context()
        let empty = context.insert("Account", ["number": "1"])
        let held = context.insert("Account", ["number": "2"])
        let card = context.insert("Card", ["label": "c", "account": held])
        try context.save()

        let error = try #require(throws: ObjectGraphError.self) {
            try context.execute(BatchDeleteRequest(fetchRequest: FetchRequest<ManagedObject>(entityName: "Account")))
        }
        #expect(error.code == .validation)
        #expect(error.objectID == held.objectID)
        #expect(error.key == "cards")
        #expect(error.message.contains(held.objectID.description))
        #expect(Set(try stack.stored("Account", sortedBy: "number").map(\.objectID)) == [empty.objectID, held.objectID])

        // Deleting the card first, in the same request, lets the account go.
        try context.execute(BatchDeleteRequest(objectIDs: [card.objectID]))
        try context.execute(BatchDeleteRequest(objectIDs: [held.objectID]))
        #expect(try stack.stored("Account", sortedBy: "number").map(\.objectID) == [empty.objectID])
    }

    @Test(arguments: StoreKind.everyStore)
    func survivorsPointingAtADeletedRowHaveTheRelationshipClearedAndANewVersion(_ kind: StoreKind) throws {
        let stack = try TestStack(kind, model: BatchModels.rules())
        let context = stack.context()
        let team = context.insert("Team", ["name": "t"])
        let user = context.insert("User", ["email": "a@x", "active": true, "team": team])
        try context.save()
        let before = try #require(try stack.storedVersion(of: user.objectID))

        let delete = BatchDeleteRequest(objectIDs: [team.objectID])
        delete.resultType = .objectIDs
        #expect((try context.execute(delete) as? BatchDeleteResult)?.result as? [ManagedObjectID] == [team.objectID])
        #expect(try stack.storedVersion(of: user.objectID) == before + 1)
        let read = try stack.context("reader").existingObject(with: user.objectID)
        #expect(read.value(forKey: "team") == nil)
    }

    @Test(arguments: StoreKind.everyStore)
    func deletedDestinationsLeaveAToManyRelationshipWithoutInverse(_ kind: StoreKind) throws {
        let model = ManagedObjectModel(entities: [
            EntityDescription(name: "Playlist", properties: [
                .attribute("name", .string),
                .relationship("songs", destination: "Song", toMany: true),
            ]),
            EntityDescription(name: "Song", properties: [.attribute("title", .string)]),
        ])
        let stack = try TestStack(kind, model: model)
        let context = stack.context()
        let songs = ["a", "b"].map { context.insert("Song", ["title": $0]) }
        let playlist = context.insert("Playlist", ["name": "p", "songs": Set(songs)])
        try context.save()
        try context.execute(BatchDeleteRequest(objectIDs: [songs[0].objectID]))
        let read = try stack.context("reader").existingObject(with: playlist.objectID)
        #expect((read.value(forKey: "songs") as? Set<ManagedObject>)?.map(\.objectID) == [songs[1].objectID])
    }

    @Test(arguments: StoreKind.everyStore)
    func aTemporaryIDIsRefused(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        let context = stack.context()
        let note = context.insert("Note", ["title": "unsaved"])
        #expect(throws: ObjectGraphError.temporaryObjectID) { try context.execute(BatchDeleteRequest(objectIDs: [note.objectID])) }
    }
}
