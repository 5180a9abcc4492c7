import Foundation
import ObjectGraph
@testable import ObjectGraphCore

// The Swift-native models of the public API contract, plus one of every generated shape.

@Managed final class Folder: ManagedObject {
    var name: String = ""
    @Relationship(deleteRule: .cascade, inverse: \Note.folder) var notes: Set<Note> = []
}

@Managed final class Note: ManagedObject {
    var title: String = ""
    var rank: Int64 = 0
    var created: Date?
    var folder: Folder?
    @Attribute(.unique) var slug: String = ""
    @Transient var scratch: Int = 0
    var tags: Set<Tag> = []
}

@Managed final class Tag: ManagedObject {
    var name: String = ""
    @Relationship(inverse: \Note.tags) var notes: Set<Note> = []
}

enum Priority: String, Codable, Sendable {
    case low, normal, high
}

enum Size: Int {
    case small = 1, large = 2
}

struct Geometry: Codable, Sendable, Equatable {
    var width: Double
    var height: Double
}

/// One property of every supported kind.
@Managed final class Sample: ManagedObject {
    var int: Int = 7
    var int16: Int16 = 0
    var int32: Int32?
    var int64: Int64 = 0
    var double: Double = 1.5
    var float: Float?
    var decimal: Decimal = 0
    var flag: Bool = false
    var text: String?
    var day: Date?
    var blob: Data?
    var identifier: UUID?
    var link: URL?
    var priority: Priority = .normal
    var size: Size?
    var geometry: Geometry?
    var words: [String] = []
    var owner: Folder?
    @Relationship(deleteRule: .deny) var ordered: [Tag] = []
    var computed: Int { int * 2 }
    static let counter = 0
}

/// A subclass entity.
@Managed class Shape: ManagedObject {
    var label: String = ""
}

@Managed final class Circle: Shape {
    var radius: Double = 1
}

/// An inverse that names an attribute of the destination: the model refuses it.
@Managed final class Shelf: ManagedObject {
    @Relationship(inverse: \Note.title) var notes: Set<Note> = []
}
