import Dispatch
import Foundation

/// A one-line progress bar on standard error, drawn only when standard error is a terminal.
///
/// Standard output keeps the command's results, and a pipe or a log file gets no progress
/// characters (no carriage returns). The bar is redrawn at most ten times a second, and always
/// when the work is done.
final class TerminalProgress {
    private let enabled: Bool
    private var drawn = false
    private var lastDraw: UInt64 = 0

    /// A bar drawn when `enabled` and standard error is a terminal.
    init(enabled: Bool = true) {
        self.enabled = enabled && isatty(STDERR_FILENO) != 0
    }

    /// Draws `label [####------] done/total`.
    func show(_ done: Int, of total: Int, _ label: String) {
        guard enabled else { return }
        let now = DispatchTime.now().uptimeNanoseconds
        guard done >= total || now - lastDraw >= 100_000_000 else { return }
        lastDraw = now
        let width = 30, filled = total <= 0 ? width : width * min(max(done, 0), total) / total
        let bar = String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled)
        FileHandle.standardError.write(Data("\r\(label) [\(bar)] \(done)/\(total)".utf8))
        drawn = true
    }

    /// Ends the bar's line, if one was drawn; the next ``show(_:of:_:)`` starts a new one.
    func finish() {
        if drawn { FileHandle.standardError.write(Data("\n".utf8)) }
        drawn = false
        lastDraw = 0
    }
}
