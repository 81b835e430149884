import AdapterKit
import Foundation

/// Maps Push Kit's answers to one outcome per token of a batch. The result `code` decides; the HTTP status only
/// where the body names no code.
///
/// | Push Kit | Outcome |
/// |---|---|
/// | `80000000` | success for every token |
/// | `80100000` (partial) | expiredChannel for each token in `msg`'s `illegal_tokens`, success for the others |
/// | `80300007` (all tokens invalid) | expiredChannel for every token (the installations are marked expired) |
/// | `80100003` (illegal payload), `80300010` (token count) | invalidNotificationFormat |
/// | `80300008` (body too large) | invalidNotificationSize |
/// | `80200001` (authentication), `80200003` after one renewal | invalidCredentials |
/// | `80600003`, HTTP 429 or 503 | throttled, retried after `Retry-After` or ``HMSAdapter/throttleBackoff`` |
/// | `81000001`, other 5xx | pnsUnavailable (retried, `Retry-After` honoured) |
/// | no answer | pnsUnreachable (retried) |
/// | anything else | unknownError with the code as reason |
public enum HMSOutcomeMapping {
    /// Push Kit's answer body: `{"code", "msg", "requestId"}`.
    struct Answer {
        var code: String?
        var msg: String?

        init(body: [UInt8]) {
            let object = try? JSONValue(parsing: body).objectValue
            code = object?["code"]?.stringValue
            msg = object?["msg"]?.stringValue
        }
    }

    /// The results for `tokens`, in order, from an answer's status, `Retry-After` and body.
    public static func results(
        tokens: [String], status: Int, retryAfter: String?, body: [UInt8], now: Date = Date()
    ) -> [DeliveryResult] {
        let answer = Answer(body: body)
        let reason = HMSReason(rawValue: answer.code ?? "HTTP\(status)")
        let wait = RetryAfter.parse(retryAfter, now: now)
        func all(_ result: DeliveryResult) -> [DeliveryResult] { Array(repeating: result, count: tokens.count) }
        switch (status, reason) {
        case (200, .success):
            return all(.success)
        case (_, .partialSuccess):
            let illegal = illegalTokens(in: answer.msg)
            return tokens.map {
                illegal.contains($0) ? DeliveryResult(.expiredChannel, reason: reason.rawValue, channelExpiredAt: now) : .success
            }
        case (_, .allTokensInvalid):
            return all(DeliveryResult(.expiredChannel, reason: reason.rawValue, channelExpiredAt: now))
        case (_, .illegalPayload), (_, .tokenCountOutOfRange):
            return all(DeliveryResult(.invalidNotificationFormat, reason: reason.rawValue))
        case (_, .messageBodyTooLarge):
            return all(DeliveryResult(.invalidNotificationSize, reason: reason.rawValue))
        case (_, .oauthAuthenticationError), (_, .oauthTokenExpired), (401, _):
            return all(DeliveryResult(.invalidCredentials, reason: reason.rawValue))
        case (_, .requestRateTooHigh), (429, _), (503, _):
            return all(DeliveryResult(.throttled, reason: reason.rawValue, retryAfter: wait ?? HMSAdapter.throttleBackoff))
        case (_, .internalError), (500..<600, _):
            return all(DeliveryResult(.pnsUnavailable, reason: reason.rawValue, retryAfter: wait))
        default:
            return all(DeliveryResult(.unknownError, reason: reason.rawValue))
        }
    }

    /// The tokens a partial success lists: `msg` is JSON text holding `illegal_tokens` (an array of tokens), as
    /// Huawei documents it; `illegalTokens` (an object of arrays by cause) is read too.
    static func illegalTokens(in msg: String?) -> Set<String> {
        guard let msg, let object = try? JSONValue(parsing: Array(msg.utf8)).objectValue else { return [] }
        var tokens = Set<String>()
        for value in object["illegal_tokens"]?.arrayValue ?? [] {
            if let token = value.stringValue { tokens.insert(token) }
        }
        for (_, list) in object["illegalTokens"]?.objectValue ?? [:] {
            for value in list.arrayValue ?? [] {
                if let token = value.stringValue { tokens.insert(token) }
            }
        }
        return tokens
    }
}
