import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// What a request asked for.
enum Operation: Int, CaseIterable, Sendable {
    case list, get, create, update, probe, seed
    var name: String { ["list", "get", "create", "update", "probe", "seed"][rawValue] }
}

/// How a request ended.
enum Outcome: Hashable, Sendable, Comparable {
    case status(Int)
    /// No answer: the connection could not be made or was lost.
    case connection
    /// No answer within the client's time-out (a hang).
    case timeout
    case other

    var isClientError: Bool { if case .status(let code) = self { return (400..<500).contains(code) } else { return false } }
    var isSuccess: Bool { if case .status(let code) = self { return (200..<300).contains(code) } else { return false } }
    var label: String {
        switch self {
        case .status(let code): "HTTP \(code)"
        case .connection: "connection error"
        case .timeout: "timeout (hang)"
        case .other: "other error"
        }
    }
}

/// One request: when it started and ended (``now()``), what it was, how it ended.
struct Sample: Sendable {
    var start: UInt64
    var end: UInt64
    var operation: Operation
    var outcome: Outcome
    var instance: Int
    var retryAfter: Bool
    var duration: UInt64 { end - start }
}

/// A write the client made and how it ended: the audit compares them with the database.
struct CreateRecord: Sendable {
    var id: UUID?
    var title: String
    var body: String
    var folder: UUID?
    var outcome: Outcome
}

struct UpdateRecord: Sendable {
    var note: UUID
    var body: String
    var start: UInt64
    var end: UInt64
    var outcome: Outcome
}

/// What one client saw.
struct ClientLog: Sendable {
    var samples: [Sample] = []
    var creates: [CreateRecord] = []
    var updates: [UpdateRecord] = []
    /// Pairs of PATCHes sent at once to the same note, and how many of their answers were 409.
    var collisionPairs = 0
    var collision409s = 0

    mutating func merge(_ other: ClientLog) {
        samples += other.samples
        creates += other.creates
        updates += other.updates
        collisionPairs += other.collisionPairs
        collision409s += other.collision409s
    }
}

/// The IDs of the notes the clients know (seeded and acknowledged creates), shared by the clients.
final class NotePool: Sendable {
    private let ids: Mutex<[UUID]>
    init(_ ids: [UUID]) { self.ids = Mutex(ids) }
    func add(_ id: UUID) { ids.withLock { $0.append(id) } }
    func random() -> UUID { ids.withLock { $0.randomElement()! } }
}

/// Sends requests with a time-out, and says how they ended.
struct Requester: Sendable {
    let http: HTTPClient
    let timeout: TimeAmount

    struct Answer { var outcome: Outcome; var body: ByteBuffer?; var retryAfter: Bool }

    func send(_ method: HTTPMethod, _ url: String, json: String? = nil) async -> Answer {
        var request = HTTPClientRequest(url: url)
        request.method = method
        if let json {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(string: json))
        }
        let started = now()
        do {
            let response = try await http.execute(request, timeout: timeout)
            let body = try await response.body.collect(upTo: 4 << 20)
            return Answer(outcome: .status(Int(response.status.code)), body: body, retryAfter: response.headers.first(name: "Retry-After") != nil)
        } catch {
            if let error = error as? HTTPClientError, error == .deadlineExceeded || error == .readTimeout || error == .connectTimeout {
                return Answer(outcome: .timeout, body: nil, retryAfter: false)
            }
            if now() - started >= UInt64(timeout.nanoseconds) { return Answer(outcome: .timeout, body: nil, retryAfter: false) }
            if error is HTTPClientError || error is NIOConnectionError || error is ChannelError || error is IOError {
                return Answer(outcome: .connection, body: nil, retryAfter: false)
            }
            return Answer(outcome: .other, body: nil, retryAfter: false)
        }
    }
}

let jsonDecoder: JSONDecoder = {
    let decoder = JSONDecoder()
    decoder.dateDecodingStrategy = .iso8601
    return decoder
}()

func json<T: Encodable>(_ value: T) -> String { String(decoding: try! JSONEncoder().encode(value), as: UTF8.self) }

/// One of the 64 clients: until `end`, a request at a time to its instance (client i to instance
/// i mod 2): 40% a page of a folder's 20 newest notes, 30% a note by ID, 20% a new note, 10% a
/// change of a note's body; a quarter of the changes are pairs of PATCHes of the same note sent at
/// once, one to each instance, which collide on purpose.
struct Client: Sendable {
    let number: Int
    let kind: ServerKind
    let instances: [String]
    let folders: [UUID]
    let notes: NotePool
    let requester: Requester
    let end: UInt64

