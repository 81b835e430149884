import AdapterKit
import Foundation
import NIOCore
import NIOFoundationCompat

/// An FCM HTTP v1 message without its target, ready to be sent to any number of registration tokens.
///
/// Built from an `fcmv1` payload (`{"message": {...}}` without `token`, `topic` or `condition`) or translated from
/// Azure's legacy `gcm` payload. Data values follow one rule everywhere: strings are kept, numbers and booleans
/// become their JSON text (`7` → `"7"`, `true` → `"true"`), and `null`, objects and arrays are rejected. Reserved data
/// keys (`from`, `message_type`, and keys starting with `google` or `gcm`) are rejected.
public struct FCMMessage: Sendable, Hashable {
    /// The message's members as JSON text without the surrounding braces (sorted keys), e.g. `"data":{"a":"1"}`.
    public let members: String

    /// The largest message accepted, in bytes of its JSON without the target (FCM's 4096-byte limit).
    public static let maximumBytes = 4096

    /// Keys of a v1 `Message` other than its target.
    static let messageKeys: Set<String> = ["name", "data", "notification", "android", "webpush", "apns", "fcm_options"]
    /// Keys of Azure's legacy GCM payload that translate to v1.
    static let gcmKeys: Set<String> = [
        "data", "notification", "priority", "time_to_live", "collapse_key", "restricted_package_name",
    ]

    /// Prepares a payload in `format` (`fcmv1` or `gcm`). Throws ``HubError/Code/invalidNotification`` or
    /// ``HubError/Code/payloadTooLarge`` with a message saying what to fix.
    public init(payload: ByteBuffer, format: NotificationFormat) throws(HubError) {
        guard case .object(let root) = try JSONValue(parsingBody: payload.readableBytesView) else {
            throw HubError(.invalidNotification, "the \(format) payload must be a JSON object")
        }
        let message: [String: JSONValue]
        switch format {
        case .gcm: message = try Self.translate(gcm: root)
        default: message = try Self.check(fcmv1: root)
        }
        let text = JSONValue.object(message).jsonString()
        if text.utf8.count > Self.maximumBytes {
            throw HubError(
                .payloadTooLarge,
                "the FCM message is \(text.utf8.count) bytes; FCM accepts at most \(Self.maximumBytes) bytes")
        }
        members = String(text.dropFirst().dropLast())
    }

    /// The request body for one registration token: `{"message":{"token":…,…}}`.
    public func body(token: String) -> ByteBuffer {
        body(target: .token, handle: token)
    }

    /// The request body for one Firebase installation ID: `{"message":{"fid":…,…}}`.
    public func body(fid: String) -> ByteBuffer {
        body(target: .fid, handle: fid)
    }

