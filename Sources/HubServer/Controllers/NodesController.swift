import Foundation
import HTTPTypes
import Hummingbird
import NotificationHub

/// `GET /{hub}/nodes` (Manage): the hub processes (nodes) working for the hub now, from their heartbeats in the
/// hub's database: name, start, last heartbeat, deliveries committed since start and partitions held.
struct NodesController {
    let api: HubAPI

    var routes: RouteCollection<HubContext> {
        let routes = RouteCollection(context: HubContext.self)
        routes.group().add(middleware: CallerRequirement.manage).get("nodes") { try await nodes($0, $1) }
        return routes
    }

    struct NodesResponse: Encodable {
        struct Node: Encodable {
            var id: String
            var name: String
            var startedTime: Date
            var heartbeatTime: Date
            var delivered: Int
            var partitions: Int
            /// Whether this is the node that answered.
            var current: Bool
        }

        /// The node that answered.
        var node: String
        var nodes: [Node]
    }

    func nodes(_ request: Request, _ context: HubContext) async throws -> Response {
        let hub = context.hub
        let nodes = try await hub.worker.nodes().map { node in
            NodesResponse.Node(
                id: node.id, name: node.name, startedTime: node.startedTime, heartbeatTime: node.heartbeatTime,
                delivered: node.delivered, partitions: node.partitions, current: node.id == hub.nodeID)
        }
        var response = try api.json(NodesResponse(node: hub.nodeName, nodes: nodes))
        response.headers[.cacheControl] = "no-store"
        return response
    }
}
