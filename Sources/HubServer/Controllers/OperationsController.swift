import Hummingbird
import NIOCore
import Prometheus

/// `/healthz`, `/metrics` (Prometheus text) and `/openapi.yaml`: unauthenticated operations routes.
struct OperationsController {
    let api: HubAPI

    func addRoutes(to routes: Routes) {
        routes.on(.get, "healthz") { _, _ in
            Response(
                status: .ok, headers: [.contentType: "application/json"],
                body: .init(byteBuffer: ByteBuffer(string: #"{"status":"ok"}"#)))
        }
        let metrics = api.metrics
        routes.on(.get, "metrics") { _, _ in
            Response(
                status: .ok, headers: [.contentType: "text/plain; version=0.0.4"],
                body: .init(byteBuffer: ByteBuffer(string: metrics?.emitToString() ?? "")))
        }
        routes.on(.get, "openapi.yaml") { _, _ in
            Response(
                status: .ok, headers: [.contentType: "application/yaml"],
                body: .init(byteBuffer: ByteBuffer(string: OpenAPIDocument.yaml)))
        }
    }
}
