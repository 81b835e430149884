import AdapterKit
import Foundation

/// Maps APNs answers to the hub's outcomes; the `reason` is read as an ``APNsReason``.
///
/// | APNs | Outcome |
/// |---|---|
/// | 200 | success |
/// | 410 `Unregistered`, `ExpiredToken` | expiredChannel (`channelExpiredAt` from `timestamp`, never later than now) |
/// | 400 `BadDeviceToken`, `MissingDeviceToken` | badChannel |
/// | 400 `DeviceTokenNotForTopic` | wrongChannel (the token belongs to another app) |
/// | 403 (any reason) | invalidCredentials |
/// | 413 `PayloadTooLarge` | invalidNotificationSize |
/// | 429 `TooManyRequests`, `TooManyProviderTokenUpdates` | throttled (retried, `Retry-After` honoured) |
/// | 500, 503 (`InternalServerError`, `ServiceUnavailable`, `Shutdown`) | pnsUnavailable (retried) |
/// | 400 `IdleTimeout`, no answer (connection lost, GOAWAY, timeout) | pnsUnreachable (retried) |
/// | other 400 reasons (`BadCollapseId`, `BadExpirationDate`, `BadMessageId`, `BadPriority`, `BadTopic`, `DuplicateHeaders`, `InvalidPushType`, `MissingTopic`, `PayloadEmpty`, `TopicDisallowed`, …) | invalidNotificationFormat |
/// | 404 `BadPath`, 405 `MethodNotAllowed`, anything else | unknownError |
public enum APNsOutcomeMapping {
    /// The result for one answer.
    static func result(for response: APNsResponse, now: Date = Date()) -> DeliveryResult {
        if response.status == 0 {
            return DeliveryResult(.pnsUnreachable, reason: response.failure ?? "ConnectionClosed")
        }
        return result(status: response.status, reason: response.reason, timestamp: response.timestamp,
            retryAfter: response.retryAfter, now: now)
    }

    /// The result for a status, reason, 410 `timestamp` (milliseconds) and `Retry-After` header.
    public static func result(
        status: Int, reason: String?, timestamp: Int64? = nil, retryAfter: String? = nil, now: Date = Date()
    ) -> DeliveryResult {
        let wait = parseRetryAfter(retryAfter, now: now)
        switch (status, reason.map(APNsReason.init(rawValue:))) {
        case (200, _):
            return .success
        case (410, _):
            return DeliveryResult(
                .expiredChannel, reason: reason ?? "Unregistered",
                channelExpiredAt: timestamp.flatMap { PlatformNumber.date(unixMilliseconds: Double($0), latest: now) })
        case (_, .badDeviceToken?), (_, .missingDeviceToken?):
            return DeliveryResult(.badChannel, reason: reason)
        case (_, .deviceTokenNotForTopic?):
            return DeliveryResult(.wrongChannel, reason: reason)
        case (403, _):
            return DeliveryResult(.invalidCredentials, reason: reason ?? "Forbidden")
        case (413, _):
            return DeliveryResult(.invalidNotificationSize, reason: reason ?? "PayloadTooLarge")
        case (429, _):
            return DeliveryResult(.throttled, reason: reason ?? "TooManyRequests", retryAfter: wait)
        case (400, .idleTimeout?):
            return DeliveryResult(.pnsUnreachable, reason: reason)
        case (500..<600, _):
            return DeliveryResult(.pnsUnavailable, reason: reason ?? "Status\(status)", retryAfter: wait)
        case (400, _):
            return DeliveryResult(.invalidNotificationFormat, reason: reason ?? "BadRequest")
        default:
            return DeliveryResult(.unknownError, reason: reason ?? "Status\(status)")
        }
    }

    /// `Retry-After` as seconds or an HTTP date (see ``RetryAfter``).
    static func parseRetryAfter(_ value: String?, now: Date) -> Duration? {
        RetryAfter.parse(value, now: now)
    }
}
