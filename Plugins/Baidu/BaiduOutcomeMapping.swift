import AdapterKit
import Foundation

/// Maps Baidu Cloud Push's answer to one request to the outcome of every channel it named. The `error_code` of the
/// body (`{"request_id", "error_code", "error_msg"}`, "SDK开发指南", http://push.baidu.com/doc/restapi/sdk_developer)
/// decides; the HTTP status only where the body names no code.
///
/// | Baidu | Outcome |
/// |---|---|
/// | 200 with `response_params` (no `error_code`) | success |
/// | `30608` Bind Relation Not Found, `30607` Channel Token Timeout | expiredChannel (the installation is marked expired) |
/// | `30605` Data Required Not Found | badChannel |
/// | `30602` Request Params Not Valid | invalidNotificationFormat |
/// | `30603` Authentication Failed, `30606` Request Time Expires Timeout, HTTP 401/403 | invalidCredentials |
/// | `30604` Quota Use Up, `30699` Requests Too Frequent, HTTP 429 | throttled, retried after `Retry-After` or ``BaiduAdapter/throttleBackoff`` |
/// | `30600` Internal Server Error, other 5xx | pnsUnavailable (retried, `Retry-After` honoured) |
/// | anything else (`30601`, `30609`, …) | unknownError with the code as reason |
public enum BaiduOutcomeMapping {
    /// The code an answer names: its body's `error_code` (a number or digits), else `HTTP<status>`; nil for a 200
    /// that names none.
    public static func reason(status: Int, body: [UInt8]) -> BaiduReason? {
        let object = (try? JSONValue(parsing: body))?.objectValue
        switch object?["error_code"] {
        case .number(let number)?:
            if let code = PlatformNumber.int64(number), Double(code) == number { return BaiduReason(rawValue: String(code)) }
        case .string(let text)?:
            if let code = PlatformNumber.int64(text) { return BaiduReason(rawValue: String(code)) }
        default:
            break
        }
        return status == 200 ? nil : .unknown("HTTP\(status)")
    }

    /// The outcome of a request's channels, from the answer's status, `Retry-After` and body.
    public static func result(status: Int, retryAfter: String?, body: [UInt8], now: Date = Date()) -> DeliveryResult {
        guard let reason = reason(status: status, body: body) else { return .success }
        let wait = RetryAfter.parse(retryAfter, now: now)
        switch (status, reason) {
        case (_, .bindRelationNotFound), (_, .channelTokenTimeout):
            return DeliveryResult(.expiredChannel, reason: reason.rawValue, channelExpiredAt: now)
        case (_, .dataRequiredNotFound):
            return DeliveryResult(.badChannel, reason: reason.rawValue)
        case (_, .requestParamsNotValid):
            return DeliveryResult(.invalidNotificationFormat, reason: reason.rawValue)
        case (_, .authenticationFailed), (_, .requestTimeExpires), (401, _), (403, _):
            return DeliveryResult(.invalidCredentials, reason: reason.rawValue)
        case (_, .quotaUseUp), (_, .requestsTooFrequent), (429, _):
            return DeliveryResult(.throttled, reason: reason.rawValue, retryAfter: wait ?? BaiduAdapter.throttleBackoff)
        case (_, .internalServerError), (500..<600, _):
            return DeliveryResult(.pnsUnavailable, reason: reason.rawValue, retryAfter: wait)
        default:
            return DeliveryResult(.unknownError, reason: reason.rawValue)
        }
    }

    /// Whether a result is a refusal Baidu documents as worth retrying whatever the HTTP status (quota, frequency).
    public static func isRetryableRefusal(_ result: DeliveryResult) -> Bool {
        result.outcome == .throttled
            && (result.reason == BaiduReason.quotaUseUp.rawValue || result.reason == BaiduReason.requestsTooFrequent.rawValue)
    }
}
