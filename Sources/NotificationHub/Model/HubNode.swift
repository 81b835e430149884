import Foundation

/// One running hub process working for a hub: a node. Every node on a shared database (PostgreSQL) records a
/// heartbeat; a node is live while its last heartbeat is recent, and a large fan-out is split among the live nodes.
public struct HubNode: Sendable, Hashable, Codable {
    /// What identifies the node's leases: its name and a suffix unique to the process run, so that a restarted node
    /// (or two nodes given the same name by mistake) never holds another run's leases.
    public var id: String
    /// The node's name (`hub serve --node-name`, `server.nodeName`; by default `<host>-<pid>`).
    public var name: String
    /// When the node started working for the hub.
    public var startedTime: Date
    /// The node's last heartbeat.
    public var heartbeatTime: Date
    /// Deliveries the node committed since it started (as of its last heartbeat).
    public var delivered: Int
    /// Partitions the node holds a lease on now.
    public var partitions: Int

    /// Creates a node's description.
    public init(id: String, name: String, startedTime: Date, heartbeatTime: Date, delivered: Int = 0, partitions: Int = 0) {
        self.id = id
        self.name = name
        self.startedTime = startedTime
        self.heartbeatTime = heartbeatTime
        self.delivered = delivered
        self.partitions = partitions
    }

    /// Seconds between a node's heartbeats.
    public static let heartbeatSeconds: Double = 2
    /// Seconds after its last heartbeat for which a node still counts as live (missing four beats in a row ends it).
    public static let livenessSeconds: Double = 10

    /// The default node name: the host's name and the process id.
    public static var defaultName: String {
        "\(ProcessInfo.processInfo.hostName)-\(ProcessInfo.processInfo.processIdentifier)"
    }

    /// Whether `name` can name a node: 1–100 letters, digits, `.`, `_`, `-` or `:`.
    public static func isValidName(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= 100
            && name.unicodeScalars.allSatisfy {
                $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || "._-:".unicodeScalars.contains($0))
            }
    }
}
