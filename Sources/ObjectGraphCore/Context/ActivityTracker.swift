import Foundation

/// Counts the work in flight on a set of contexts — blocks submitted with `perform` and not yet
/// finished, saves under way — so their owner (a container) can wait for all of it to finish
/// before the program exits.
final class ActivityTracker: Sendable {
    private struct State {
        var blocks = 0
        var saves = 0
        var isClosed = false
    }

    private let state = Protected(State())
    private let condition = NSCondition()

    /// Work in flight: blocks submitted and not finished, and saves under way.
    var outstanding: (blocks: Int, saves: Int) { state.withLock { ($0.blocks, $0.saves) } }

    var isClosed: Bool { state.withLock { $0.isClosed } }

    /// Counts a submitted block; false (and not counted) once the tracker is closed.
    func blockSubmitted() -> Bool {
        state.withLock { state in
            if state.isClosed { return false }
            state.blocks += 1
            return true
        }
    }
    func blockFinished() { finish { $0.blocks -= 1 } }
    func saveStarted() { state.withLock { $0.saves += 1 } }
    func saveFinished() { finish { $0.saves -= 1 } }

    /// Refuses new work from now on (outstanding work still finishes).
    func close() { state.withLock { $0.isClosed = true } }

    private func finish(_ change: (inout State) -> Void) {
        let idle = state.withLock { state -> Bool in
            change(&state)
            return state.blocks == 0 && state.saves == 0
        }
        if idle {
            condition.lock()
            condition.broadcast()
            condition.unlock()
        }
    }

    /// Waits until no work is in flight, or until the deadline; returns whether everything finished.
    func waitUntilIdle(deadline: Date) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        while true {
            let (blocks, saves) = outstanding
            if blocks == 0 && saves == 0 { return true }
            if !condition.wait(until: min(deadline, Date().addingTimeInterval(0.05))) && Date() >= deadline {
                let (b, s) = outstanding
                return b == 0 && s == 0
            }
        }
    }
}
