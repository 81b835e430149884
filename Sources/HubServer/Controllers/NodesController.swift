import Foundation
import HTTPTypes
import Hummingbird
import NotificationHub

/// `GET /{hub}/nodes` (Manage): the hub processes (nodes) working for the hub now, from their heartbeats in the
/// hub's database: name, start, last heartbeat, deliveries committed since start and partitions held.
struct NodesController {
    let api: HubAPI

    func addRoutes(to routes: Routes) {
        routes.on(.get, "nodes") { try await nodes($0, $1) }
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

    func nodes(_ request: Request, _ context: HubRequestContext) async throws -> Response {
        try context.require(.manage)
        let hub = try context.requireHub()
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
