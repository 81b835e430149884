import Foundation

/// A notification as listed among the recent ones: everything but its payload and headers.
public struct NotificationOverview: Sendable {
    /// The notification's id.
    public var id: String
    /// Its format.
    public var format: NotificationFormat
    /// Whom it is for (``Audience/unreadable(_:)`` when the stored audience cannot be read).
    public var audience: Audience
    /// Its state.
    public var state: NotificationState
    /// When it was accepted.
    public var enqueueTime: Date
    /// When it is due (scheduled sends).
    public var scheduledTime: Date?
    /// When a worker started it.
    public var startTime: Date?
    /// When it finished.
    public var endTime: Date?
    /// Outcome counts so far, per platform.
    public var summary: DispatchSummary
    /// Why it ended without being delivered, when it did.
    public var reason: String?

    /// Creates an overview.
    public init(
        id: String, format: NotificationFormat, audience: Audience, state: NotificationState, enqueueTime: Date,
        scheduledTime: Date? = nil, startTime: Date? = nil, endTime: Date? = nil, summary: DispatchSummary = DispatchSummary(),
        reason: String? = nil
    ) {
        self.reason = reason
        self.id = id
        self.format = format
        self.audience = audience
        self.state = state
        self.enqueueTime = enqueueTime
        self.scheduledTime = scheduledTime
        self.startTime = startTime
        self.endTime = endTime
        self.summary = summary
    }
}

/// A position in the list of recent notifications: the last one of a page (newest first, by enqueue time, then id).
public struct RecentNotificationCursor: Sendable, Hashable {
    /// The enqueue time of the last notification listed.
    public var enqueueTime: Double
    /// Its id.
    public var id: String

    /// Creates a cursor.
    public init(enqueueTime: Double, id: String) {
        self.enqueueTime = enqueueTime
        self.id = id
    }

    /// The opaque continuation token form.
    public var token: String { String(enqueueTime.bitPattern, radix: 36) + "." + id }

    /// Parses a continuation token.
    public init(token: String) throws(HubError) {
        guard let dot = token.firstIndex(of: "."), let bits = UInt64(token[..<dot], radix: 36),
            case let id = String(token[token.index(after: dot)...]), !id.isEmpty
        else {
            throw HubError(.invalidContinuationToken, "the continuation token '\(token.prefix(40))' is not one this hub issued")
        }
        self.init(enqueueTime: Double(bitPattern: bits), id: id)
    }
}

/// One page of recent notifications.
public struct RecentNotificationPage: Sendable {
    /// The notifications, newest first.
    public var notifications: [NotificationOverview]
    /// Where the next page starts, or `nil` when this was the last page.
    public var next: RecentNotificationCursor?

    /// Creates a page.
    public init(notifications: [NotificationOverview], next: RecentNotificationCursor?) {
        self.notifications = notifications
        self.next = next
    }
}

extension NotificationState {
    /// Every state the hub writes.
    public static let all: [NotificationState] = [
        .enqueued, .scheduled, .processing, .completed, .abandoned, .noTargetFound, .cancelled,
    ]
}

extension SQLNotificationStore {
    static let overviewColumns =
        "id, format, audience, state, enqueue_time, scheduled_time, start_time, end_time, counts, reason"

    /// Notifications newest first (by enqueue time, then id), after `cursor`.
    ///
    /// One index range per state (the `(state, enqueue_time)` index), merged: the newest page costs the same however
    /// many notifications the store keeps. A row whose audience or counts cannot be read is still listed (without
    /// them), so one bad row never hides the others.
    public func recent(after cursor: RecentNotificationCursor?, limit: Int) async throws -> RecentNotificationPage {
        let limit = max(1, limit)
        var branches: [String] = []
        var binds: [SQLValue] = []
        for (index, state) in NotificationState.all.enumerated() {
            var condition = "state = ?"
            binds.append(.text(state.name))
            if let cursor {
                condition += " AND (enqueue_time < ? OR (enqueue_time = ? AND id < ?))"
                binds += [.float(cursor.enqueueTime), .float(cursor.enqueueTime), .text(cursor.id)]
            }
            binds.append(.integer(limit + 1))
            branches.append(
                """
                SELECT * FROM (SELECT \(Self.overviewColumns) FROM notifications WHERE \(condition)
                    ORDER BY enqueue_time DESC, id DESC LIMIT ?) AS s\(index)
                """)
        }
        binds.append(.integer(limit + 1))
        let rows = try await database.read(
            branches.joined(separator: "\nUNION ALL\n") + "\nORDER BY enqueue_time DESC, id DESC LIMIT ?", binds)
        let overviews = try rows.prefix(limit).map { row in
            guard let id = row.string("id"), let format = row.string("format"), let state = row.string("state") else {
                throw HubError(.storageFailure, "a stored notification row is incomplete")
            }
            return NotificationOverview(
                id: id, format: NotificationFormat(format), audience: try Self.readAudience(row.string("audience") ?? "all", lenient: true),
                state: NotificationState(state), enqueueTime: Date(timeIntervalSince1970: row.double("enqueue_time") ?? 0),
                scheduledTime: row.double("scheduled_time").map { Date(timeIntervalSince1970: $0) },
                startTime: row.double("start_time").map { Date(timeIntervalSince1970: $0) },
                endTime: row.double("end_time").map { Date(timeIntervalSince1970: $0) },
                summary: (try? Self.decodeSummary(row.string("counts") ?? "{}")) ?? DispatchSummary(),
                reason: row.string("reason"))
        }
        var next: RecentNotificationCursor?
        if rows.count > limit, let last = rows.prefix(limit).last, let id = last.string("id") {
            next = RecentNotificationCursor(enqueueTime: last.double("enqueue_time") ?? 0, id: id)
        }
        return RecentNotificationPage(notifications: overviews, next: next)
    }
}
