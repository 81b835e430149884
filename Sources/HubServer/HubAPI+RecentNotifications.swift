import Foundation
import HTTPTypes
import Hummingbird
import NotificationHub

/// `GET /{hub}/messages?top=&continuationToken=` (Manage): the hub's notifications, newest first, with their state
/// and outcome counts so far.
extension HubAPI {
    struct RecentNotificationList: Encodable {
        struct Entry: Encodable {
            var notificationId: String
            var state: String
            var format: String
            /// `all`, `tags`, or `direct`.
            var audience: String
            /// The tag expression (`tags`), or the platform and number of handles (`direct`).
            var tags: String?
            var platform: String?
            var handles: Int?
            var enqueueTime: Date
            var scheduledTime: Date?
            var startTime: Date?
            var endTime: Date?
            var outcomeCounts: [String: [NotificationDetails.OutcomeCount]]
        }

        var notifications: [Entry]
        var continuationToken: String?
    }

    func recentNotifications(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        let hub = try authorize(request, context, .manage)
        let query = request.uri.queryParameters
        var top = 50
        if let text = query.get("top") {
            guard let value = Int(text), (1...1000).contains(value) else {
                throw APIError.badRequest("InvalidParameter", "top must be an integer from 1 to 1000")
            }
            top = value
        }
        var cursor: RecentNotificationCursor?
        if let token = query.get("continuationToken"), !token.isEmpty { cursor = try RecentNotificationCursor(token: token) }
        let page = try await hub.notifications.recent(after: cursor, limit: top)
        let entries = page.notifications.map { overview in
            var entry = RecentNotificationList.Entry(
                notificationId: overview.id, state: overview.state.name, format: overview.format.name, audience: "all",
                enqueueTime: overview.enqueueTime, scheduledTime: overview.scheduledTime, startTime: overview.startTime,
                endTime: overview.endTime, outcomeCounts: [:])
            switch overview.audience {
            case .all: break
            case .tags(let expression):
                entry.audience = "tags"
                entry.tags = expression.description
            case .handles(let platform, let handles):
                entry.audience = "direct"
                entry.platform = platform.name
                entry.handles = handles.count
            }
            for (platform, outcomes) in overview.summary.counts {
                entry.outcomeCounts[platform.name] = outcomes.sorted { $0.key < $1.key }.map {
                    NotificationDetails.OutcomeCount(name: $0.key.name, count: $0.value)
                }
            }
            return entry
        }
        var response = try json(
            RecentNotificationList(notifications: entries, continuationToken: page.next?.token),
            headers: page.next.map { [HTTPField.Name("x-ms-continuationtoken")!: $0.token] } ?? [:])
        response.headers[.cacheControl] = "no-store"
        return response
    }
}
