import Foundation
import NIOCore
import NotificationHub

/// A Live Activity send as `POST /{hub}/liveactivities/messages` takes it, read and checked before anything is
/// enqueued, and the notification it becomes: the `aps` payload the hub builds, `apns-push-type: liveactivity` and
/// `apns-priority`, to the push-to-start tokens (`start`, format `liveactivitystart`) or the activity update tokens
/// (`update`, `end`, format `liveactivity`) that `tags`, or `$ActivityId:{activityId}`, matches.
///
/// ```json
/// {"event": "update", "activityId": "match-1234", "contentState": {"home": 2, "away": 1},
///  "alert": {"title": "Goal!", "body": "2–1"}, "staleDate": 1767229200, "priority": 10}
/// ```
struct LiveActivityMessage: Sendable {
    /// What the push does.
    enum Event: String, Sendable, CaseIterable {
        case start, update, end
    }

    /// Who receives it.
    enum Target: Sendable, Hashable {
        /// The activity with this id, on every device that registered it.
        case activity(String)
        /// The devices (start) or activities (update, end) a tag expression matches.
        case tags(TagExpression)
    }

    var event: Event
    var target: Target
    /// The aps members the hub builds, without `timestamp` (set at accept).
    var aps: [String: JSONValue]
    /// 5 or 10.
    var priority: Int
    /// When to send, for a scheduled send.
    var scheduledTime: Date?

    /// The members a send may hold.
    static let fields: Set<String> = [
        "event", "activityId", "tags", "contentState", "attributesType", "attributes", "alert", "staleDate",
        "dismissalDate", "relevanceScore", "priority", "inputPushToken", "scheduledTime",
    ]

    /// The largest `aps` payload, in bytes (APNs' limit for a Live Activity push).
    static let maximumPayloadBytes = 4096

