import AdapterKit
import Foundation

/// Maps ADM's answer to one message to the device's outcome. The `reason` decides (from the body
/// `{"reason": "…"}`, else the `X-Amzn-ErrorType` header's name before its `:`); the HTTP status where neither names
/// one. Amazon's "Send a Message" page, "Response format", lists the answers
/// (https://developer.amazon.com/docs/adm/send-message.html).
///
/// | ADM | Outcome |
/// |---|---|
/// | 200 `{"registrationID": id}` | success; a `registrationID` other than the one sent is the device's new id (`canonicalPushChannel`) |
/// | 400 `Unregistered` | expiredChannel (the app instance is gone: the installation is marked expired) |
/// | 400 `InvalidRegistrationId` | badChannel |
/// | 400 `InvalidData`, `InvalidConsolidationKey`, `InvalidExpiration`, `InvalidChecksum`, `InvalidType` | invalidNotificationFormat |
/// | 413 `MessageTooLarge` | invalidNotificationSize |
/// | 401 `AccessTokenExpired` (after one renewal) | invalidCredentials |
/// | 429 (`MaxRateExceeded`) | throttled, retried after `Retry-After` or ``ADMAdapter/throttleBackoff`` |
/// | 500, 503 and other 5xx | pnsUnavailable (retried, `Retry-After` honoured) |
/// | anything else | unknownError with the reason |
public enum ADMOutcomeMapping {
    /// The reason an answer names: its body's `reason`, else the `X-Amzn-ErrorType` header's type, else `HTTP<status>`.
    public static func reason(status: Int, errorType: String?, body: [UInt8]) -> ADMReason {
        if let text = (try? JSONValue(parsing: body))?.objectValue?["reason"]?.stringValue, !text.isEmpty {
            return ADMReason(rawValue: String(text.prefix(64)))
        }
        if let errorType, let name = errorType.split(separator: ":", maxSplits: 1).first, !name.isEmpty {
            return ADMReason(rawValue: String(name.prefix(64)).trimmingCharacters(in: .whitespaces))
        }
        return .unknown("HTTP\(status)")
    }

    /// The outcome of sending to `registrationID`, from the answer's status, headers and body.
    public static func result(
        registrationID: String, status: Int, retryAfter: String?, errorType: String?, body: [UInt8], now: Date = Date()
    ) -> DeliveryResult {
        if status == 200 {
            let answered = (try? JSONValue(parsing: body))?.objectValue?["registrationID"]?.stringValue
            // A new id is taken only when it is one: a malformed answer never replaces a device's handle.
            if let answered, answered != registrationID, ADMAdapter.isWellFormed(registrationID: answered) {
                return DeliveryResult(.success, canonicalPushChannel: answered)
            }
            return .success
        }
        let reason = reason(status: status, errorType: errorType, body: body)
        let wait = RetryAfter.parse(retryAfter, now: now)
        switch (status, reason) {
        case (_, .unregistered):
            return DeliveryResult(.expiredChannel, reason: reason.rawValue, channelExpiredAt: now)
        case (_, .invalidRegistrationId):
            return DeliveryResult(.badChannel, reason: reason.rawValue)
        case (_, .invalidData), (_, .invalidConsolidationKey), (_, .invalidExpiration), (_, .invalidChecksum),
            (_, .invalidType):
            return DeliveryResult(.invalidNotificationFormat, reason: reason.rawValue)
        case (_, .messageTooLarge), (413, _):
            return DeliveryResult(.invalidNotificationSize, reason: reason.rawValue)
        case (_, .accessTokenExpired), (401, _), (403, _):
            return DeliveryResult(.invalidCredentials, reason: reason.rawValue)
        case (429, _):
            // Only a 429 is throttling: a permanent 4xx stays permanent whatever its body says.
            return DeliveryResult(.throttled, reason: reason.rawValue, retryAfter: wait ?? ADMAdapter.throttleBackoff)
        case (500..<600, _):
            return DeliveryResult(.pnsUnavailable, reason: reason.rawValue, retryAfter: wait)
        default:
            return DeliveryResult(.unknownError, reason: reason.rawValue)
        }
    }
}
