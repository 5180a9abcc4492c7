import Hummingbird
import ObjectGraph

/// Answers 503 Service Unavailable with `Retry-After` when the store cannot serve the request for
/// now, rather than a 500: the PostgreSQL server cannot be reached (it restarts, the network
/// failed), or every connection of the pool stayed busy (`ObjectGraphError` `.io` and `.busy`).
/// The store throws these at once or within its time-outs, and serves again by itself once the
/// server is back, so a client that waits `Retry-After` seconds and retries gets its answer.
///
/// On a lost connection nothing was written, or, when the connection was lost during COMMIT, the
/// store asked the server whether the write committed and answered accordingly: a 503 means the
/// request's change was not saved.
struct StoreUnavailable<Context: RequestContext>: RouterMiddleware {
    /// The seconds a client is asked to wait before it tries again.
    static var retryAfterSeconds: Int { 1 }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as ObjectGraphError where error.code == .io || error.code == .busy {
            throw Self.unavailable(error)
        }
    }

    static func unavailable(_ error: ObjectGraphError) -> HTTPError {
        HTTPError(
            .serviceUnavailable, headers: [.retryAfter: String(retryAfterSeconds)],
            message: "The notes store cannot be reached for now; try again in \(retryAfterSeconds) s (\(error.code))")
    }
}
