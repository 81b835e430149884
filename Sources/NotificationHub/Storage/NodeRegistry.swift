import Foundation
import Synchronization

/// Where a hub's nodes say that they are alive and learn which others are: the heartbeats, the live nodes with the
/// partitions each holds, and leaving. A claim reads the live nodes' count inside its transaction, to split a large
/// notification among them and to take one node's share of a batch.
protocol NodeRegistry: Sendable {
    /// Records that `node` is alive (creating its entry when it joins) and returns the live nodes.
    func heartbeat(_ node: HubNode, now: Date) async throws -> [HubNode]
    /// The live nodes, with the partitions each holds now.
    func nodes(now: Date) async throws -> [HubNode]
    /// Removes a node's entry and wakes the others, whose fair share of open partitions grows.
    func leave(nodeID: String) async throws
    /// How many nodes are live (at least one), read inside a claim's transaction on `connection`.
    func liveCount(now: Date, on connection: any SQLExecutor) async throws -> Int
}

/// The registry of nodes in different processes sharing a database (PostgreSQL): a `hub_nodes` row per node,
/// rewritten at each heartbeat. A node whose heartbeat is older than ``HubNode/livenessSeconds`` no longer counts;
/// its row is removed an hour later.
struct SharedNodeRegistry: NodeRegistry {
    let database: any HubDatabase

    func heartbeat(_ node: HubNode, now: Date) async throws -> [HubNode] {
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

    func nodes(now: Date) async throws -> [HubNode] {
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

    func leave(nodeID: String) async throws {
        try await database.upkeepTransaction { connection in
            _ = try await connection.query("DELETE FROM hub_nodes WHERE id = ?", [.text(nodeID)])
            // The others' fair share grows: partitions still open are theirs to take.
            try await database.notifyWork(from: nodeID, on: connection)
        }
    }

    func liveCount(now: Date, on connection: any SQLExecutor) async throws -> Int {
        let live = try await connection.query(
            "SELECT COUNT(*) AS n FROM hub_nodes WHERE heartbeat_time >= ?",
            [.float(now.timeIntervalSince1970 - HubNode.livenessSeconds)])
        return max(1, live.first?.int("n") ?? 1)
    }
}

/// The nodes of a database that only this process opens (the SQLite file): kept in memory, so a heartbeat writes
/// nothing to the file and an idle hub does not write at all. Liveness is judged as in ``SharedNodeRegistry``, from
/// the heartbeat times this process recorded, so workers of several hubs on one database (tests) see each other the
/// same way.
public final class ProcessNodeRegistry: Sendable {
    private let entries = Mutex<[String: HubNode]>([:])

    /// Creates an empty registry.
    public init() {}

    /// Records a heartbeat; returns the live entries, oldest heartbeat dropped after an hour.
    func record(_ node: HubNode, now: Date) -> [HubNode] {
        entries.withLock { entries in
            var entry = node
            entry.heartbeatTime = now
            entry.partitions = 0
            entries[node.id] = entry
            entries = entries.filter { now.timeIntervalSince($0.value.heartbeatTime) <= 3600 }
            return Self.live(entries, now: now)
        }
    }

    /// The live entries, by name then id.
    func live(now: Date) -> [HubNode] {
        entries.withLock { Self.live($0, now: now) }
    }

    /// Removes an entry.
    func remove(_ id: String) {
        _ = entries.withLock { $0.removeValue(forKey: id) }
    }

    private static func live(_ entries: [String: HubNode], now: Date) -> [HubNode] {
        entries.values
            .filter { $0.heartbeatTime.timeIntervalSince1970 >= now.timeIntervalSince1970 - HubNode.livenessSeconds }
            .sorted { ($0.name, $0.id) < ($1.name, $1.id) }
    }
}

/// ``NodeRegistry`` over a ``ProcessNodeRegistry``: the partitions each node holds are read from the database.
struct LocalNodeRegistry: NodeRegistry {
    let registry: ProcessNodeRegistry
    let database: any HubDatabase

    func heartbeat(_ node: HubNode, now: Date) async throws -> [HubNode] {
        registry.record(node, now: now)
    }

    func nodes(now: Date) async throws -> [HubNode] {
        let live = registry.live(now: now)
        guard !live.isEmpty else { return [] }
        let rows = try await database.read(
            """
            SELECT lease_owner, COUNT(*) AS partitions FROM notification_partitions
            WHERE state = 'Processing' AND lease_expires >= ? GROUP BY lease_owner
            """,
            [.float(now.timeIntervalSince1970)])
        var held: [String: Int] = [:]
        for row in rows { if let owner = row.string("lease_owner") { held[owner] = row.int("partitions") ?? 0 } }
        return live.map { node in
            var node = node
            node.partitions = held[node.id] ?? 0
            return node
        }
    }

    func leave(nodeID: String) async throws {
        registry.remove(nodeID)
        try await database.notifyWork(from: nodeID, on: DatabaseReads(database: database))
    }

    func liveCount(now: Date, on connection: any SQLExecutor) async throws -> Int {
        max(1, registry.live(now: now).count)
    }
}
