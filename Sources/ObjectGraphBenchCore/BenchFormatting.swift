import Foundation

extension Int {
    /// The number with thousands separators: 100,000.
    package var grouped: String {
        let digits = String(magnitude)
        var result = ""
        for (n, digit) in digits.enumerated() {
            if n > 0 && (digits.count - n) % 3 == 0 { result.append(",") }
            result.append(digit)
        }
        return (self < 0 ? "-" : "") + result
    }
}

extension Double {
    /// Short decimal form without trailing zeros: 1.5, 64, 0.25.
    package var compact: String {
        var text = String(format: "%.2f", self)
        while text.contains(".") && (text.hasSuffix("0") || text.hasSuffix(".")) { text.removeLast() }
        return text
    }

    /// A ratio as the report prints it: 1.23×.
    package var ratio: String { String(format: "%.2f×", self) }
}
