import Hummingbird
import Prometheus

/// The answer of `GET /metrics`: every metric of a registry in Prometheus's text exposition
/// format, as a Prometheus server scrapes it.
struct PrometheusText: ResponseGenerator {
    let registry: PrometheusCollectorRegistry

    func response(from request: Request, context: some RequestContext) throws -> Response {
        Response(
            status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: registry.emitToBuffer())))
    }
}
