/// A push platform named in installations, such as `apns`, `fcmv1`, `gcm` or `wns`.
///
/// The core knows platforms only by name; which platforms a hub accepts, and what their push channels look like,
/// is decided by the adapters the hub loads. Names are case-insensitive and kept in lower case.
public struct Platform: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The platform's lower-case name.
    public let name: String

    /// Creates a platform from its name (case-insensitive).
    public init(_ name: String) { self.name = name.lowercased() }

    public var description: String { name }
    public static func < (lhs: Platform, rhs: Platform) -> Bool { lhs.name < rhs.name }

    /// Apple Push Notification service.
    public static let apns = Platform("apns")
    /// Firebase Cloud Messaging HTTP v1.
    public static let fcmv1 = Platform("fcmv1")
    /// Legacy Google Cloud Messaging / FCM registrations, delivered through FCM v1.
    public static let gcm = Platform("gcm")
    /// Windows Push Notification Services.
    public static let wns = Platform("wns")
}

extension Platform: Codable {
    public init(from decoder: any Decoder) throws {
        self.init(try decoder.singleValueContainer().decode(String.self))
    }
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(name)
    }
}

/// The format of a notification body, as sent in `ServiceBusNotification-Format`: `apple`, `gcm`, `fcmv1`,
/// `windows`, `template`, or one declared by a plugin. Case-insensitive, kept in lower case.
public struct NotificationFormat: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The format's lower-case name.
    public let name: String

    /// Creates a format from its name (case-insensitive).
    public init(_ name: String) { self.name = name.lowercased() }

    public var description: String { name }
    public static func < (lhs: NotificationFormat, rhs: NotificationFormat) -> Bool { lhs.name < rhs.name }

    /// An APNs JSON payload.
    public static let apple = NotificationFormat("apple")
    /// Azure's legacy GCM payload.
    public static let gcm = NotificationFormat("gcm")
    /// An FCM HTTP v1 message.
    public static let fcmv1 = NotificationFormat("fcmv1")
    /// A WNS payload (raw, toast, tile or badge).
    public static let windows = NotificationFormat("windows")
    /// A property bag rendered through each installation's templates.
    public static let template = NotificationFormat("template")
}

extension NotificationFormat: Codable {
    public init(from decoder: any Decoder) throws {
        self.init(try decoder.singleValueContainer().decode(String.self))
    }
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(name)
    }
}
