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
        UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
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
}
