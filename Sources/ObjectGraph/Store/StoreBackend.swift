import Foundation
// Stand-in, replaced by the real protocol.
protocol StoreBackend: AnyObject, Sendable {
    var identifier: String { get }
    var metadata: [String: String] { get }
}
