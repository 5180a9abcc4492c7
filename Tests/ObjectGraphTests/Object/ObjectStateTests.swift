import Testing
import ObjectGraph
@testable import ObjectGraphCore

@Suite("An object's state: phases and the transitions that say what to do next")
struct ObjectStateTests {
    private func state(after steps: (inout ObjectState) -> Void) -> ObjectState {
        var state = ObjectState()
        steps(&state)
        return state
    }

    @Test func aNewObjectIsDetachedUntilInserted() {
        var state = ObjectState()
        #expect(state.phase == .detached)
        #expect(!state.hasChanges && !state.isInserted && !state.isFault)
        state.insert()
        #expect(state.phase == .inserted)
        #expect(state.isInserted && state.hasChanges && !state.isUpdated && !state.isDeleted)
    }

    @Test func anInsertedObjectDoesNotBecomeUpdatedWhenChanged() {
        var state = self.state { $0.insert() }
        let r1 = state.change()
        #expect(!r1)
        #expect(state.phase == .inserted)
    }

    @Test func aSavedObjectBecomesUpdatedOnceAndUnchangedAfterItsSave() {
        var state = self.state { $0.insert(); $0.didSave() }
        #expect(state.phase == .unchanged)
        let r2 = state.change()
        #expect(r2)
        let r3 = state.change()
        #expect(!r3)
        #expect(state.isUpdated && state.hasChanges)
        state.didSave()
        #expect(state.phase == .unchanged && !state.hasChanges)
    }

    @Test func materializingAFaultSaysWhichRowCacheReferenceToGiveBack() {
        var fault = ObjectState()
        let r4 = fault.turnIntoFault()
        #expect(!r4)
        #expect(fault.isFault)
        // Fetched as a fault with a reference, then filled with another one: the second goes back.
        let r5 = fault.holdRowCacheAsFault()
        #expect(r5)
        let r6 = fault.holdRowCacheAsFault()
        #expect(!r6)
        let r7 = fault.materialize(leased: true)
        #expect(r7 == .fill(releaseDuplicate: true))
        #expect(fault.phase == .unchanged && fault.holdsRowCache)
        // Not a fault any more: a reference leased for it goes straight back.
        let r8 = fault.materialize(leased: true)
        #expect(r8 == .keepValues(releaseLease: true))
        let r9 = fault.materialize(leased: false)
        #expect(r9 == .keepValues(releaseLease: false))
        // Turning into a fault gives the reference back, once.
        let r10 = fault.turnIntoFault()
        #expect(r10)
        #expect(!fault.holdsRowCache && fault.isFault)
        let r11 = fault.giveUpRowCache()
        #expect(!r11)
        let r12 = fault.materialize(leased: false)
        #expect(r12 == .fill(releaseDuplicate: false))
        #expect(!fault.holdsRowCache)
    }

    @Test func deletingRemembersWhatTheObjectWasAndPendsItsDeleteRulesOnce() {
        var inserted = state { $0.insert() }
        let r13 = inserted.delete()
        #expect(r13)
        #expect(inserted.phase == .deleted(.inserted))
        #expect(inserted.isInserted && inserted.isDeleted && inserted.isInDeletedSet)
        let r14 = inserted.delete()
        #expect(!r14)
        let r15 = inserted.takeDeleteRules()
        #expect(r15)
        let r16 = inserted.takeDeleteRules()
        #expect(!r16)

        var updated = state { $0.insert(); $0.didSave(); _ = $0.change() }
        let r17 = updated.delete()
        #expect(r17)
        #expect(updated.phase == .deleted(.updated))
        #expect(updated.isUpdated && !updated.isInserted)
        updated.discardChanges()
        #expect(updated.phase == .unchanged)
        let r18 = updated.takeDeleteRules()
        #expect(!r18, "a rollback drops pending delete rules")

        var unchanged = state { $0.insert(); $0.didSave() }
        let r19 = unchanged.delete()
        #expect(r19)
        unchanged.didSaveDelete()
        #expect(unchanged.phase == .invalid && !unchanged.hasChanges)
    }

    @Test func aRowDeletedElsewhereMakesASavedObjectDeletedWithNothingToWrite() {
        var fault = ObjectState()
        _ = fault.turnIntoFault()
        _ = fault.holdRowCacheAsFault()
        let action = fault.deleteElsewhere()
        #expect(action == .init(fillDefaults: true, releaseRowCache: true, recordDelete: true))
        #expect(fault.isDeletedElsewhere && fault.isInDeletedSet && !fault.holdsRowCache)
        let r20 = fault.deleteElsewhere()
        #expect(r20 == nil, "known already")

        var deleted = state { $0.insert(); $0.didSave(); _ = $0.delete() }
        let r21 = deleted.deleteElsewhere()
        #expect(r21?.fillDefaults == false)
        let r22 = deleted.takeDeleteRules()
        #expect(!r22, "its delete rules ran where it was deleted")

        var inserted = state { $0.insert() }
        let r23 = inserted.deleteElsewhere()
        #expect(r23 == nil, "an inserted object has no row to lose")
        #expect(inserted.phase == .inserted)
    }

    @Test func anInaccessibleFaultIsDeletedInNameOnly() {
        var fault = ObjectState()
        _ = fault.turnIntoFault()
        fault.markInaccessible()
        #expect(fault.isDeleted && !fault.isInDeletedSet)
    }

    @Test func conflictResolutionTransitions() {
        var updated = state { $0.insert(); $0.didSave(); _ = $0.change() }
        let r24 = updated.settleIfNoChangesLeft()
        #expect(r24)
        let r25 = updated.settleIfNoChangesLeft()
        #expect(!r25)
        _ = updated.change()
        updated.reinsert()
        #expect(updated.phase == .inserted)
        var upserted = state { $0.insert() }
        upserted.becomeExistingRow(changed: false)
        #expect(upserted.phase == .unchanged)
        upserted.insert()
        upserted.becomeExistingRow(changed: true)
        #expect(upserted.phase == .updated)
    }

    @Test func changesAreReportedOnceAndAnInsertOnlyOnce() {
        var state = self.state { $0.insert() }
        let r26 = state.noteUnreported()
        #expect(r26)
        let r27 = state.noteUnreported()
        #expect(!r27)
        let r28 = state.report()
        #expect(r28 == .inserted)
        let r29 = state.noteUnreported()
        #expect(r29)
        let r30 = state.report()
        #expect(r30 == .updated, "a second report of an inserted object is an update")
        state.didSave()
        let r31 = state.report()
        #expect(r31 == nil)
        _ = state.delete()
        let r32 = state.report()
        #expect(r32 == nil, "deletes are reported by processPendingChanges, not here")
    }
}
