import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Now, in nanoseconds of a monotonic clock: every time of the run (requests, the restart) is on it.
@inline(__always) func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

/// Runs a command with the shell; its exit status (`system`: Foundation's Process on Linux can miss
/// the exit of a shell that leaves a command in the background).
@discardableResult
func shell(_ command: String) -> Int32 {
    let status = system(command)
    return status == -1 ? -1 : (status >> 8) & 0xff
}

func shellOrThrow(_ command: String) throws {
    let status = shell(command)
    guard status == 0 else { throw LoadTestError("`\(command)` failed (exit \(status))") }
}

struct LoadTestError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A free TCP port on the loopback interface (the system's choice).
func freePort() -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = 0
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
    return Int(UInt16(bigEndian: address.sin_port))
}

/// A throwaway PostgreSQL 15 cluster on a free loopback port, in a folder of its own; stopped and
/// removed by ``stop()``, or by a watchdog when this process ends however it ends.
final class Cluster: @unchecked Sendable {
    let folder: String
    let port: Int
    let bin = "/usr/lib/postgresql/15/bin"
    private let asServer = geteuid() == 0 ? "runuser -u postgres -- " : ""
    private var stopped = false

    init(folder: String) throws {
        self.folder = folder
        port = freePort()
        let own = geteuid() == 0 ? "chown postgres:postgres '\(folder)' && " : ""
        try shellOrThrow("rm -rf '\(folder)' && mkdir -p '\(folder)' && \(own)"
            + "\(asServer)\(bin)/initdb -D '\(folder)/data' -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 --no-sync >'\(folder)/initdb.log' 2>&1")
        try shellOrThrow("\(asServer)\(bin)/pg_ctl -D '\(folder)/data' -o '-p \(port) -c listen_addresses=127.0.0.1 -k \(folder) -c fsync=off -c max_connections=200' "
            + "-l '\(folder)/postgres.log' -w -t 60 start >/dev/null")
        // However this process ends, the cluster stops and its folder goes.
        shell("( while kill -0 \(getpid()) 2>/dev/null; do sleep 1; done; \(asServer)\(bin)/pg_ctl -D '\(folder)/data' -m immediate -w stop; rm -rf '\(folder)' ) </dev/null >/dev/null 2>&1 &")
    }

    func url(_ database: String) -> URL { URL(string: "postgres://postgres@127.0.0.1:\(port)/\(database)")! }

    func createDatabase(_ name: String) throws {
        try shellOrThrow("psql 'postgres://postgres@127.0.0.1:\(port)/postgres' -X -q -c 'CREATE DATABASE \(name)' >/dev/null")
    }

    /// `pg_ctl restart -m fast`: the server ends every connection and starts again. Blocks until
    /// pg_ctl returns (the server accepts connections again); false if it failed.
    func restart() -> Bool {
        shell("\(asServer)\(bin)/pg_ctl -D '\(folder)/data' -m fast -w -t 60 restart >>'\(folder)/restart.log' 2>&1") == 0
    }

    /// Whether the server accepts connections now (pg_isready).
    func acceptsConnections() -> Bool {
        shell("\(bin)/pg_isready -q -h 127.0.0.1 -p \(port) -t 1") == 0
    }

    func stop() {
        guard !stopped else { return }
        stopped = true
        shell("\(asServer)\(bin)/pg_ctl -D '\(folder)/data' -m immediate -w stop >/dev/null 2>&1; rm -rf '\(folder)'")
    }
}

/// A server started as a child process (this program's `serve` command), its output in a log file.
final class ServerProcess: @unchecked Sendable {
    let name: String
    let pid: pid_t
    let port: Int
    let log: String

    init(name: String, kind: ServerKind, postgres: URL, folder: String, connections: Int) throws {
        self.name = name
        log = "\(folder)/\(name).log"
        let portFile = "\(folder)/\(name).port", pidFile = "\(folder)/\(name).pid"
        try? FileManager.default.removeItem(atPath: portFile)
        let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path
        try shellOrThrow("'\(executable)' serve --kind \(kind.rawValue) --postgres '\(postgres.absoluteString)' --port-file '\(portFile)' "
            + "--connections \(connections) </dev/null >'\(log)' 2>&1 & echo $! >'\(pidFile)'")
        guard let text = try? String(contentsOfFile: pidFile, encoding: .utf8), let pid = pid_t(text.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw LoadTestError("\(name) did not start")
        }
        self.pid = pid
        let deadline = Date().addingTimeInterval(60)
        while true {
            if let text = try? String(contentsOfFile: portFile, encoding: .utf8), let port = Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) {
                self.port = port
                break
            }
            if kill(pid, 0) != 0 { throw LoadTestError("\(name) exited before it listened; see \(log)") }
            if Date() > deadline {
                kill(pid, SIGKILL)
                throw LoadTestError("\(name) did not listen within 60 s; see \(log)")
            }
            usleep(50_000)
        }
    }

    var baseURL: String { "http://127.0.0.1:\(port)" }
    var isRunning: Bool { kill(pid, 0) == 0 }

    /// SIGTERM, then SIGKILL after 10 s.
    func stop() {
        guard isRunning else { return }
        kill(pid, SIGTERM)
        let deadline = Date().addingTimeInterval(10)
        while isRunning && Date() < deadline { usleep(50_000) }
        if isRunning { kill(pid, SIGKILL) }
    }
}

/// A value shared between threads, behind a lock.
final class Locked<Value: Sendable>: @unchecked Sendable {
    private var value: Value
    private let lock = NSLock()
    init(_ value: Value) { self.value = value }
    func withLock<T>(_ body: (inout Value) -> T) -> T {
        lock.lock()
        defer { lock.unlock() }
        return body(&value)
    }
}

/// Ends this process (a server the load test started) when its parent is gone, whatever ended it.
func exitWhenParentIsGone() {
    let parent = getppid()
    Thread.detachNewThread {
        while getppid() == parent { sleep(1) }
        exit(0)
    }
}
