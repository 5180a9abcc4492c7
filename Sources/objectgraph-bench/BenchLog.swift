import Foundation

/// Progress and errors, on standard error, so that standard output holds only the report.
enum BenchLog {
    static func note(_ text: String) {
        FileHandle.standardError.write(Data("  · \(text)\n".utf8))
    }

    static func error(_ text: String) {
        FileHandle.standardError.write(Data("error: \(text)\n".utf8))
    }
}

/// A benchmark failure, with a message that says what and where.
struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
