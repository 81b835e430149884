import Foundation
import NIOCore

/// How a notification row is encoded and read: its audience, its counts and the row itself.
extension SQLNotificationStore {
    static func encode(_ audience: Audience) throws -> String {
        switch audience {
        case .all: return "all"
        case .tags(let expression): return "tags:" + expression.description
        case .handles(let platform, let channels):
            let data = try JSONEncoder().encode(channels)
            return "handles:\(platform.name):" + String(decoding: data, as: UTF8.self)
        case .unreadable(let text):
            return text
        }
    }

    static func readAudience(_ text: String, lenient: Bool) throws -> Audience {
        do {
            return try decodeAudience(text)
        } catch {
            if lenient { return .unreadable(text) }
            throw error
        }
    }

    static func decodeAudience(_ text: String) throws -> Audience {
        if text == "all" { return .all }
        if text.hasPrefix("tags:") {
            return .tags(try TagExpression(parsing: String(text.dropFirst(5)), limits: .init(maximumTagsOrOnly: .max, maximumTags: .max, maximumDepth: 1024)))
        }
        if text.hasPrefix("handles:") {
            let rest = text.dropFirst(8)
            guard let colon = rest.firstIndex(of: ":") else { throw HubError(.storageFailure, "a stored audience is corrupt") }
            let channels = try JSONDecoder().decode([PushChannel].self, from: Data(rest[rest.index(after: colon)...].utf8))
            return .handles(Platform(String(rest[..<colon])), channels)
        }
        throw HubError(.storageFailure, "a stored audience is corrupt")
    }

    static func encode(_ summary: DispatchSummary) throws -> String {
        var object: [String: [String: Int]] = [:]
        for (platform, outcomes) in summary.counts {
            object[platform.name] = Dictionary(uniqueKeysWithValues: outcomes.map { ($0.key.name, $0.value) })
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return String(decoding: try encoder.encode(object), as: UTF8.self)
    }

    static func decodeSummary(_ text: String) throws -> DispatchSummary {
        let object = try JSONDecoder().decode([String: [String: Int]].self, from: Data(text.utf8))
        var summary = DispatchSummary()
        for (platform, outcomes) in object {
            for (outcome, count) in outcomes { summary.record(Outcome(outcome), platform: Platform(platform), count: count) }
        }
        return summary
    }

    /// Reads a notification row. Strict (for delivery) throws on an audience that cannot be parsed; lenient (for
    /// telemetry) reads it as ``Audience/unreadable(_:)``.
    static func decode(_ row: SQLRow) throws -> NotificationRecord {
        try decode(row, lenient: false)
    }

    static func decode(_ row: SQLRow, lenient: Bool) throws -> NotificationRecord {
        guard let id = row.string("id"), let format = row.string("format"),
            let state = row.string("state")
        else { throw HubError(.storageFailure, "a stored notification row is incomplete") }
        // A missing audience is an unreadable row, never a broadcast.
        guard let audience = row.string("audience") else { throw HubError(.storageFailure, "the stored audience is missing") }
        let headers = try JSONDecoder().decode(NotificationHeaders.self, from: Data((row.string("headers") ?? "[]").utf8))
        let enqueue = Date(timeIntervalSince1970: row.double("enqueue_time") ?? 0)
        let notification = Notification(
            id: id, format: NotificationFormat(format), body: row.blob("body") ?? ByteBuffer(),
            headers: headers, audience: try readAudience(audience, lenient: lenient), createdAt: enqueue)
        return NotificationRecord(
            notification: notification, state: NotificationState(state), enqueueTime: enqueue,
            scheduledTime: row.double("scheduled_time").map { Date(timeIntervalSince1970: $0) },
            startTime: row.double("start_time").map { Date(timeIntervalSince1970: $0) },
            endTime: row.double("end_time").map { Date(timeIntervalSince1970: $0) },
            summary: try decodeSummary(row.string("counts") ?? "{}"), reason: row.string("reason"))
    }
}
