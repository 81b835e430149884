import AdapterKit
import Foundation

/// Maps push service answers to the hub's outcomes.
///
/// | push service | Outcome |
/// |---|---|
/// | 200, 201, 202 | success |
/// | 404, 410 (the subscription is gone) | expiredChannel (the installation is marked expired or deleted) |
/// | 413 | invalidNotificationSize |
/// | 429 | throttled (retried, `Retry-After` in seconds or as an HTTP date honoured) |
/// | 400 | invalidNotificationFormat (not retried) |
/// | 401 (after renewing the VAPID token once) | invalidCredentials |
/// | 403 (the subscription was made for another application server key) | wrongChannel |
/// | 500–599 | pnsUnavailable (retried) |
/// | no answer (connection failure, timeout) | pnsUnreachable (retried) |
/// | anything else | unknownError |
public enum WebPushOutcomeMapping {
    /// The result of one answer.
    public static func result(status: Int, retryAfter: String? = nil, now: Date = Date()) -> DeliveryResult {
        switch status {
        case 200, 201, 202:
            return .success
        case 404, 410:
            return DeliveryResult(
                .expiredChannel, reason: status == 410 ? "SubscriptionGone" : "SubscriptionNotFound", channelExpiredAt: now)
        case 413:
            return DeliveryResult(.invalidNotificationSize, reason: "PayloadTooLarge")
        case 429:
            return DeliveryResult(.throttled, reason: "TooManyRequests", retryAfter: RetryAfter.parse(retryAfter, now: now))
        case 400:
            return DeliveryResult(.invalidNotificationFormat, reason: "BadRequest")
        case 401:
            return DeliveryResult(.invalidCredentials, reason: "VAPIDRejected")
        case 403:
            return DeliveryResult(.wrongChannel, reason: "VAPIDKeyMismatch")
        case 500..<600:
            return DeliveryResult(.pnsUnavailable, reason: "Status\(status)", retryAfter: RetryAfter.parse(retryAfter, now: now))
        default:
            return DeliveryResult(.unknownError, reason: "Status\(status)")
        }
    }
}
