import Foundation

/// An error thrown by a ``PersistentContainer``'s lifecycle: a shutdown that ran out of time, or
/// work asked of a container that was shut down.
///
/// ```swift
/// do {
///     try container.shutdown(timeout: .seconds(5))
/// } catch let error as PersistentContainerError where error.code == .shutdownTimedOut {
///     logger.error("\(error)")       // names the container and the work still running
/// }
/// ```
///
/// Errors compare equal by their ``code``, and `catch PersistentContainerError.shutdownTimedOut`
/// matches any error of that kind.
public struct PersistentContainerError: Error, Equatable, Hashable, Sendable, CustomStringConvertible {
    /// The kind of a ``PersistentContainerError``.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// The time limit of ``PersistentContainer/shutdown(timeout:)-1wk1w`` passed with work
        /// still running; the stores were left open so that it can finish.
        public static let shutdownTimedOut = Code("shutdownTimedOut")
        /// A synchronous shutdown was called on the main queue while blocks for the view context
        /// were queued there, which cannot run until it returns; the stores were left open.
        public static let mainQueueHeld = Code("mainQueueHeld")
        /// The container was shut down: its stores are closed and it takes no new work.
        public static let shutDown = Code("shutDown")
    }

    /// The kind of failure.
    public let code: Code
    /// What went wrong, naming the container and the work concerned.
    public let message: String
    /// The name of the container concerned.
    public let containerName: String
    /// Blocks submitted to the container's contexts with `perform` and not finished when the error
    /// was thrown (for ``Code/shutdownTimedOut``).
    public let outstandingBlocks: Int
    /// Saves under way on the container's contexts when the error was thrown (for ``Code/shutdownTimedOut``).
    public let outstandingSaves: Int

    init(_ code: Code, _ message: String, containerName: String, outstandingBlocks: Int = 0, outstandingSaves: Int = 0) {
        self.code = code
        self.message = message
        self.containerName = containerName
        self.outstandingBlocks = outstandingBlocks
        self.outstandingSaves = outstandingSaves
    }

    public var description: String { "PersistentContainerError.\(code): \(message)" }

    public static func == (lhs: PersistentContainerError, rhs: PersistentContainerError) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }

    /// Lets `catch PersistentContainerError.shutdownTimedOut` match any error of that kind.
    public static func ~= (pattern: PersistentContainerError, value: any Error) -> Bool {
        (value as? PersistentContainerError)?.code == pattern.code
    }

    public static let shutdownTimedOut = PersistentContainerError(
        .shutdownTimedOut, "The shutdown's time limit passed with work still running.", containerName: "")
    public static let mainQueueHeld = PersistentContainerError(
        .mainQueueHeld, "A synchronous shutdown on the main queue cannot wait for the view context's blocks.", containerName: "")
    public static let shutDown = PersistentContainerError(.shutDown, "The container was shut down.", containerName: "")
}
