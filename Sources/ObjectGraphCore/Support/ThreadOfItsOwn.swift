#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A thread of its own for blocking work, made with `pthread_create`.
///
/// Not Foundation's `Thread`: on Linux a `Thread` keeps its block, and whatever the block captured,
/// until the thread's thread-specific data is destroyed as it exits, after libdispatch has torn
/// down its own. An object released there whose `deinit` touches Dispatch (a GRDB connection that
/// closes, a context's queue) makes libdispatch set its thread data up again, and libdispatch then
/// frees its cache of continuations a second time when the thread ends: a double free that glibc
/// reports later, anywhere, as "unaligned fastbin chunk detected". Here the body, and what it
/// captured, is released before the thread starts to exit.
package enum ThreadOfItsOwn {
    private final class Work {
        let body: () -> Void
        init(_ body: @escaping () -> Void) { self.body = body }
    }

    /// Starts `body` on a new detached thread.
    ///
    /// It is a programmer error if the system cannot create a thread.
    package static func start(stackSize: Int? = nil, _ body: @escaping @Sendable () -> Void) {
        _ = create(stackSize: stackSize, detached: true, body)
    }

    /// Runs `body` on a new thread (with a stack of `stackSize` bytes, when given) and waits for it.
    ///
    /// It is a programmer error if the system cannot create a thread.
    package static func run(stackSize: Int? = nil, _ body: () -> Void) {
        withoutActuallyEscaping(body) { body in
            let thread = create(stackSize: stackSize, detached: false, body)
            pthread_join(thread, nil)
        }
    }

    private static func create(stackSize: Int?, detached: Bool, _ body: @escaping () -> Void) -> pthread_t {
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        defer { pthread_attr_destroy(&attributes) }
        if let stackSize { pthread_attr_setstacksize(&attributes, max(stackSize, Int(PTHREAD_STACK_MIN))) }
        if detached { pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED)) }
        let context = Unmanaged.passRetained(Work(body)).toOpaque()
        #if canImport(Darwin)
        var thread: pthread_t?
        #else
        var thread = pthread_t()
        #endif
        let status = pthread_create(&thread, &attributes, { context in
            // Released when this closure returns, while the thread is still fully alive.
            let work = Unmanaged<Work>.fromOpaque(context!).takeRetainedValue()
            work.body()
            return nil
        }, context)
        guard status == 0 else {
            Unmanaged<Work>.fromOpaque(context).release()
            fatalError("ObjectGraph: cannot create a thread (pthread_create returned \(status))")
        }
        #if canImport(Darwin)
        return thread!
        #else
        return thread
        #endif
    }
}
