import Foundation

/// The store's node registry (``NodeRegistry``), listening for work, and when an idle worker should look again.
extension SQLNotificationStore {
    public func heartbeat(_ node: HubNode, now: Date) async throws -> [HubNode] {
        try await nodeRegistry.heartbeat(node, now: now)
    }

    public func nodes(now: Date) async throws -> [HubNode] {
        try await nodeRegistry.nodes(now: now)
    }

    public func leave(nodeID: String) async throws {
        try await nodeRegistry.leave(nodeID: nodeID)
    }

    public func listenForWork(_ wake: @escaping @Sendable (_ sender: String) -> Void) async throws {
        try await database.listenForWork(wake)
    }

    public var announcesAllWork: Bool { database.processNodes != nil }

    public func nextDue(now: Date) async throws -> Date? {
        let time = now.timeIntervalSince1970
        // Open partitions (a split's share held back for other nodes, or handed back): due now. Otherwise the first
        // scheduled time and the first lease to run out; each is the first entry of an index range.
        let rows = try await database.read(
            """
            SELECT
                (SELECT MIN(scheduled_time) FROM notifications WHERE state = 'Scheduled') AS scheduled,
                (SELECT MIN(lease_expires) FROM notification_partitions WHERE state = 'Processing') AS lease,
                EXISTS (SELECT 1 FROM notification_partitions WHERE state = 'Pending') AS open
            """, [])
        guard let row = rows.first else { return nil }
        if (row.int("open") ?? 0) > 0 { return now }
        let times = [row.double("scheduled"), row.double("lease").map { $0 + 0.001 }].compactMap { $0 }
        return times.min().map { Date(timeIntervalSince1970: max($0, time)) }
    }
}
