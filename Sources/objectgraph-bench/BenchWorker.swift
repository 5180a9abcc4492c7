import ArgumentParser
import Foundation
import ObjectGraphBenchCore

/// `objectgraph-bench worker` (hidden): runs one measurement on one side in a process of its own,
/// so that its memory peak is not mixed with the parent's, and prints its samples as JSON.
struct BenchWorker: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "worker", abstract: "Run one measurement of one side (used by `objectgraph-bench`).", shouldDisplay: false)

    @Option(help: "The measurement (a row name).") var measurement: Metric
    @Option(help: "The side.") var variant: BenchVariant
    @Option(help: "The benchmark's folder, with the stores already seeded.") var directory: String
    @Option(help: "The settings, as JSON.") var settings: String

    func run() throws {
        let settings = try JSONDecoder().decode(BenchSettings.self, from: Data(self.settings.utf8))
        let measurement = BenchMeasurement.of(self.measurement, sizes: settings.sizes)
        let side = try BenchRunner.side(variant, directory: URL(fileURLWithPath: directory), settings: settings)
        let (samples, peak) = try measurement.runs(on: side, settings: settings)
        let output = BenchWorkerOutput(samples: samples, peakBytes: peak)
        FileHandle.standardOutput.write(try JSONEncoder().encode(output))
    }
}

/// What a worker reports to the parent.
struct BenchWorkerOutput: Codable {
    var samples: [BenchSample]
    var peakBytes: Int?
}

/// The parent's side of a worker: seeds the side's stores in the parent, then runs the worker.
enum BenchWorkerProcess {
    static func run(
        _ measurement: BenchMeasurement, variant: BenchVariant, directory: URL, settings: BenchSettings, prepare side: any BenchSide
    ) throws -> (samples: [BenchSample], peakBytes: Int?) {
        try side.prepare(measurement.metric, sizes: settings.sizes)
        let process = Process()
        process.executableURL = executableURL
        process.arguments = [
            "worker", "--measurement", measurement.name, "--variant", variant.rawValue,
            "--directory", directory.path, "--settings", String(decoding: try JSONEncoder().encode(settings), as: UTF8.self),
        ]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw BenchError("the worker for \(measurement.name) through \(variant.title) exited with status \(process.terminationStatus)")
        }
        let result = try JSONDecoder().decode(BenchWorkerOutput.self, from: data)
        return (result.samples, result.peakBytes)
    }

    /// This program.
    private static var executableURL: URL {
        if let path = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            return URL(fileURLWithPath: path)
        }
        return Bundle.main.executableURL ?? URL(fileURLWithPath: CommandLine.arguments[0])
    }
}
