/// What a secure notification announces to devices: its id, and how visible the push should be.
public struct SecureAnnouncementRequest: Sendable, Hashable {
    /// The secure notification's id, which the app exchanges for the payload.
    public var id: String
    /// Text a platform with visible alerts shows in place of the payload; `nil` asks for a silent push where the
    /// platform has one.
    public var alertText: String?

    /// Creates a request.
    public init(id: String, alertText: String? = nil) {
        self.id = id
        self.alertText = alertText
    }
}

/// The id-only push a secure notification sends in one native format.
public struct SecurePushAnnouncement: Sendable, Hashable {
    /// The native format.
    public var format: NotificationFormat
    /// The payload, which carries only the id.
    public var body: String
    /// Platform headers.
    public var headers: NotificationHeaders

    /// Creates an announcement.
    public init(format: NotificationFormat, body: String, headers: NotificationHeaders = NotificationHeaders()) {
        self.format = format
        self.body = body
        self.headers = headers
    }
}