    /// The request body for one handle sent as `target`.
    public func body(target: FCMTarget.Kind, handle: String) -> ByteBuffer {
        var buffer = ByteBuffer()
        buffer.reserveCapacity(members.utf8.count + handle.utf8.count + 32)
        buffer.writeString(target == .fid ? #"{"message":{"fid":""# : #"{"message":{"token":""#)
        // Handles are validated printable ASCII; escape the two characters JSON needs escaped anyway.
        if handle.utf8.contains(where: { $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) {
            buffer.writeString(handle.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\""))
        } else {
            buffer.writeString(handle)
        }
        buffer.writeString("\"")
        if !members.isEmpty {
            buffer.writeString(",")
            buffer.writeString(members)
        }
        buffer.writeString("}}")
        return buffer
    }

    /// Whether a data key is reserved by FCM.
    public static func isReserved(dataKey key: String) -> Bool {
        key == "from" || key == "message_type" || key.hasPrefix("google") || key.hasPrefix("gcm")
    }

    /// Applies the data rule: string values kept, numbers and booleans as JSON text, anything else rejected.
    static func normalize(data value: JSONValue, path: String) throws(HubError) -> JSONValue {
        guard case .object(let data) = value else {
            throw HubError(.invalidNotification, "\(path) must be an object of string values")
        }
        var result: [String: JSONValue] = [:]
        for (key, value) in data {
            if key.isEmpty || isReserved(dataKey: key) {
                throw HubError(
                    .invalidNotification,
                    "\(path) key '\(key)' is reserved by FCM (from, message_type, google*, gcm*); rename it")
            }
            switch value {
            case .string: result[key] = value
            case .number, .bool: result[key] = .string(value.jsonString())
            case .null, .array, .object:
                throw HubError(
                    .invalidNotification,
                    "\(path).\(key) is \(value.typeName == "null" ? "null" : "an \(value.typeName)"); FCM data values are strings (numbers and booleans are converted, objects, arrays and null are not: JSON-encode them into a string)")
            }
        }
        return .object(result)
    }

    static func check(fcmv1 root: [String: JSONValue]) throws(HubError) -> [String: JSONValue] {
        guard root.count == 1, case .object(var message)? = root["message"] else {
            throw HubError(.invalidNotification, #"an fcmv1 payload is {"message": {...}} with nothing beside "message""#)
        }
        for target in ["token", "topic", "condition", "fid"] where message[target] != nil {
            throw HubError(
                .invalidNotification,
                "remove message.\(target): the hub sets each installation's registration token or installation ID")
        }
        for key in message.keys where !messageKeys.contains(key) {
            throw HubError(
                .invalidNotification,
                "message.\(key) is not a field of an FCM v1 message; use \(messageKeys.sorted().joined(separator: ", "))")
        }
        for key in ["notification", "android", "webpush", "apns", "fcm_options"] {
            if let value = message[key], value.objectValue == nil {
                throw HubError(.invalidNotification, "message.\(key) must be an object")
            }
        }
        if let data = message["data"] { message["data"] = try normalize(data: data, path: "message.data") }
        if case .object(var android)? = message["android"], let data = android["data"] {
            android["data"] = try normalize(data: data, path: "message.android.data")
            message["android"] = .object(android)
        }
        return message
    }

    static func translate(gcm root: [String: JSONValue]) throws(HubError) -> [String: JSONValue] {
        for key in root.keys where !gcmKeys.contains(key) {
            if ["to", "registration_ids", "condition"].contains(key) {
                throw HubError(.invalidNotification, "remove '\(key)': the hub sets each installation's registration token")
            }
            throw HubError(
                .invalidNotification,
                "'\(key)' cannot be translated to FCM v1; a gcm payload may hold \(gcmKeys.sorted().joined(separator: ", "))")
        }
        var message: [String: JSONValue] = [:]
        var android: [String: JSONValue] = [:]
        if let data = root["data"] { message["data"] = try normalize(data: data, path: "data") }
        if let value = root["notification"] {
            guard case .object(let notification) = value else {
                throw HubError(.invalidNotification, "notification must be an object")
            }
            var common: [String: JSONValue] = [:]
            var androidNotification: [String: JSONValue] = [:]
            for (key, value) in notification {
                switch key {
                case "title", "body", "image":
                    guard case .string = value else { throw HubError(.invalidNotification, "notification.\(key) must be a string") }
                    common[key] = value
                case "android_channel_id": androidNotification["channel_id"] = value
                default: androidNotification[key] = value
                }
            }
            if !common.isEmpty { message["notification"] = .object(common) }
            if !androidNotification.isEmpty { android["notification"] = .object(androidNotification) }
        }
        if let value = root["priority"] {
            switch value.stringValue?.lowercased() {
            case "high": android["priority"] = "HIGH"
            case "normal": android["priority"] = "NORMAL"
            default: throw HubError(.invalidNotification, #"priority must be "high" or "normal""#)
            }
        }
        if let value = root["time_to_live"] {
            guard case .number(let seconds) = value, seconds.rounded() == seconds, (0...2_419_200).contains(seconds) else {
                throw HubError(.invalidNotification, "time_to_live must be a whole number of seconds from 0 to 2419200 (28 days)")
            }
            android["ttl"] = .string("\(Int(seconds))s")
        }
        for key in ["collapse_key", "restricted_package_name"] {
            guard let value = root[key] else { continue }
            guard case .string = value else { throw HubError(.invalidNotification, "\(key) must be a string") }
            android[key] = value
        }
        if !android.isEmpty { message["android"] = .object(android) }
        return message
    }
}
