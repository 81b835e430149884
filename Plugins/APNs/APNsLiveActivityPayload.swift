import AdapterKit
import NIOCore

/// The rules of a Live Activity push (formats `liveactivity` and `liveactivitystart`), checked when the hub accepts
/// the send, so a payload ActivityKit would drop is a 400 instead of a silent no-show on the device.
///
/// From Apple's "Starting and updating Live Activities with ActivityKit push notifications": the `aps` dictionary
/// holds `timestamp` (UNIX seconds; required: the device ignores a push older than the last update it applied) and
/// `event` (`start`, `update` or `end`; required); `content-state` (the activity's `ContentState` as JSON) is required
/// to start or update and optional to end; `attributes-type` and `attributes` start an activity and only start one;
/// `stale-date` and `dismissal-date` are UNIX seconds; `relevance-score` a number; `alert` a dictionary (title, body,
/// sound) or text; `input-push-token: 1` asks, on start, for the new activity's update token. Live Activity pushes go
/// with `apns-push-type: liveactivity` and `apns-priority` 5 or 10.
public struct APNsLiveActivityPayload: Sendable, Hashable {
    /// What a Live Activity push does.
    public enum Event: String, Sendable, Hashable, CaseIterable {
        /// Starts an activity (to a push-to-start token).
        case start
        /// Updates an activity's content.
        case update
        /// Ends an activity.
        case end
    }

    /// The push's event.
    public var event: Event

    /// Reads and checks a payload.
    ///
    /// - Parameter format: `liveactivitystart` takes only `start`, `liveactivity` only `update` and `end`.
    /// - Throws: ``HubError`` `InvalidNotification` naming the key to fix.
    public init(validating body: ByteBuffer, format: NotificationFormat) throws(HubError) {
        guard case .object(let object)? = try? JSONValue(parsing: Array(body.readableBytesView)) else {
            throw Self.problem("the payload must be a JSON object with an \"aps\" dictionary")
        }
        guard case .object(let aps)? = object["aps"] else {
            throw Self.problem("the payload must hold an \"aps\" dictionary")
        }
        guard let eventValue = aps["event"] else {
            throw Self.problem("aps.event is required: \"start\", \"update\" or \"end\"")
        }
        guard let name = eventValue.stringValue else {
            throw Self.problem("aps.event must be the string \"start\", \"update\" or \"end\", not \(Self.describe(eventValue))")
        }
        guard let event = Event(rawValue: name) else {
            throw Self.problem("aps.event \"\(name.prefix(20))\" is not an event; use \"start\", \"update\" or \"end\"")
        }
        if format == .liveActivityStart, event != .start {
            throw Self.problem("a liveactivitystart send starts activities: aps.event must be \"start\", not \"\(name)\"")
        }
        if format == .liveActivity, event == .start {
            throw Self.problem(
                "a liveactivity send updates or ends activities; send \"start\" in format liveactivitystart, to push-to-start tokens")
        }
        guard let timestamp = aps["timestamp"] else {
            throw Self.problem("aps.timestamp is required: the UNIX time in seconds the content was made")
        }
        try Self.checkSeconds(timestamp, key: "timestamp")
        switch aps["content-state"] {
        case nil where event != .end:
            throw Self.problem("aps.content-state is required to \(name) an activity: the activity's ContentState as a JSON object")
        case nil, .object?:
            break
        case let value?:
            throw Self.problem("aps.content-state must be a JSON object, not \(Self.describe(value))")
        }
        if event == .start {
            guard let type = aps["attributes-type"] else {
                throw Self.problem("aps.attributes-type is required to start an activity: the name of its ActivityAttributes type")
            }
            guard let text = type.stringValue, !text.isEmpty else {
                throw Self.problem("aps.attributes-type must be the non-empty name of the ActivityAttributes type, not \(Self.describe(type))")
            }
            guard let attributes = aps["attributes"] else {
                throw Self.problem("aps.attributes is required to start an activity: its ActivityAttributes as a JSON object")
            }
            guard case .object = attributes else {
                throw Self.problem("aps.attributes must be a JSON object, not \(Self.describe(attributes))")
            }
            if let token = aps["input-push-token"], token != .number(1) {
                throw Self.problem("aps.input-push-token must be 1 (ask for the new activity's update token), not \(Self.describe(token))")
            }
        } else {
            for key in ["attributes-type", "attributes", "input-push-token"] where aps[key] != nil {
                throw Self.problem("aps.\(key) belongs to a start only; leave it out of an \(name)")
            }
        }
        for key in ["stale-date", "dismissal-date"] {
            if let value = aps[key] { try Self.checkSeconds(value, key: key) }
        }
        if let score = aps["relevance-score"] {
            guard case .number(let number) = score, number.isFinite else {
                throw Self.problem("aps.relevance-score must be a number, not \(Self.describe(score))")
            }
        }
        if let alert = aps["alert"] {
            switch alert {
            case .object, .string: break
            default: throw Self.problem("aps.alert must be a dictionary (title, body, sound) or text, not \(Self.describe(alert))")
            }
        }
        self.event = event
    }

    /// The priorities a Live Activity push may have: 5 (delivered when convenient, not counted against the
    /// device's update budget) or 10 (at once).
    public static let priorities: Set<String> = ["5", "10"]

    /// Checks a time in UNIX seconds: a whole, non-negative number before the year 10000 (so milliseconds are refused).
    static func checkSeconds(_ value: JSONValue, key: String) throws(HubError) {
        guard case .number(let number) = value, number.isFinite, number >= 0, number.rounded() == number,
            number < 253_402_300_800
        else {
            throw problem(
                "aps.\(key) must be a time in whole UNIX seconds (a non-negative integer before the year 10000, not milliseconds), not \(describe(value))")
        }
    }

    /// A value's kind for a message; payload text is never echoed.
    static func describe(_ value: JSONValue) -> String {
        switch value {
        case .string: "a string"
        case .number(let number): number.isFinite ? "the number \(number)" : "a number"
        case .array: "an array"
        case .object: "an object"
        case .bool: "a boolean"
        case .null: "null"
        }
    }

    static func problem(_ message: String) -> HubError {
        HubError(.invalidNotification, message)
    }
}
