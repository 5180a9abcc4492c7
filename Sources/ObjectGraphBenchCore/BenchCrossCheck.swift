/// The checks that make the three sides' figures comparable: each run of each side reports the
/// rows it saw and a checksum of the values, and each side's store can be read back after the runs.
package enum BenchCrossCheck {
    /// Where the ways disagree on what a run saw (rows or checksum), run by run.
    package static func mismatches(_ samples: [BenchVariant: [BenchSample]]) -> [String] {
        guard let reference = BenchVariant.allCases.first(where: { samples[$0] != nil }), let expected = samples[reference] else { return [] }
        var problems: [String] = []
        for (variant, list) in samples where variant != reference {
            for (index, (a, b)) in zip(expected, list).enumerated() where a.rows != b.rows || a.checksum != b.checksum {
                problems.append(
                    "run \(index): \(reference.title) saw \(a.rows) rows (checksum \(a.checksum)), \(variant.title) saw \(b.rows) rows (checksum \(b.checksum))")
                break
            }
            if expected.count != list.count { problems.append("\(reference.title) ran \(expected.count) times, \(variant.title) \(list.count)") }
        }
        return problems
    }

    /// Where the sides' stores disagree on a figure read back after the runs (nil when they agree).
    package static func disagreement(_ values: [(BenchVariant, Int64)]) -> String? {
        guard let first = values.first, values.contains(where: { $0.1 != first.1 }) else { return nil }
        return "the stores disagree after the runs: " + values.map { "\($0.0.title) \($0.1)" }.joined(separator: ", ")
    }
}
