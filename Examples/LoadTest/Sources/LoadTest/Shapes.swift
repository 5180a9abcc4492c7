import Foundation
import Hummingbird

// The JSON of NotesServer's answers and requests, for the floor and Fluent servers (which answer
// the same shapes) and for the load driver (which reads them).

struct NoteJSON: ResponseEncodable, Codable, Sendable {
    var id: UUID
    var title: String
    var body: String
    var folder: UUID?
    var updated: Date
}

struct PageJSON: ResponseEncodable, Codable, Sendable {
    var notes: [NoteJSON]
    var next: String?
}

struct FolderJSON: ResponseEncodable, Codable, Sendable {
    var id: UUID
    var name: String
    var noteCount: Int
}

struct NewFolderJSON: Codable, Sendable { var name: String }
struct NewNoteJSON: Codable, Sendable { var title: String; var body: String?; var folder: UUID? }
struct NoteChangeJSON: Codable, Sendable { var title: String?; var body: String? }

/// NotesServer's page cursor (its `NoteCursor.text`): URL-safe base64 of the date's bits and the ID.
func cursorText(updated: Date, id: UUID) -> String {
    let plain = String(updated.timeIntervalSinceReferenceDate.bitPattern, radix: 16) + "_" + id.uuidString
    return Data(plain.utf8).base64EncodedString()
        .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
}

/// The page size of `?limit=`, as NotesServer reads it (1 to 200, 50 when absent).
func pageLimit(_ text: String?) throws -> Int {
    guard let text else { return 50 }
    guard let number = Int(text), (1...200).contains(number) else {
        throw HTTPError(.badRequest, message: "limit must be a whole number from 1 to 200, not '\(text)'")
    }
    return number
}

func parseID(_ text: String) throws -> UUID {
    guard let id = UUID(uuidString: text) else { throw HTTPError(.badRequest, message: "'\(text)' is not an ID") }
    return id
}

/// A 503 with `Retry-After`, as NotesServer answers when its store cannot reach the database.
func unavailable(_ error: Any) -> HTTPError {
    HTTPError(.serviceUnavailable, headers: [.retryAfter: "1"], message: "The database cannot be reached for now; try again in 1 s (\(error))")
}
