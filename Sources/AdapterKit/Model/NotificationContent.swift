import NIOCore

/// What an adapter checks when a send is accepted: the body in one format and its passthrough headers.
///
/// The hub builds it from the notification it is about to accept, before any device is looked up, so an adapter
/// can refuse a malformed payload with a 400 and nothing is stored.
public struct NotificationContent: Sendable {
    /// The body's format, e.g. `apple` or `browser`.
    public var format: NotificationFormat
    /// The native payload.
    public var body: ByteBuffer
    /// Passthrough headers such as `apns-priority`, `X-WNS-Type` or `Urgency`.
    public var headers: NotificationHeaders

    /// Creates content.
    public init(format: NotificationFormat, body: ByteBuffer, headers: NotificationHeaders = [:]) {
        self.format = format
        self.body = body
        self.headers = headers
    }

    /// Creates content with a string body.
    public init(format: NotificationFormat, body: String, headers: NotificationHeaders = [:]) {
        self.init(format: format, body: ByteBuffer(string: body), headers: headers)
    }
}
