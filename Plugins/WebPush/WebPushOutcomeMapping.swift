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
        if (200...202).contains(status) { return .success }
        let reason = WebPushReason(status: status)
        switch (status, reason) {
        case (_, .subscriptionNotFound), (_, .subscriptionGone):
            return DeliveryResult(.expiredChannel, reason: reason.rawValue, channelExpiredAt: now)
        case (_, .payloadTooLarge):
            return DeliveryResult(.invalidNotificationSize, reason: reason.rawValue)
        case (_, .tooManyRequests):
            return DeliveryResult(.throttled, reason: reason.rawValue, retryAfter: RetryAfter.parse(retryAfter, now: now))
        case (_, .badRequest):
            return DeliveryResult(.invalidNotificationFormat, reason: reason.rawValue)
        case (_, .vapidRejected):
            return DeliveryResult(.invalidCredentials, reason: reason.rawValue)
        case (_, .vapidKeyMismatch):
            return DeliveryResult(.wrongChannel, reason: reason.rawValue)
        case (500..<600, _):
            return DeliveryResult(.pnsUnavailable, reason: reason.rawValue, retryAfter: RetryAfter.parse(retryAfter, now: now))
        default:
            return DeliveryResult(.unknownError, reason: reason.rawValue)
        }
    }
}
