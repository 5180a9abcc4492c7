import Foundation

/// A value guarded by a pthread mutex, with the standard library `Mutex`'s `withLock` shape.
///
/// ObjectGraph uses it rather than `Synchronization.Mutex` because on Linux `Mutex` locks with a
/// futex inside the (uninstrumented) runtime, which ThreadSanitizer cannot see: it would report
/// races that are not there. ThreadSanitizer intercepts pthread mutexes, so real races stay visible.
final class Protected<State>: @unchecked Sendable {  // `state` is only touched under `mutex`
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var state: State

    init(_ state: State) {
        self.state = state
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    /// Runs `body` with exclusive access to the value.
    @inline(__always)
    func withLock<Result>(_ body: (inout State) throws -> Result) rethrows -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&state)
    }
}
