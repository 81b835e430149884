import Foundation
import HTTPTypes
import Hummingbird
import NotificationHub

/// `GET /{hub}/messages?top=&continuationToken=` (Manage): the hub's notifications, newest first, with their state
/// and outcome counts so far.
extension MessagesController {
    struct RecentNotificationList: Encodable {
        struct Entry: Encodable {
            var notificationId: String
            var state: String
            var format: String
            /// `all`, `tags`, `direct`, or `unknown` (a stored audience that cannot be read).
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
            /// Why it ended without being delivered, when it did.
            var reason: String?
        }

        var notifications: [Entry]
        var continuationToken: String?
    }

    func recent(_ request: Request, _ context: HubContext) async throws -> Response {
        let hub = context.hub
        let top = try HubAPI.integer(request, "top", default: 50, in: 1...1000)
        var cursor: RecentNotificationCursor?
        if let token = request.uri.queryParameters.get("continuationToken"), !token.isEmpty {
            cursor = try RecentNotificationCursor(token: token)
        }
        let page = try await hub.sends.recentNotifications(after: cursor, limit: top)
        let entries = page.notifications.map { overview in
            var entry = RecentNotificationList.Entry(
                notificationId: overview.id, state: overview.state.name, format: overview.format.name, audience: "all",
                enqueueTime: overview.enqueueTime, scheduledTime: overview.scheduledTime, startTime: overview.startTime,
                endTime: overview.endTime, outcomeCounts: [:], reason: overview.reason)
            switch overview.audience {
            case .unreadable: entry.audience = "unknown"
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
        var response = try api.json(
            RecentNotificationList(notifications: entries, continuationToken: page.next?.token),
            headers: page.next.map { [HTTPField.Name("x-ms-continuationtoken")!: $0.token] } ?? [:])
        response.headers[.cacheControl] = "no-store"
        return response
    }
}
