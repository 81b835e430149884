import Foundation
import NIOCore

/// A notification as accepted by the hub: a body in one format, passthrough headers, and its audience.
public struct Notification: Sendable {
    /// The hub-assigned identifier.
    public var id: String
    /// The body's format.
    public var format: NotificationFormat
    /// The body: a native payload, or for ``NotificationFormat/template`` a JSON property bag.
    public var body: ByteBuffer
    /// Passthrough headers such as `apns-priority` or `X-WNS-Type`.
    public var headers: NotificationHeaders
    /// Who receives it.
    public var audience: Audience
    /// When the hub accepted it.
    public var createdAt: Date

    /// Creates a notification.
    public init(
        id: String = Notification.makeID(),
        format: NotificationFormat,
        body: ByteBuffer,
        headers: NotificationHeaders = [:],
        audience: Audience,
        createdAt: Date = Date()
    ) {
        self.id = id
        self.format = format
        self.body = body
        self.headers = headers
        self.audience = audience
        self.createdAt = createdAt
    }

    /// Creates a notification with a string body.
    public init(
        id: String = Notification.makeID(),
        format: NotificationFormat,
        body: String,
        headers: NotificationHeaders = [:],
        audience: Audience,
        createdAt: Date = Date()
    ) {
        self.init(
            id: id, format: format, body: ByteBuffer(string: body), headers: headers, audience: audience,
            createdAt: createdAt)
    }

    /// A new random notification identifier (32 lower-case hex digits).
    public static func makeID() -> String {
        let digits = Array("0123456789abcdef".utf8)
        return withUnsafeBytes(of: UUID().uuid) { bytes in
            String(unsafeUninitializedCapacity: 32) { text in
                for (index, byte) in bytes.enumerated() {
                    text[2 * index] = digits[Int(byte >> 4)]
                    text[2 * index + 1] = digits[Int(byte & 0x0f)]
                }
                return 32
            }
        }
    }
}

/// Who a notification goes to.
public enum Audience: Hashable, Sendable {
    /// Every installation of the hub.
    case all
    /// Installations whose tags satisfy the expression.
    case tags(TagExpression)
    /// Device handles given directly, without installations, on one platform.
    case handles(Platform, [PushChannel])
    /// A stored audience that could not be read back (its text as stored). Only telemetry shows it: a notification
    /// with it is never delivered, it ends with a reason.
    case unreadable(String)
}

extension NotificationHeaders {
    /// Checks a header name: an HTTP token (RFC 9110 §5.6.2) of at most 256 characters.
    public static func validate(name: String) throws(HubError) {
        let ok = !name.isEmpty && name.utf8.count <= 256 && name.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"):
                true
            default:
                "!#$%&'*+-.^_`|~".utf8.contains(byte)
            }
        }
        if !ok {
            throw HubError(
                .invalidNotification,
                "header name '\(String(name.unicodeScalars.prefix(40).map { $0.isASCII && $0.value >= 0x20 ? Character($0) : "?" }))' is not an HTTP token; use letters, digits and ! # $ % & ' * + - . ^ _ ` | ~")
        }
    }

    /// Checks a header value: no control character but horizontal tab (RFC 9110 §5.5), at most 8 KiB, so that every
    /// platform's HTTP stack can send it as given.
    public static func validate(value: String, name: String) throws(HubError) {
        if value.utf8.count > 8192 {
            throw HubError(.invalidNotification, "header '\(name)' is longer than 8192 bytes")
        }
        if let bad = value.unicodeScalars.first(where: { ($0.value < 0x20 && $0 != "\t") || $0.value == 0x7F }) {
            throw HubError(
                .invalidNotification,
                "header '\(name)' holds the control character U+\(String(format: "%04X", bad.value)); header values may not contain control characters such as CR, LF or NUL")
        }
    }

    /// Checks every name and value.
    public func validate() throws(HubError) {
        for pair in pairs {
            try Self.validate(name: pair.name)
            try Self.validate(value: pair.value, name: pair.name)
        }
    }
}
