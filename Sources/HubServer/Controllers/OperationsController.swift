import Foundation
import Hummingbird
import NIOCore
import NotificationHub
import Prometheus

/// `/healthz`, `/metrics` (Prometheus text) and `/openapi.yaml`: unauthenticated operations routes.
struct OperationsController {
    let api: HubAPI

    /// What `/healthz` answers: `ok`, or `degraded` while a hub's store refuses writes for want of space (listed in
    /// `stores`).
    struct Health: Encodable {
        var status: String
        var config: ConfigurationStatus.Snapshot
        var stores: [StoreHealth]?
    }

    /// A hub whose store refuses writes: since when, the latest refusal and its cause.
    struct StoreHealth: Encodable {
        var hub: String
        var status = "degraded"
        var since: Date
        var lastRefusal: Date
        var reason: String
    }

    var routes: RouteCollection<HubRequestContext> {
        let routes = RouteCollection(context: HubRequestContext.self)
        let status = api.status
        routes.get("healthz") { _, _ in
            // The running configuration: its file's hash, when it was loaded and how the last reload went. No secret.
            let stores = api.directory.hubs.compactMap { hub in
                hub.storeCondition?.degraded.map {
                    StoreHealth(hub: hub.name, since: $0.since, lastRefusal: $0.lastRefusal, reason: $0.reason)
                }
            }.sorted { $0.hub < $1.hub }
            return try api.json(
                Health(status: stores.isEmpty ? "ok" : "degraded", config: status.snapshot, stores: stores.isEmpty ? nil : stores))
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
