import Foundation
import NIOCore

/// One notification to one device, ready for an adapter: the native payload and headers are final.
public struct Delivery: Sendable {
    /// The notification this delivery belongs to.
    public var notificationID: String
    /// The installation it targets, or `nil` for a direct send to a handle.
    public var installationID: String?
    /// The installation's platform.
    public var platform: Platform
    /// The device handle.
    public var pushChannel: PushChannel
    /// The payload's native format (for template sends, the platform's native format).
    public var format: NotificationFormat
    /// The native payload.
    public var payload: ByteBuffer
    /// Passthrough headers (notification headers, or a template's rendered headers).
    public var headers: NotificationHeaders
    /// 1 for the first attempt, then 2, 3, … for retries.
    public var attempt: Int

    /// Creates a delivery.
    public init(
        notificationID: String,
        installationID: String?,
        platform: Platform,
        pushChannel: PushChannel,
        format: NotificationFormat,
        payload: ByteBuffer,
        headers: NotificationHeaders,
        attempt: Int = 1
    ) {
        self.notificationID = notificationID
        self.installationID = installationID
        self.platform = platform
        self.pushChannel = pushChannel
        self.format = format
        self.payload = payload
        self.headers = headers
        self.attempt = attempt
    }
}

/// What happened to one ``Delivery``.
public struct DeliveryResult: Hashable, Sendable {
    /// The outcome.
    public var outcome: Outcome
    /// The platform's own reason, e.g. `BadDeviceToken` (never a secret or a payload).
    public var reason: String?
    /// How long the platform asked the hub to wait before retrying.
    public var retryAfter: Duration?
    /// For ``Outcome/expiredChannel``: when the platform says the handle stopped being valid. The installation is
    /// marked expired only if it was not updated after this time.
    public var channelExpiredAt: Date?
    /// For ``Outcome/success``: the handle the platform says is the device's canonical one now (the platform
    /// delivered, but the stored handle is outdated). The installation's channel is replaced with it, and an
    /// `installation.channelReplaced` event is written.
    public var canonicalPushChannel: String?

    /// Creates a result.
    public init(
        _ outcome: Outcome, reason: String? = nil, retryAfter: Duration? = nil, channelExpiredAt: Date? = nil,
        canonicalPushChannel: String? = nil
    ) {
        self.outcome = outcome
        self.reason = reason
        self.retryAfter = retryAfter
        self.channelExpiredAt = channelExpiredAt
        self.canonicalPushChannel = canonicalPushChannel
    }

    /// A success.
    public static let success = DeliveryResult(.success)
}
