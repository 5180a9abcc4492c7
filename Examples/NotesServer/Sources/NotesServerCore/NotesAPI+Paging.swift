import Foundation
import Hummingbird
import ObjectGraph

// `GET /notes` answers one page at a time, newest first: `updated` descending, then `id`
// descending to order notes saved at the same instant. A page ends with a cursor, the position of
// its last note, and the next page is the notes after that position (keyset paging): notes saved
// meanwhile sort before the cursor and never shift a page, as they would shift an offset.

/// A page of notes, newest first, and the cursor of the page after it (absent on the last page).
public struct NotePage: ResponseEncodable, Decodable, Equatable, Sendable {
    public var notes: [NoteValue]
    /// Pass as `?cursor=` for the next page; nil (and left out of the JSON) on the last page.
    public var next: String?
}

/// Where a page of notes starts: after the note with this `updated` and `id`, in the order
/// `updated` descending, then `id` descending.
struct NoteCursor: Equatable {
    var updated: Date
    var id: UUID

    init(updated: Date, id: UUID) {
        self.updated = updated
        self.id = id
    }

    /// The position of `note`: the next page starts after it.
    init(after note: NoteValue) { self.init(updated: note.updated, id: note.id) }

    /// The cursor as clients see it: opaque, URL-safe base64 of the date's exact bits and the ID
    /// (a date written as decimal text could come back a nanosecond off and skip or repeat a note).
    var text: String {
        let plain = String(updated.timeIntervalSinceReferenceDate.bitPattern, radix: 16) + "_" + id.uuidString
        return Data(plain.utf8).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    /// The cursor `text` names, or nil when it is not one ``text`` made.
    init?(text: String) {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        guard let data = Data(base64Encoded: base64), let plain = String(data: data, encoding: .utf8) else { return nil }
        let parts = plain.split(separator: "_", omittingEmptySubsequences: false)
        guard parts.count == 2, let bits = UInt64(parts[0], radix: 16), let id = UUID(uuidString: String(parts[1])) else { return nil }
        let seconds = Double(bitPattern: bits)
        guard seconds.isFinite else { return nil }
        self.init(updated: Date(timeIntervalSinceReferenceDate: seconds), id: id)
    }
}

/// Which page of notes a request asks for: `?limit=` (1 to 200, 50 when absent) and `?cursor=`
/// (absent for the first page).
struct NotePageRequest: Equatable {
    static let defaultLimit = 50
    static let maximumLimit = 200

    var limit: Int
    var after: NoteCursor?

    /// - Throws: `HTTPError(.badRequest)` saying what is wrong with `limit` or `cursor`.
    init(limit: String?, cursor: String?) throws {
        if let limit {
            guard let number = Int(limit), (1...Self.maximumLimit).contains(number) else {
                throw HTTPError(.badRequest, message: "limit must be a whole number from 1 to \(Self.maximumLimit), not '\(limit)'")
            }
            self.limit = number
        } else {
            self.limit = Self.defaultLimit
        }
        if let cursor {
            guard let after = NoteCursor(text: cursor) else {
                throw HTTPError(.badRequest, message: "cursor '\(cursor)' is not one this server gave; start again without a cursor")
            }
            self.after = after
        }
    }
}

extension NotesAPI {
    /// One page of notes (of one folder, or of all), newest first.
    ///
    /// The store answers it in SQL: the position after the cursor as a condition on
    /// (`updated`, `id`), the order, and a limit of one note more than the page, which tells
    /// whether a page follows without asking for it. The notes' folders are prefetched in one
    /// statement, where reading `folder` of each note would fault its folder on its own.
    func notes(in folder: UUID?, page: NotePageRequest) async throws -> NotePage {
        try await perform { context in
            let request = FetchRequest<Note>(entityName: "Note")
            var conditions: [FetchPredicate] = []
            if let folder { conditions.append(FetchPredicate(format: "folder.id == %@", folder)) }
            if let after = page.after {
                conditions.append(FetchPredicate(
                    format: "updated < %@ OR (updated == %@ AND id < %@)", after.updated, after.updated, after.id))
            }
            if !conditions.isEmpty { request.predicate = .and(conditions) }
            request.sortDescriptors = [FetchSortDescriptor(key: "updated", ascending: false), FetchSortDescriptor(key: "id", ascending: false)]
            request.fetchLimit = page.limit + 1
            request.relationshipKeyPathsForPrefetching = ["folder"]
            // With their values, not as faults (see `NotesAPI.find`).
            request.returnsObjectsAsFaults = false
            let fetched = try context.fetch(request)
            let notes = fetched.prefix(page.limit).map(NoteValue.init)
            let next = fetched.count > page.limit ? notes.last.map { NoteCursor(after: $0).text } : nil
            return NotePage(notes: notes, next: next)
        }
    }
}
