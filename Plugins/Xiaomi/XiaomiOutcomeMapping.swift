import AdapterKit
import Foundation

/// Maps Mi Push's answer to one `/v3/message/regid` request to one outcome per registration id. The answer's
/// `code` decides (Xiaomi's server error codes, https://dev.mi.com/xiaomihyperos/documentation/detail?pId=1560);
/// the HTTP status where the body names no code, and a permanent HTTP refusal (a 4xx other than 429) is never made
/// retryable by its body.
///
/// | Mi Push | Outcome |
/// |---|---|
/// | `0` | success, except each id listed in `data.bad_regids`: expiredChannel (the installation is marked expired) |
/// | `20301` (sending failed: no valid target) | expiredChannel for every id of the request |
/// | `21301`, `21302`, `22000`, `22006`, `22007`, `10031`, `10036`, `22022` (package name) | invalidCredentials |
/// | `10008`, `10012`, `10016`, `10017`, `21305`, `65036`–`65038` | invalidNotificationFormat |
/// | `65009`, `65014`, `65015` (content or extras too long) | invalidNotificationSize |
/// | `10027`, `10034`, `21303`, HTTP 429 | throttled, retried after `Retry-After` or ``XiaomiAdapter/throttleBackoff`` |
/// | `1`, `10001`–`10003`, `10037`, `26003`, `65029`, HTTP 5xx | pnsUnavailable (retried, `Retry-After` honoured) |
/// | HTTP 401, 403 without a code | invalidCredentials |
/// | HTTP 413 without a code | invalidNotificationSize |
/// | anything else | unknownError with the code (or `HTTP<status>`) as reason |
public enum XiaomiOutcomeMapping {
    /// Mi Push's answer body: `{"result", "code", "description", "info", "reason", "trace_id", "data": {"id",
    /// "bad_regids"}}`.
    public struct Answer: Sendable {
        /// `code` as text (it is a number; text holding digits is read too).
        public var code: String?
        /// `data.bad_regids`, split at commas.
        public var badRegistrationIDs: Set<String>
        /// `reason` or `description`, shortened, for logs.
        public var reason: String?

        /// Reads an answer body; anything unreadable leaves the members empty.
        public init(body: [UInt8]) {
            let object = (try? JSONValue(parsing: body))?.objectValue
            switch object?["code"] {
            case .number(let number)?: code = PlatformNumber.int64(number).map(String.init)
            case .string(let text)?: code = PlatformNumber.int64(text).map(String.init)
            default: code = nil
            }
            let listed = object?["data"]?.objectValue?["bad_regids"]?.stringValue ?? ""
            badRegistrationIDs = Set(listed.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty })
            reason = (object?["reason"]?.stringValue ?? object?["description"]?.stringValue).map { String($0.prefix(120)) }
        }
    }

    /// The reason an answer names: its code, else `HTTP<status>`.
    public static func reason(status: Int, answer: Answer) -> XiaomiReason {
        XiaomiReason(rawValue: answer.code ?? "HTTP\(status)")
    }

    /// The results for `registrationIDs`, in order, from an answer's status, `Retry-After` and body.
    public static func results(
        registrationIDs: [String], status: Int, retryAfter: String?, body: [UInt8], now: Date = Date()
    ) -> [DeliveryResult] {
        let answer = Answer(body: body)
        let reason = reason(status: status, answer: answer)
        func all(_ result: DeliveryResult) -> [DeliveryResult] { Array(repeating: result, count: registrationIDs.count) }
        if (200..<300).contains(status), reason == .success {
            return registrationIDs.map {
                answer.badRegistrationIDs.contains($0)
                    ? DeliveryResult(.expiredChannel, reason: XiaomiReason.badRegistrationID.rawValue, channelExpiredAt: now)
                    : .success
            }
        }
        let result = result(status: status, reason: reason, retryAfter: RetryAfter.parse(retryAfter, now: now), now: now)
        // Only 429, 5xx and the documented retryable codes on an answer that is not a permanent refusal are retried.
        if result.outcome.isRetryable, (400..<500).contains(status), status != 429 {
            return all(DeliveryResult(.unknownError, reason: reason.rawValue))
        }
        return all(result)
    }

    /// The outcome one reason stands for, for every id of a request.
    static func result(status: Int, reason: XiaomiReason, retryAfter wait: Duration?, now: Date) -> DeliveryResult {
        switch (status, reason) {
        case (_, .sendFailed):
            return DeliveryResult(.expiredChannel, reason: reason.rawValue, channelExpiredAt: now)
        case (_, .authenticationFailed), (_, .tokenAuthenticationFailed), (_, .illegalApp), (_, .invalidAppID),
            (_, .invalidAppKey), (_, .appBlacklisted), (_, .appOperationForbidden), (_, .invalidPackageName):
            return DeliveryResult(.invalidCredentials, reason: reason.rawValue)
        case (_, .parameterError), (_, .illegalRequest), (_, .missingParameter), (_, .invalidParameter),
            (_, .missingRequiredParameter), (_, .callbackTooLong), (_, .callbackURLTooLong), (_, .invalidCallbackURL):
            return DeliveryResult(.invalidNotificationFormat, reason: reason.rawValue)
        case (_, .messageTooLong), (_, .tooManyExtras), (_, .extrasTooLong):
            return DeliveryResult(.invalidNotificationSize, reason: reason.rawValue)
        case (_, .apiCallsTooFrequent), (_, .dailyQuotaExceeded), (_, .restrictedRequest), (429, _):
            return DeliveryResult(.throttled, reason: reason.rawValue, retryAfter: wait ?? XiaomiAdapter.throttleBackoff)
        case (_, .internalError), (_, .systemError), (_, .systemBusy), (_, .remoteServiceError), (_, .requestExpired),
            (_, .internalCallFailed), (_, .remoteServiceException), (500..<600, _):
            return DeliveryResult(.pnsUnavailable, reason: reason.rawValue, retryAfter: wait)
        case (401, _), (403, _):
            return DeliveryResult(.invalidCredentials, reason: reason.rawValue)
        case (413, _):
            return DeliveryResult(.invalidNotificationSize, reason: reason.rawValue)
        default:
            return DeliveryResult(.unknownError, reason: reason.rawValue)
        }
    }
}
