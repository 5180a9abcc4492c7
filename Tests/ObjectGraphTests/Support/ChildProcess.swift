import Foundation
import ObjectGraph
@testable import ObjectGraphCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A child process started with `posix_spawn`, its standard output and error read as they come by
/// two threads of its own, and reaped with `waitpid`.
///
/// Foundation's `Process` is not used: on Linux its `waitUntilExit()` runs the calling thread's run
/// loop, so the test runner's libdispatch worker threads would get run loops, torn down with the
/// thread's other thread-specific data after libdispatch's own. Anything there that touches
/// Dispatch corrupts the heap (see `ThreadOfItsOwn`); nothing here does.
final class ChildProcess: @unchecked Sendable {  // output is guarded by `lock`, `exit` by `reaping`
    let pid: pid_t
    private let lock = NSLock()
    /// Held while the child is reaped (guards `exit`).
    private let reaping = NSLock()
    /// Held while pipes are made and a child is spawned.
    private static let spawning = NSLock()
    private var output = Data()
    private var errors = Data()
    private var exit: Int32?
    /// Left by each reader thread once its pipe reached its end.
    private let readers = DispatchGroup()

    /// Starts `executable` with `arguments` and `environment`; stdin is /dev/null. With
    /// `mergingErrors`, standard error goes to the same pipe as standard output.
    init(_ executable: URL, _ arguments: [String], environment: [String: String], mergingErrors: Bool) throws {
        Self.spawning.lock()
        defer { Self.spawning.unlock() }
        let out = try Self.makePipe()
        let err = mergingErrors ? nil : try Self.makePipe()

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, out.write, 1)
        posix_spawn_file_actions_adddup2(&actions, err?.write ?? out.write, 2)

        // The child starts with no blocked signals and every signal at its default action.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigmask(&attributes, &none)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in Int32(1)..<32 where signal != SIGKILL && signal != SIGSTOP { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        let argv = ([executable.path] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for pointer in argv { free(pointer) }
            for pointer in envp { free(pointer) }
        }
        var pid = pid_t()
        let status = posix_spawn(&pid, executable.path, &actions, &attributes, argv, envp)
        close(out.write)
        if let err { close(err.write) }
        guard status == 0 else {
            close(out.read)
            if let err { close(err.read) }
            throw POSIXError(POSIXErrorCode(rawValue: status) ?? .EIO)
        }
        self.pid = pid
        startReader(out.read, isError: false)
        if let err { startReader(err.read, isError: true) }
    }

    /// Standard output so far (with standard error, when merged).
    var standardOutput: Data { lock.withLock { output } }
    /// Standard error so far (empty when merged into standard output).
    var standardError: Data { lock.withLock { errors } }

    /// Whether the child has not ended yet.
    var isRunning: Bool { reap(blocking: false) == nil }

    /// Sends a signal to the child.
    func signal(_ signal: Int32) { kill(pid, signal) }

    /// Waits for the child to end and its output to be read; returns its exit status, or the
    /// signal that ended it.
    func wait() -> (status: Int32, signaled: Bool) {
        let status = reap(blocking: true)!
        readers.wait()
        // `waitpid`'s status: the low 7 bits are the signal that ended the child (0 when it exited).
        let signal = status & 0x7f
        return signal == 0 ? ((status >> 8) & 0xff, false) : (signal, true)
    }

    /// The raw `waitpid` status once the child ended; nil while it runs (when not blocking).
    private func reap(blocking: Bool) -> Int32? {
        // A lock of its own: a blocking wait must not keep the readers from storing output, or a
        // child that writes more than a pipe holds would wait for them while they wait for it.
        reaping.lock()
        defer { reaping.unlock() }
        if let exit { return exit }
        var status: Int32 = 0
        while true {
            let result = waitpid(pid, &status, blocking ? 0 : WNOHANG)
            if result == pid {
                exit = status
                return status
            }
            if result == -1 && errno == EINTR { continue }
            return nil
        }
    }

    private static func makePipe() throws -> (read: Int32, write: Int32) {
        var fds: [Int32] = [0, 0]
        // Close-on-exec: another child must not inherit this pipe's ends (a write end held
        // elsewhere would keep the reader from seeing the end of the output). Pipes are made and
        // children spawned under `spawning`, so no child starts between `pipe` and `fcntl`.
        guard pipe(&fds) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        return (fds[0], fds[1])
    }

    /// A thread of its own (no Foundation `Thread`, no run loop) that reads `fd` to its end.
    private func startReader(_ fd: Int32, isError: Bool) {
        readers.enter()
        ThreadOfItsOwn.start { [self] in
            var buffer = [UInt8](repeating: 0, count: 1 << 16)
            while true {
                let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if count > 0 {
                    let data = Data(buffer[0..<count])
                    lock.withLock { if isError { errors.append(data) } else { output.append(data) } }
                } else if count < 0 && errno == EINTR {
                    continue
                } else {
                    break
                }
            }
            close(fd)
            readers.leave()
        }
    }
}
