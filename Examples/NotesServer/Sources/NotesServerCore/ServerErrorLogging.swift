import Hummingbird
import Logging

/// Logs every request answered with a server error (5xx), with the error that caused it, on the
/// request's logger: the application's logger, with the request's ID.
///
/// A handler that throws an error other than an HTTP error (a failed save, a closed store) gets a
/// 500, which Hummingbird itself logs only at debug level: without this, a server at the default
/// `info` level answers 500 and says nothing. Client errors (4xx) are not logged.
struct ServerErrorLogging<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let response: Response
        do {
            response = try await next(request, context)
        } catch {
            let status = (error as? any HTTPResponseError)?.status ?? .internalServerError
            if status.kind == .serverError {
                context.logger.error(
                    "\(request.method) \(request.uri.path) answered \(status.code): \(error)",
                    metadata: ["http.status": "\(status.code)", "error.type": "\(type(of: error))"])
            }
            throw error
        }
        if response.status.kind == .serverError {
            context.logger.error(
                "\(request.method) \(request.uri.path) answered \(response.status.code)", metadata: ["http.status": "\(response.status.code)"])
        }
        return response
    }
}
