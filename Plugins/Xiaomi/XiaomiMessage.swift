import AdapterKit
import Foundation
import NIOCore

/// A notification in the `xiaomi` format, checked against Mi Push's message rules, ready to be sent to a batch of
/// registration ids as `POST /v3/message/regid` form fields.
///
/// Azure's .NET SDK sends a `XiaomiNotification` as a JSON body (`application/json`) and leaves its members to the
/// service; here that body is a JSON object of Mi Push's own send parameters, as Xiaomi's "Server API Address and
/// Parameters" names them (https://dev.mi.com/xiaomihyperos/documentation/detail?pId=1696, pId=1559):
///
/// ```json
/// {"title": "Hello", "description": "From the hub", "payload": "{\"id\":7}", "pass_through": 0,
///  "notify_type": -1, "time_to_live": 86400000, "notify_id": 3, "extra": {"notify_effect": "1"}}
/// ```
///
/// Each member becomes the form field of the same name, `extra`'s members become `extra.<key>`. Rules checked:
/// `title` (shorter than 50 characters) and `description` (shorter than 128), neither blank, are required for a
/// notification message (`pass_through` 0, the default); a pass-through message (`pass_through` 1) needs `payload`;
/// `payload` is a string of at most ``maximumPayloadBytes`` bytes; `notify_type` is -1 (all defaults) or an OR of
/// 1 (sound), 2 (vibration) and 4 (lights); `time_to_live` positive milliseconds; `time_to_send` a positive UNIX
/// time in milliseconds; `notify_id` a non-negative integer; `extra` an object of strings. The hub sets
/// `registration_id` and `restricted_package_name`; a body naming a target of its own is refused.
public struct XiaomiMessage: Sendable {
    /// The largest `payload` the hub sends, in bytes (Mi Push answers `65009`, content too long, above its limit).
    public static let maximumPayloadBytes = 4096
    /// The largest whole body the hub accepts: the payload's limit plus room for the other members.
    public static let maximumBytes = 8192
    /// `title` is shorter than this, in characters.
    public static let titleLimit = 50
    /// `description` is shorter than this, in characters.
    public static let descriptionLimit = 128
    /// The members a body may hold.
    public static let members: Set<String> = [
        "title", "description", "payload", "pass_through", "notify_type", "time_to_live", "time_to_send", "notify_id",
        "extra",
    ]
    /// Members naming a target, which the hub sets.
    public static let targets: Set<String> = [
        "registration_id", "restricted_package_name", "alias", "user_account", "topic", "topics", "topic_op",
    ]

    /// A payload Mi Push would refuse: the reason it would give, and the error the hub answers with.
    public struct Refusal: Error, Sendable {
        /// What Mi Push would answer.
        public var reason: XiaomiReason
        /// The hub's error, saying what to fix.
        public var error: HubError
    }

    /// The form fields, in a stable order, without the target.
    public let fields: [(name: String, value: String)]
    /// Whether the body sets `time_to_live` itself (else a send's expiry may).
    public let hasTimeToLive: Bool

    /// Checks a payload.
    /// - Throws: ``HubError`` with `payloadTooLarge` or `invalidNotification`, saying what to fix.
    public init(payload: ByteBuffer) throws(HubError) {
        switch Self.check(payload) {
        case .success(let message): self = message
        case .failure(let refusal): throw refusal.error
        }
    }

    private init(fields: [(name: String, value: String)], hasTimeToLive: Bool) {
        self.fields = fields
        self.hasTimeToLive = hasTimeToLive
    }

