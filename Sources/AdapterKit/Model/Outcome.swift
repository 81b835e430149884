/// The result of one delivery attempt to one device, in Azure Notification Hubs' vocabulary.
public struct Outcome: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The outcome's name as reported in telemetry, e.g. `ExpiredChannel`.
    public let name: String

    /// Creates an outcome from its name.
    public init(_ name: String) { self.name = name }

    public var description: String { name }
    public static func < (lhs: Outcome, rhs: Outcome) -> Bool { lhs.name < rhs.name }

    /// The platform accepted the notification.
    public static let success = Outcome("Success")
    /// The device handle is no longer valid; the installation's channel is marked expired.
    public static let expiredChannel = Outcome("ExpiredChannel")
    /// The device handle is malformed or unknown to the platform.
    public static let badChannel = Outcome("BadChannel")
    /// The handle belongs to another app or sender.
    public static let wrongChannel = Outcome("WrongChannel")
    /// The platform rejected the hub's credentials.
    public static let invalidCredentials = Outcome("InvalidCredentials")
    /// The platform throttled the hub; retried.
    public static let throttled = Outcome("Throttled")
    /// The platform throttled this channel.
    public static let channelThrottled = Outcome("ChannelThrottled")
    /// The platform was unavailable or failed; retried.
    public static let pnsUnavailable = Outcome("PnsUnavailable")
    /// The hub could not reach the platform (connection failure or timeout); retried.
    public static let pnsUnreachable = Outcome("PnsUnreachable")
    /// The payload is malformed for the platform.
    public static let invalidNotificationFormat = Outcome("InvalidNotificationFormat")
    /// The payload is too large for the platform.
    public static let invalidNotificationSize = Outcome("InvalidNotificationSize")
    /// The platform accepted the notification but dropped it.
    public static let dropped = Outcome("Dropped")
    /// The notification could not be handed to the platform within the abandon window.
    public static let abandoned = Outcome("Abandoned")
    /// The installation has no template matching the send.
    public static let noTemplate = Outcome("NoTemplate")
    /// Any other platform error.
    public static let unknownError = Outcome("UnknownError")

    /// Whether a later attempt may succeed (throttling, platform unavailable or unreachable).
    public var isRetryable: Bool {
        self == .throttled || self == .pnsUnavailable || self == .pnsUnreachable
    }
}
