import ArgumentParser
import Foundation
import ObjectGraphCore

/// A subcommand of `objectgraph` that reports a failure as Unix tools do.
///
/// A usage error (a bad argument or option, found while parsing or by `validate()`) is ArgumentParser's:
/// the message and the usage text on standard error, exit status 64. A runtime failure (a file that
/// is missing or not a store, a migration that cannot run) is the command's: `Error: <message>` on
/// standard error, no usage text, exit status 1. Standard output keeps only what the user asked for.
///
/// A conforming command does its work in ``execute()``; its `run()` is ``reportingFailures(_:)``
/// around it.
protocol ToolCommand: ParsableCommand {
    /// The command's work. An error it throws, other than ArgumentParser's, is a runtime failure.
    ///
    /// - Throws: ``CommandFailure``, an `ObjectGraphError` or any other error for a runtime failure;
    ///   `ExitCode` to end with a status after printing a result (a failed check, say).
    func execute() throws
}

extension ToolCommand {
    func run() throws {
        try reportingFailures(execute)
    }
}

/// Runs `body`, reporting a runtime failure as Unix tools do.
///
/// An error `body` throws that is ArgumentParser's (`ValidationError`, `ExitCode`, `CleanExit`) is
/// thrown on, for ArgumentParser to handle. Any other error is printed as `Error: <message>` on
/// standard error (after what was printed on standard output) and the command exits with 1.
///
/// - Throws: ArgumentParser's errors from `body`, and `ExitCode.failure` for any other.
func reportingFailures(_ body: () throws -> Void) throws {
    do {
        try body()
    } catch let error as ValidationError {
        throw error
    } catch let error as ExitCode {
        throw error
    } catch let error as CleanExit {
        throw error
    } catch {
        fflush(nil)  // what was printed on standard output comes first
        FileHandle.standardError.write(Data("Error: \(CommandFailure.message(for: error))\n".utf8))
        throw ExitCode.failure
    }
}

/// A runtime failure of a command, with a message that says what was wrong and names the file or
/// entity concerned.
struct CommandFailure: Error, CustomStringConvertible {
    let description: String

    init(_ description: String) {
        self.description = description
    }

    /// A failure caused by `error`: `"<description>: <error's message>"`.
    init(_ description: String, because error: any Error) {
        self.description = "\(description): \(Self.message(for: error))"
    }

    /// What a person reads for `error`: an `ObjectGraphError`'s message (with each reason of a
    /// failure that had several), a file error's path and reason, a localized description, or the
    /// error's description.
    static func message(for error: any Error) -> String {
        switch error {
        case let error as ObjectGraphError:
            let reasons = error.underlyingErrors.count > 1 ? error.underlyingErrors.map { "\n  - \($0.message)" } : []
            return error.message + reasons.joined()
        case let error as CommandFailure:
            return error.description
        case let error as LocalizedError:
            return error.errorDescription ?? String(describing: error)
        case let error as CocoaError:
            // Foundation on Linux describes most file errors by their number only: say the file and
            // the system's reason, as Unix tools do ("path: No such file or directory").
            let reason = error.underlying.map { underlying in
                let system = underlying as NSError
                return system.domain == NSPOSIXErrorDomain ? String(cString: strerror(Int32(system.code))) : system.localizedDescription
            } ?? error.localizedDescription
            return error.filePath.map { "\($0): \(reason)" } ?? reason
        default:
            return String(describing: error)
        }
    }
}