    /// Reads a send's JSON body; every problem is a 400 with a code saying what to fix.
    init(body: ByteBuffer, parseExpression: (String) throws(HubError) -> TagExpression) throws(APIError) {
        guard case .object(let object)? = try? JSONValue(parsing: Array(body.readableBytesView)) else {
            throw APIError.badRequest("InvalidBody", "the body must be a JSON object such as {\"event\":\"update\",\"activityId\":\"…\",\"contentState\":{…}}")
        }
        if let unknown = object.keys.sorted().first(where: { !Self.fields.contains($0) }) {
            throw APIError.badRequest(
                "UnknownField",
                "'\(unknown.prefix(40))' is not a field of a Live Activity send; use \(Self.fields.sorted().joined(separator: ", "))")
        }
        guard let eventValue = object["event"] else {
            throw APIError.badRequest("MissingEvent", "event is required: \"start\", \"update\" or \"end\"")
        }
        guard let name = eventValue.stringValue, let event = Event(rawValue: name) else {
            throw APIError.badRequest("InvalidEvent", "event must be \"start\", \"update\" or \"end\"")
        }
        self.event = event

        switch (object["activityId"], object["tags"]) {
        case (_?, _?):
            throw APIError.badRequest("AmbiguousTarget", "give activityId or tags, not both")
        case (nil, nil):
            throw APIError.badRequest(
                "MissingTarget",
                event == .start
                    ? "a start needs tags: a tag expression naming the devices to start the activity on, e.g. $UserId:{alice}"
                    : "give activityId (the activity to \(name)) or tags (a tag expression matching activities)")
        case (let id?, nil):
            guard event != .start else {
                throw APIError.badRequest(
                    "InvalidTarget",
                    "a start cannot name an activityId (the activity does not exist yet); give tags naming the devices, e.g. $UserId:{alice}")
            }
            guard let text = id.stringValue else {
                throw APIError.badRequest("InvalidActivityId", "activityId must be a string")
            }
            try LiveActivityRegistration.checkActivityID(text)
            target = .activity(text)
        case (nil, let tags?):
            guard let text = tags.stringValue, !text.allSatisfy(\.isWhitespace) else {
                throw APIError.badRequest("InvalidTagExpression", "tags must be a non-blank tag expression string")
            }
            do {
                target = .tags(try parseExpression(text))
            } catch {
                throw APIError(error)
            }
        }

        var aps: [String: JSONValue] = ["event": .string(name)]
        switch object["contentState"] {
        case nil where event != .end:
            throw APIError.badRequest("MissingContentState", "contentState is required to \(name) an activity: its ContentState as a JSON object")
        case nil:
            break
        case .object?:
            aps["content-state"] = object["contentState"]
        case let value?:
            throw APIError.badRequest("InvalidContentState", "contentState must be a JSON object (the activity's ContentState), not \(Self.kind(value))")
        }
        if event == .start {
            guard let type = object["attributesType"], let attributes = object["attributes"] else {
                throw APIError.badRequest(
                    "MissingAttributes",
                    "a start needs attributesType (the name of the ActivityAttributes type) and attributes (its values as a JSON object)")
            }
            guard let typeName = type.stringValue, LiveActivityRegistration.isAttributesType(typeName) else {
                throw APIError.badRequest(
                    "InvalidAttributesType", "attributesType must name the ActivityAttributes type: 1–200 letters, digits, _ or .")
            }
            guard case .object = attributes else {
                throw APIError.badRequest("InvalidAttributes", "attributes must be a JSON object, not \(Self.kind(attributes))")
            }
            aps["attributes-type"] = .string(typeName)
            aps["attributes"] = attributes
            switch object["inputPushToken"] {
            case nil, .bool(false)?: break
            case .bool(true)?: aps["input-push-token"] = .number(1)
            case let value?:
                throw APIError.badRequest("InvalidInputPushToken", "inputPushToken must be true or false, not \(Self.kind(value))")
            }
        } else {
            for field in ["attributesType", "attributes", "inputPushToken"] where object[field] != nil {
                throw APIError.badRequest(
                    "StartOnlyField", "\(field) belongs to a start only (an activity's attributes are fixed when it starts); leave it out of an \(name)")
            }
        }
        if let alert = object["alert"] {
            guard case .object(let members) = alert, !members.isEmpty else {
                throw APIError.badRequest("InvalidAlert", "alert must be a JSON object such as {\"title\":\"…\",\"body\":\"…\",\"sound\":\"default\"}")
            }
            aps["alert"] = alert
        }
        for (field, key) in [("staleDate", "stale-date"), ("dismissalDate", "dismissal-date")] {
            guard let value = object[field] else { continue }
            guard case .number(let seconds) = value, seconds.isFinite, seconds >= 0, seconds.rounded() == seconds,
                seconds < 253_402_300_800
            else {
                throw APIError.badRequest(
                    "InvalidDate", "\(field) must be a time in whole UNIX seconds (a non-negative integer, not milliseconds), not \(Self.kind(value))")
            }
            aps[key] = value
        }
        if let value = object["relevanceScore"] {
            guard case .number(let score) = value, score.isFinite else {
                throw APIError.badRequest("InvalidRelevanceScore", "relevanceScore must be a finite number, not \(Self.kind(value))")
            }
            aps["relevance-score"] = value
        }
        switch object["priority"] {
        case nil: priority = 10
        case .number(5)?: priority = 5
        case .number(10)?: priority = 10
        case let value?:
            throw APIError.badRequest(
                "InvalidPriority",
                "priority must be 5 (sent when convenient, not counted against the device's update budget) or 10 (at once), not \(Self.kind(value))")
        }
        if let value = object["scheduledTime"] {
            guard let text = value.stringValue, let time = HubDateFormat.date(from: text) else {
                throw APIError.badRequest(
                    "InvalidScheduleTime", "scheduledTime must be an ISO 8601 time such as 2026-12-01T09:00:00Z (a time without a zone is read as UTC)")
            }
            scheduledTime = time
        } else {
            scheduledTime = nil
        }
        self.aps = aps
    }

    /// The notification to enqueue: the `aps` payload with `timestamp` (`now` in whole seconds, or the scheduled
    /// time for a scheduled send, so that an end that waited is not older than the updates sent meanwhile, which
    /// the device would keep instead), in the format and to the audience of the event.
    ///
    /// - Throws: 400 `PayloadTooLarge` when the payload is over 4096 bytes.
    func notification(now: Date) throws(APIError) -> NotificationHub.Notification {
        var aps = self.aps
        let time = scheduledTime.map { max($0, now) } ?? now
        aps["timestamp"] = .number(time.timeIntervalSince1970.rounded(.down))
        let payload = JSONValue.object(["aps": .object(aps)]).jsonString()
        guard payload.utf8.count <= Self.maximumPayloadBytes else {
            throw APIError.badRequest(
                "PayloadTooLarge",
                "the Live Activity payload the hub builds is \(payload.utf8.count) bytes; APNs takes at most \(Self.maximumPayloadBytes): make contentState, attributes or alert smaller")
        }
        let audience: Audience
        switch target {
        case .activity(let id): audience = .tags(.tag(SystemTag.activityID(id)))
        case .tags(let expression): audience = .tags(expression)
        }
        return NotificationHub.Notification(
            format: NotificationFormat(event == .start ? "liveactivitystart" : "liveactivity"), body: payload,
            headers: ["apns-push-type": "liveactivity", "apns-priority": String(priority)], audience: audience, createdAt: now)
    }

    /// A JSON value's kind, for messages (the value itself is never echoed).
    static func kind(_ value: JSONValue) -> String {
        switch value {
        case .null: "null"
        case .bool: "a boolean"
        case .number(let number): number.isFinite ? "the number \(number)" : "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }
}
