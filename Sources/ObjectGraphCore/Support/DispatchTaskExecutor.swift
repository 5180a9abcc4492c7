import Dispatch

/// Runs Swift tasks on Dispatch's global queue rather than on Swift's cooperative pool.
///
/// ObjectGraph's API is mostly synchronous, and its callers block threads, cooperative ones
/// included (a test, `performAndWait` called from `async` code). Work ObjectGraph starts in a task
/// and that such a caller waits for (an asynchronous fetch's read) must not need a cooperative
/// thread to make progress, or callers blocking every one of them would wait for ever.
final class DispatchTaskExecutor: TaskExecutor {
    static let shared = DispatchTaskExecutor()

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        DispatchQueue.global().async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
