import Foundation
import Hummingbird
import NIOCore
import Prometheus

/// `/healthz`, `/metrics` (Prometheus text) and `/openapi.yaml`: unauthenticated operations routes.
struct OperationsController {
    let api: HubAPI

    /// What `/healthz` answers.
    struct Health: Encodable {
        var status: String
        var config: ConfigurationStatus.Snapshot
    }

    var routes: RouteCollection<HubRequestContext> {
        let routes = RouteCollection(context: HubRequestContext.self)
        let status = api.status
        routes.get("healthz") { _, _ in
            // The running configuration: its file's hash, when it was loaded and how the last reload went. No secret.
            try api.json(Health(status: "ok", config: status.snapshot))
        }
        let metrics = api.metrics
        routes.get("metrics") { _, _ in
            Response(
                status: .ok, headers: [.contentType: "text/plain; version=0.0.4"],
                body: .init(byteBuffer: ByteBuffer(string: metrics?.emitToString() ?? "")))
        }
        routes.get("openapi.yaml") { _, _ in
            Response(
                status: .ok, headers: [.contentType: "application/yaml"],
                body: .init(byteBuffer: ByteBuffer(string: OpenAPIDocument.yaml)))
        }
        return routes
    }
}
