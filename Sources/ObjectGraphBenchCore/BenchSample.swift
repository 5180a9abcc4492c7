/// What one timed run did: how long the timed part took, and what it saw (rows and a checksum of
/// the values read or written), so that the three ways can be checked against each other.
package struct BenchSample: Codable, Sendable {
    package var seconds: Double
    package var rows: Int
    package var checksum: Int64
    /// Further figures of the run (`readwrite`'s percentiles, ObjectGraph's store statistics).
    package var figures: [BenchFigure: Double] = [:]

    package init(seconds: Double, rows: Int, checksum: Int64, figures: [BenchFigure: Double] = [:]) {
        self.seconds = seconds
        self.rows = rows
        self.checksum = checksum
        self.figures = figures
    }
}
