import AdapterKit
import Foundation

/// The send headers a Web Push request takes from a notification (RFC 8030 §5): `TTL`, `Urgency` and `Topic`,
/// plus the subscription keys of a direct send (`P256DH`, `Auth`).
public enum WebPushHeaders {
    /// The longest time to live accepted: four weeks.
    public static let maximumTimeToLive = 2_419_200
    /// The urgencies RFC 8030 §5.3 defines.
    public static let urgencies = ["very-low", "low", "normal", "high"]

    /// Checks the headers a send passes through; throws ``HubError/Code/invalidNotification`` saying what to fix.
    public static func check(_ headers: NotificationHeaders) throws(HubError) {
        if let ttl = headers["TTL"], timeToLive(ttl) == nil {
            throw HubError(.invalidNotification, "TTL must be a whole number of seconds from 0 to \(maximumTimeToLive)")
        }
        if let urgency = headers["Urgency"], !urgencies.contains(urgency) {
            throw HubError(.invalidNotification, "Urgency must be one of \(urgencies.joined(separator: ", "))")
        }
        if let topic = headers["Topic"], !isValidTopic(topic) {
            throw HubError(.invalidNotification, "Topic must be 1 to 32 characters of the base64url alphabet (A-Z a-z 0-9 - _)")
        }
        let p256dh = headers[WebPushSubscription.p256dhHeader]
        let auth = headers[WebPushSubscription.authHeader]
        if p256dh != nil || auth != nil {
            guard let p256dh, let auth else {
                throw HubError(.invalidPushChannel, "a direct browser send gives both the P256DH and Auth headers")
            }
            _ = try WebPushSubscription.publicKey(p256dh)
            _ = try WebPushSubscription.authSecret(auth)
        }
    }

    /// A `TTL` value: 0 to ``maximumTimeToLive`` seconds.
    static func timeToLive(_ text: String) -> Int? {
        guard !text.isEmpty, text.count <= 8, text.allSatisfy({ $0.isASCII && $0.isNumber }), let value = Int(text),
            value <= maximumTimeToLive
        else { return nil }
        return value
    }

    /// Whether `topic` is 1 to 32 base64url characters.
    static func isValidTopic(_ topic: String) -> Bool {
        (1...32).contains(topic.utf8.count)
            && topic.utf8.allSatisfy { byte in
                (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x30 && byte <= 0x39)
                    || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
            }
    }

    /// The `TTL` to send: the send's `TTL` header, else the time left until `ServiceBusNotification-Expiry` (ISO
    /// 8601 or UNIX seconds), else `defaultValue`; always within 0 and ``maximumTimeToLive``.
    static func timeToLive(for headers: NotificationHeaders, default defaultValue: Int, now: Date) -> Int {
        if let ttl = headers["TTL"].flatMap(timeToLive) { return ttl }
        if let expiry = headers[NotificationHeaders.expiry], let date = date(expiry) {
            // A UNIX-seconds expiry may lie billions of years ahead: compare as a Double before converting.
            let seconds = min(Double(maximumTimeToLive), max(0, date.timeIntervalSince(now).rounded(.down)))
            return seconds.isNaN ? 0 : Int(seconds)
        }
        return min(maximumTimeToLive, max(0, defaultValue))
    }

    static func date(_ text: String) -> Date? {
        if let seconds = Int64(text) { return Date(timeIntervalSince1970: Double(seconds)) }
        if let date = try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(text) { return date }
        return try? Date.ISO8601FormatStyle().parse(text)
    }
}
