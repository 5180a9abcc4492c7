import Foundation
import ObjectGraphBenchCore

#if os(Linux)
/// glibc's `malloc_trim` (in `<malloc.h>`, which the Glibc module does not import).
@_silgen_name("malloc_trim")
private func mallocTrim(_ pad: Int) -> Int32
#endif

/// Wall-clock timing of the work a workload names, and nothing else.
enum BenchClock {
    /// The seconds `body` takes.
    static func seconds(_ body: () throws -> Void) rethrows -> Double {
        let clock = ContinuousClock()
        let start = clock.now
        try body()
        return (clock.now - start).seconds
    }

    /// The seconds `body` takes, with what it returned.
    static func measure<T>(_ body: () throws -> T) rethrows -> (seconds: Double, value: T) {
        let clock = ContinuousClock()
        let start = clock.now
        let value = try body()
        return ((clock.now - start).seconds, value)
    }

    /// The seconds async `body` takes (the raw PostgreSQL side's statements).
    static func seconds(_ body: () async throws -> Void) async rethrows -> Double {
        let clock = ContinuousClock()
        let start = clock.now
        try await body()
        return (clock.now - start).seconds
    }

    /// The seconds async `body` takes, with what it returned.
    static func measure<T>(_ body: () async throws -> T) async rethrows -> (seconds: Double, value: T) {
        let clock = ContinuousClock()
        let start = clock.now
        let value = try await body()
        return ((clock.now - start).seconds, value)
    }
}

extension Duration {
    /// The duration in seconds, as a `Double`.
    var seconds: Double {
        let (s, attoseconds) = components
        return Double(s) + Double(attoseconds) * 1e-18
    }
}

/// The process's resident memory, from `/proc/self/status` (Linux).
///
/// The peak (`VmHWM`) is reset through `/proc/self/clear_refs` before a measurement, so that each
/// measurement sees its own peak; freed heap is returned to the system first (`malloc_trim`), so
/// that the baseline is what the process really holds.
enum BenchMemory {
    /// Resident set size now, in bytes (nil where `/proc` is unavailable).
    static var residentBytes: Int? { field("VmRSS") }

    /// Peak resident set size since start or the last `resetPeak()`, in bytes.
    static var peakBytes: Int? { field("VmHWM") }

    /// Returns freed heap to the system and resets the peak to the current resident size; returns
    /// that size, the baseline of the measurement that follows.
    @discardableResult
    static func startMeasurement() -> Int? {
        #if os(Linux)
        _ = mallocTrim(0)
        #endif
        try? "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .utf8)
        return residentBytes
    }

    /// The peak above `baseline` since `startMeasurement()`, in bytes.
    static func peakAbove(_ baseline: Int?) -> Int? {
        guard let baseline, let peak = peakBytes else { return nil }
        return max(0, peak - baseline)
    }

    private static func field(_ name: String) -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return nil }
        for line in status.split(separator: "\n") where line.hasPrefix(name + ":") {
            let digits = line.dropFirst(name.count + 1).filter(\.isNumber)
            return Int(digits).map { $0 * 1024 }
        }
        return nil
    }
}
