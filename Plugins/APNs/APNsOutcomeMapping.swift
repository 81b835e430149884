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
/// | 403 `BadEnvironmentKeyIdInToken`, `BadEnvironmentKeyInToken`, `UnrelatedKeyIdInToken` | invalidCredentials, the reason followed by a message naming the key to fix (environment, key id) |
/// | 403 (any other reason) | invalidCredentials |
/// | 413 `PayloadTooLarge` | invalidNotificationSize |
/// | 429 `TooManyRequests`, `TooManyProviderTokenUpdates` | throttled (retried, `Retry-After` honoured) |
/// | 500, 503 (`InternalServerError`, `ServiceUnavailable`, `Shutdown`) | pnsUnavailable (retried) |
/// | 400 `IdleTimeout`, no answer (connection lost, GOAWAY, timeout) | pnsUnreachable (retried) |
/// | other 400 reasons (`BadCollapseId`, `BadExpirationDate`, `BadMessageId`, `BadPriority`, `BadTopic`, `DuplicateHeaders`, `InvalidPushType`, `MissingTopic`, `PayloadEmpty`, `TopicDisallowed`, …) | invalidNotificationFormat |
/// | 404 `BadPath`, 405 `MethodNotAllowed`, anything else | unknownError |
public enum APNsOutcomeMapping {
    /// The key a request was signed with, as the outcome of a key problem names it: never the key itself.
    public struct KeyInUse: Sendable, Hashable {
        /// The environment the request went to, when known.
        public var environment: APNsEnvironment?
        /// The key id (`kid`).
        public var keyID: String

        /// Names a key.
        public init(environment: APNsEnvironment?, keyID: String) {
            self.environment = environment
            self.keyID = keyID
        }
    }

    /// The result for one answer; `key` is the key the request was signed with.
    static func result(for response: APNsResponse, key: KeyInUse? = nil, now: Date = Date()) -> DeliveryResult {
        if response.status == 0 {
            return DeliveryResult(.pnsUnreachable, reason: response.failure ?? "ConnectionClosed")
        }
        return result(status: response.status, reason: response.reason, timestamp: response.timestamp,
            retryAfter: response.retryAfter, key: key, now: now)
    }

    /// The result for a status, reason, 410 `timestamp` (milliseconds) and `Retry-After` header. With `key` (the key
    /// the request was signed with), a 403 about the key (``APNsReason/isAboutTheKey``) carries a message naming it.
    public static func result(
        status: Int, reason: String?, timestamp: Int64? = nil, retryAfter: String? = nil, key: KeyInUse? = nil,
        now: Date = Date()
    ) -> DeliveryResult {
        let wait = parseRetryAfter(retryAfter, now: now)
        let typed = reason.map(APNsReason.init(rawValue:))
        if status == 403, let typed, typed.isAboutTheKey, let key {
            return DeliveryResult(.invalidCredentials, reason: message(for: typed, key: key))
        }
        switch (status, typed) {
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

    /// What to fix for a 403 about the key: APNs' reason, then which key (environment, key id) and how.
    public static func message(for reason: APNsReason, key: KeyInUse) -> String {
        let named = key.environment.map { "the \($0) key \(key.keyID)" } ?? "key \(key.keyID)"
        let setting = key.environment.map { "keys.\($0)" } ?? "keyId and privateKey"
        if reason.isWrongEnvironmentKey {
            let environment = key.environment.map { "\($0)" } ?? "this endpoint's environment"
            return "\(reason): APNs refused \(named): the key is restricted to the other environment. Enable key "
                + "\(key.keyID) for \(environment) in Certificates, Identifiers & Profiles > Keys, or give a key for "
                + "\(environment) as \(setting)"
        }
        return "\(reason): APNs refused \(named): it is not related to the key this connection first pushed with. "
            + "Sign every request to one environment with one key (\(setting)), and reopen the connections after "
            + "replacing a key"
    }

    /// `Retry-After` as seconds or an HTTP date (see ``RetryAfter``).
    static func parseRetryAfter(_ value: String?, now: Date) -> Duration? {
        RetryAfter.parse(value, now: now)
    }
}
