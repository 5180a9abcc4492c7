import Foundation
import ObjectGraph
@testable import ObjectGraphCore

/// A thread-safe list of values, for recording what concurrent code did.
final class Recorder<T: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var storage: [T] = []
    func append(_ value: T) { lock.lock(); storage.append(value); lock.unlock() }
    var values: [T] { lock.lock(); defer { lock.unlock() }; return storage }
}

/// A small seeded generator (SplitMix64), so failing stress runs can be replayed from their seed.
struct SeededRandom: RandomNumberGenerator {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Runs the `objectgraph` tool built next to the test bundle, returning its exit status and output.
func runTool(_ arguments: [String], environment: [String: String] = [:]) throws -> (status: Int32, output: String) {
    let directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    var tool = directory.appendingPathComponent("objectgraph")
    if !FileManager.default.fileExists(atPath: tool.path) {
        tool = directory.deletingLastPathComponent().appendingPathComponent("objectgraph")
    }
    var env = ProcessInfo.processInfo.environment
    env["SWIFT_BACKTRACE"] = "enable=no"
    for (key, value) in environment { env[key] = value }
    let child = try ChildProcess(tool, arguments, environment: env, mergingErrors: true)
    let (status, _) = child.wait()
    return (status, String(decoding: child.standardOutput, as: UTF8.self))
}