    func run() async -> ClientLog {
        var log = ClientLog()
        var generator = SystemRandomNumberGenerator()
        var sequence = 0
        let home = number % instances.count
        while now() < end {
            sequence += 1
            let roll = Int.random(in: 0..<100, using: &generator)
            let outcome: Outcome
            if roll < 40 {
                let folder = folders.randomElement(using: &generator)!
                outcome = await request(.list, home, .GET, "/notes?folder=\(folder)&limit=20", nil, &log).outcome
            } else if roll < 70 {
                outcome = await request(.get, home, .GET, "/notes/\(notes.random())", nil, &log).outcome
            } else if roll < 90 {
                let folder = Int.random(in: 0..<10, using: &generator) == 0 ? nil : folders.randomElement(using: &generator)
                let title = "t-\(kind.rawValue)-\(number)-\(sequence)"
                let body = "b-\(number)-\(sequence)"
                let answer = await request(.create, home, .POST, "/notes", json(NewNoteJSON(title: title, body: body, folder: folder)), &log)
                outcome = answer.outcome
                var record = CreateRecord(id: nil, title: title, body: body, folder: folder, outcome: answer.outcome)
                if answer.outcome.isSuccess, let body = answer.body, let note = try? jsonDecoder.decode(NoteJSON.self, from: body) {
                    record.id = note.id
                    notes.add(note.id)
                }
                log.creates.append(record)
            } else if roll < 97 {
                outcome = await update(notes.random(), home, body: "u-\(number)-\(sequence)", &log)
            } else {
                // Two PATCHes of one note at once, one to each instance: both read the same version,
                // and one of them answers 409 when both reads come before either save.
                let note = notes.random()
                let other = (home + 1) % instances.count
                let bodies = ("u-\(number)-\(sequence)-a", "u-\(number)-\(sequence)-b")
                async let first = collidingUpdate(note, home, body: bodies.0)
                async let second = collidingUpdate(note, other, body: bodies.1)
                let (a, b) = await (first, second)
                log.collisionPairs += 1
                for (sample, record) in [a, b] {
                    log.samples.append(sample)
                    log.updates.append(record)
                    if sample.outcome == .status(409) { log.collision409s += 1 }
                }
                outcome = a.0.outcome.isSuccess ? b.0.outcome : a.0.outcome
            }
            // A client that got no answer or a 503 waits a little (not Retry-After's whole second,
            // so that the recovery after a restart is seen to the tenth of a second).
            if !outcome.isSuccess, outcome != .status(409) { try? await Task.sleep(for: .milliseconds(100)) }
        }
        return log
    }

    func request(_ operation: Operation, _ instance: Int, _ method: HTTPMethod, _ path: String, _ body: String?, _ log: inout ClientLog) async -> Requester.Answer {
        let start = now()
        let answer = await requester.send(method, instances[instance] + path, json: body)
        log.samples.append(Sample(start: start, end: now(), operation: operation, outcome: answer.outcome, instance: instance, retryAfter: answer.retryAfter))
        return answer
    }

    func update(_ note: UUID, _ instance: Int, body: String, _ log: inout ClientLog) async -> Outcome {
        let (sample, record) = await collidingUpdate(note, instance, body: body)
        log.samples.append(sample)
        log.updates.append(record)
        return sample.outcome
    }

    func collidingUpdate(_ note: UUID, _ instance: Int, body: String) async -> (Sample, UpdateRecord) {
        let start = now()
        let answer = await requester.send(.PATCH, instances[instance] + "/notes/\(note)", json: json(NoteChangeJSON(title: nil, body: body)))
        let end = now()
        return (
            Sample(start: start, end: end, operation: .update, outcome: answer.outcome, instance: instance, retryAfter: answer.retryAfter),
            UpdateRecord(note: note, body: body, start: start, end: end, outcome: answer.outcome))
    }
}

/// Asks each instance for one note every 50 ms until `end`: the samples around a restart tell when
/// each instance answered 503 and when it served again.
func probe(instance: Int, url: String, note: UUID, requester: Requester, end: UInt64) async -> [Sample] {
    var samples: [Sample] = []
    while now() < end {
        let start = now()
        let answer = await requester.send(.GET, "\(url)/notes/\(note)")
        samples.append(Sample(start: start, end: now(), operation: .probe, outcome: answer.outcome, instance: instance, retryAfter: answer.retryAfter))
        try? await Task.sleep(for: .milliseconds(50))
    }
    return samples
}
