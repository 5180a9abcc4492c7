import Foundation
import Testing
import ObjectGraph
@testable import ObjectGraphCore

@Suite("Asynchronous fetch calls its completion on the context's queue after execute returns")
struct AsynchronousFetchTests {
    /// What a completion saw, recorded on the context's queue and read after it signalled.
    final class Outcome: @unchecked Sendable {  // written once on the context's queue before `done` is signalled
        let done = DispatchSemaphore(value: 0)
        var executeHadReturned = false
        var ranOnContextQueue = false
        var sameResultObject = false
        var titles: [String]?
        var error: (any Error)?
        var completed: Int64 = -1
        var total: Int64 = -1

        func wait() -> Bool { done.wait(timeout: .now() + 10) == .success }
    }

    private func seed(_ stack: TestStack, count: Int) throws {
        let context = stack.context("seed")
        for i in 0..<count { _ = context.insert("Note", ["title": "n\(i)", "rank": Int64(i)]) }
        try context.save()
    }

    /// Executes an asynchronous fetch on a private context, then runs `afterExecute` in the same block.
    private func run(
        _ stack: TestStack, request: FetchRequest<ManagedObject>, estimate: Int = 0,
        afterExecute: (AsynchronousFetchResult<ManagedObject>) -> Void = { _ in }
    ) throws -> Outcome {
        let context = stack.privateContext()
        let outcome = Outcome()
        let returned = Protected(false)
        let box = Protected<AsynchronousFetchResult<ManagedObject>?>(nil)
        let fetch = AsynchronousFetchRequest(fetchRequest: request) { result in
            outcome.executeHadReturned = returned.withLock { $0 }
            outcome.ranOnContextQueue = context.isOnQueue
            // Taken out of the box: the result holds the request, which holds this block.
            outcome.sameResultObject = box.withLock { boxed in defer { boxed = nil }; return boxed } === result
            outcome.titles = result.finalResult?.compactMap { $0.value(forKey: "title") as? String }
            outcome.error = result.operationError
            outcome.completed = result.progress?.completedUnitCount ?? -1
            outcome.total = result.progress?.totalUnitCount ?? -1
            outcome.done.signal()
        }
        fetch.estimatedResultCount = estimate
        #expect(fetch.requestType == .fetchRequestType)
        try context.performAndWait {
            let result = try #require(try context.execute(fetch) as? AsynchronousFetchResult<ManagedObject>)
            #expect(result.managedObjectContext === context)
            #expect(result.fetchRequest === fetch)
            #expect(result.finalResult == nil)
            box.withLock { $0 = result }
            afterExecute(result)
            returned.withLock { $0 = true }
        }
        return outcome
    }

    @Test(arguments: StoreKind.everyStore)
    func theCompletionGetsTheResultsAndTheProgressCountsTheRows(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        try seed(stack, count: 5)
        let request = FetchRequest<ManagedObject>(entityName: "Note")
        request.predicate = FetchPredicate(format: "rank >= 2")
        request.sortDescriptors = [FetchSortDescriptor(key: "rank")]
        let outcome = try run(stack, request: request)
        #expect(outcome.wait())
        #expect(outcome.executeHadReturned)
        #expect(outcome.ranOnContextQueue)
        #expect(outcome.sameResultObject)
        #expect(outcome.titles == ["n2", "n3", "n4"])
        #expect(outcome.error == nil)
        #expect(outcome.completed == 3)
        #expect(outcome.total == 3)
    }

    @Test(arguments: StoreKind.everyStore)
    func anEstimateIsTheProgresssTotalUntilTheFetchEnds(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        try seed(stack, count: 2)
        let outcome = try run(stack, request: FetchRequest<ManagedObject>(entityName: "Note"), estimate: 10) { result in
            #expect(result.progress?.totalUnitCount == 10)
            #expect(result.progress?.completedUnitCount == 0)
        }
        #expect(outcome.wait())
        #expect(outcome.total == 10)
        #expect(outcome.completed == 2)
    }

    @Test(arguments: StoreKind.everyStore)
    func cancellingGivesTheCompletionNoResultAndNoError(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        try seed(stack, count: 3)
        let cancelled = try run(stack, request: FetchRequest<ManagedObject>(entityName: "Note")) { $0.cancel() }
        #expect(cancelled.wait())
        #expect(cancelled.executeHadReturned)
        #expect(cancelled.titles == nil)
        #expect(cancelled.error == nil)
        #expect(cancelled.completed == 0)
        let viaProgress = try run(stack, request: FetchRequest<ManagedObject>(entityName: "Note")) { $0.progress?.cancel() }
        #expect(viaProgress.wait())
        #expect(viaProgress.titles == nil)
        #expect(viaProgress.error == nil)
    }

    @Test(arguments: StoreKind.everyStore)
    func aFailingFetchReportsItsError(_ kind: StoreKind) throws {
        let stack = try TestStack(kind)
        let outcome = try run(stack, request: FetchRequest<ManagedObject>(entityName: "Nope"))
        #expect(outcome.wait())
        #expect(outcome.titles == nil)
        #expect((outcome.error as? ObjectGraphError)?.code == .invalidFetchRequest)
    }

    @Test func aConfinementContextRefusesIt() throws {
        let stack = try TestStack(.inMemory)
        let request = AsynchronousFetchRequest(fetchRequest: FetchRequest<ManagedObject>(entityName: "Note"))
        #expect(throws: ObjectGraphError.unsupported) { try stack.context().execute(request) }
    }
}