    /// Checks a payload, naming the reason Mi Push would refuse it with.
    public static func check(_ payload: ByteBuffer) -> Result<XiaomiMessage, Refusal> {
        func refuse(_ reason: XiaomiReason, _ message: String) -> Result<XiaomiMessage, Refusal> {
            let code: HubError.Code = reason == .messageTooLong ? .payloadTooLarge : .invalidNotification
            return .failure(Refusal(reason: reason, error: HubError(code, message)))
        }
        if payload.readableBytes > maximumBytes {
            return refuse(.messageTooLong, "a xiaomi message is at most \(maximumBytes) bytes; this one is \(payload.readableBytes)")
        }
        guard case .object(let root)? = try? JSONValue(parsing: Array(payload.readableBytesView)) else {
            return refuse(.invalidParameter, #"a xiaomi payload is a JSON object: {"title": "…", "description": "…", "payload": "…"}"#)
        }
        for key in root.keys.sorted() where targets.contains(key) {
            return refuse(.invalidParameter, "\(key) is set by the hub (from the installation and packageNames); leave it out")
        }
        for key in root.keys.sorted() where !members.contains(key) {
            return refuse(
                .invalidParameter,
                "a xiaomi message holds \(members.sorted().joined(separator: ", ")), not \"\(key.prefix(40))\"")
        }
        var fields: [(name: String, value: String)] = []
        func text(_ key: String) -> Result<String?, Refusal> {
            guard let value = root[key] else { return .success(nil) }
            guard let text = value.stringValue else {
                return .failure(Refusal(
                    reason: .invalidParameter,
                    error: HubError(.invalidNotification, "\(key) must be a string, not a JSON \(value.typeName)")))
            }
            return .success(text)
        }
        func integer(_ key: String, _ range: ClosedRange<Int64>, _ rule: String) -> Result<Int64?, Refusal> {
            guard let value = root[key] else { return .success(nil) }
            guard case .number(let number) = value, let whole = PlatformNumber.int64(number), Double(whole) == number,
                range.contains(whole)
            else {
                return .failure(Refusal(reason: .invalidParameter, error: HubError(.invalidNotification, "\(key) must be \(rule)")))
            }
            return .success(whole)
        }
        let title: String?, description: String?, body: String?
        switch (text("title"), text("description"), text("payload")) {
        case (.success(let t), .success(let d), .success(let p)): (title, description, body) = (t, d, p)
        case (.failure(let refusal), _, _), (_, .failure(let refusal), _), (_, _, .failure(let refusal)): return .failure(refusal)
        }
        let passThrough: Int64
        switch integer("pass_through", 0...1, "0 (a notification message) or 1 (a pass-through message)") {
        case .success(let value): passThrough = value ?? 0
        case .failure(let refusal): return .failure(refusal)
        }
        if passThrough == 0 {
            for (key, value, limit) in [("title", title, titleLimit), ("description", description, descriptionLimit)] {
                guard let value, !value.allSatisfy(\.isWhitespace) else {
                    return refuse(.missingParameter, "a notification message (pass_through 0) needs \(key), not blank; Mi Push shows it")
                }
                if value.count >= limit {
                    return refuse(.invalidParameter, "\(key) must be shorter than \(limit) characters; it has \(value.count)")
                }
            }
        } else if body == nil {
            return refuse(.missingParameter, "a pass-through message (pass_through 1) needs payload, the text the app receives")
        }
        if let title { fields.append(("title", title)) }
        if let description { fields.append(("description", description)) }
        if let body {
            if body.utf8.count > maximumPayloadBytes {
                return refuse(.messageTooLong, "payload is at most \(maximumPayloadBytes) bytes; this one is \(body.utf8.count)")
            }
            fields.append(("payload", body))
        }
        fields.append(("pass_through", String(passThrough)))
        switch integer("notify_type", -1...7, "-1 (all defaults) or a sum of 1 (sound), 2 (vibration) and 4 (lights)") {
        case .success(let value):
            if let value {
                if value == 0 { return refuse(.invalidParameter, "notify_type must be -1 (all defaults) or a sum of 1 (sound), 2 (vibration) and 4 (lights)") }
                fields.append(("notify_type", String(value)))
            }
        case .failure(let refusal): return .failure(refusal)
        }
        let integers: [(String, ClosedRange<Int64>, String)] = [
            ("time_to_live", 1...Int64.max, "a positive number of milliseconds"),
            ("time_to_send", 1...Int64.max, "a UNIX time in milliseconds (Mi Push schedules at most seven days ahead)"),
            ("notify_id", 0...Int64(Int32.max), "an integer from 0 to 2147483647"),
        ]
        for (key, range, rule) in integers {
            switch integer(key, range, rule) {
            case .success(let value): if let value { fields.append((key, String(value))) }
            case .failure(let refusal): return .failure(refusal)
            }
        }
        if let extra = root["extra"] {
            guard case .object(let members) = extra else {
                return refuse(.invalidParameter, #"extra must be an object of strings: {"notify_effect": "1"}"#)
            }
            for key in members.keys.sorted() {
                guard !key.isEmpty, let value = members[key]?.stringValue else {
                    return refuse(
                        .invalidParameter,
                        "extra.\(key.prefix(40)) is a \(members[key]?.typeName ?? "empty key"); extra values must be strings")
                }
                fields.append(("extra.\(key)", value))
            }
        }
        return .success(XiaomiMessage(fields: fields, hasTimeToLive: root["time_to_live"] != nil))
    }

    /// The form body for `registrationIDs` (1 to 1,000) of the app's `packageNames`, with `time_to_live` from
    /// `timeToLive` when the message sets none.
    public func body(registrationIDs: [String], packageNames: [String], timeToLive: Int64? = nil) -> ByteBuffer {
        var all = fields
        if !hasTimeToLive, let timeToLive { all.append(("time_to_live", String(timeToLive))) }
        all.append(("restricted_package_name", packageNames.joined(separator: ",")))
        all.append(("registration_id", registrationIDs.joined(separator: ",")))
        return ByteBuffer(string: all.map { "\(ClientCredentialsGrant.formEncode($0.name))=\(ClientCredentialsGrant.formEncode($0.value))" }.joined(separator: "&"))
    }
}
