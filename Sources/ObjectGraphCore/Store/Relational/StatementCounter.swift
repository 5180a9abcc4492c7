import Synchronization

/// How many SQL statements a store has run, counted from any thread.
final class StatementCounter: Sendable {
    private let count = Atomic<Int>(0)

    var value: Int { count.load(ordering: .relaxed) }

    func add(_ n: Int) { count.add(n, ordering: .relaxed) }
}
