import Foundation

/// The node registry: heartbeats, the live nodes with the partitions each holds, leaving, and listening for work.
extension SQLNotificationStore {
    public func heartbeat(_ node: HubNode, now: Date) async throws -> [HubNode] {
        let time = now.timeIntervalSince1970
        return try await database.upkeepTransaction { connection in
            _ = try await connection.query(
                """
                INSERT INTO hub_nodes (id, name, started_time, heartbeat_time, delivered) VALUES (?, ?, ?, ?, ?)
                ON CONFLICT(id) DO UPDATE SET heartbeat_time = excluded.heartbeat_time, delivered = excluded.delivered
                """,
                [
                    .text(node.id), .text(node.name), .float(node.startedTime.timeIntervalSince1970), .float(time),
                    .integer(node.delivered),
                ])
            _ = try await connection.query("DELETE FROM hub_nodes WHERE heartbeat_time < ?", [.float(time - 3600)])
            return try await Self.nodes(now: now, on: connection)
        }
    }

    public func nodes(now: Date) async throws -> [HubNode] {
        try await database.upkeepTransaction { connection in try await Self.nodes(now: now, on: connection) }
    }

    static func nodes(now: Date, on connection: any SQLExecutor) async throws -> [HubNode] {
        let rows = try await connection.query(
            """
            SELECT n.id, n.name, n.started_time, n.heartbeat_time, n.delivered,
                (SELECT COUNT(*) FROM notification_partitions p
                 WHERE p.state = 'Processing' AND p.lease_owner = n.id AND p.lease_expires >= ?) AS partitions
            FROM hub_nodes n WHERE n.heartbeat_time >= ? ORDER BY n.name, n.id
            """,
            [.float(now.timeIntervalSince1970), .float(now.timeIntervalSince1970 - HubNode.livenessSeconds)])
        return rows.map { row in
            HubNode(
                id: row.string("id") ?? "", name: row.string("name") ?? "",
                startedTime: Date(timeIntervalSince1970: row.double("started_time") ?? 0),
                heartbeatTime: Date(timeIntervalSince1970: row.double("heartbeat_time") ?? 0),
                delivered: row.int("delivered") ?? 0, partitions: row.int("partitions") ?? 0)
        }
    }

    public func listenForWork(_ wake: @escaping @Sendable (_ sender: String) -> Void) async throws {
        try await database.listenForWork(wake)
    }

    public func leave(nodeID: String) async throws {
        try await database.upkeepTransaction { connection in
            _ = try await connection.query("DELETE FROM hub_nodes WHERE id = ?", [.text(nodeID)])
            // The others' fair share grows: partitions still open are theirs to take.
            try await self.database.notifyWork(from: nodeID, on: connection)
        }
    }
}
