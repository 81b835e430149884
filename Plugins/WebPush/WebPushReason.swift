/// Why a push service refused a message. Push services answer with a status (RFC 8030 §5, RFC 8292 §4) and no common
/// reason vocabulary, so the reason is named after the status; a status without a name arrives as ``unknown(_:)``
/// (`Status<code>`).
public enum WebPushReason: Hashable, Sendable, CustomStringConvertible {
    /// 404: the push service does not know the subscription.
    case subscriptionNotFound
    /// 410: the subscription was removed.
    case subscriptionGone
    /// 413: the encrypted message is larger than the service accepts.
    case payloadTooLarge
    /// 429: the service throttles this application server.
    case tooManyRequests
    /// 400: the request is malformed.
    case badRequest
    /// 401: the service refused the VAPID token.
    case vapidRejected
    /// 403: the subscription was made for another application server key.
    case vapidKeyMismatch
    /// Any other status, as `Status<code>`.
    case unknown(String)

    /// The reason of a push service's answer status.
    public init(status: Int) {
        switch status {
        case 404: self = .subscriptionNotFound
        case 410: self = .subscriptionGone
        case 413: self = .payloadTooLarge
        case 429: self = .tooManyRequests
        case 400: self = .badRequest
        case 401: self = .vapidRejected
        case 403: self = .vapidKeyMismatch
        default: self = .unknown("Status\(status)")
        }
    }

    /// The reason's name, as outcomes record it.
    public var rawValue: String {
        switch self {
        case .subscriptionNotFound: "SubscriptionNotFound"
        case .subscriptionGone: "SubscriptionGone"
        case .payloadTooLarge: "PayloadTooLarge"
        case .tooManyRequests: "TooManyRequests"
        case .badRequest: "BadRequest"
        case .vapidRejected: "VAPIDRejected"
        case .vapidKeyMismatch: "VAPIDKeyMismatch"
        case .unknown(let text): text
        }
    }

    public var description: String { rawValue }
}
