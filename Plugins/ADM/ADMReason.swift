/// Why Amazon Device Messaging refused a message: the `reason` of its error answer (`{"reason": "…"}`, also in the
/// `X-Amzn-ErrorType` header), as Amazon's "Send a Message" page lists them
/// (https://developer.amazon.com/docs/adm/send-message.html, "Response format"). A reason this adapter does not know
/// arrives as ``unknown(_:)``.
public enum ADMReason: Hashable, Sendable, CustomStringConvertible {
    /// 400: the registration id is not a valid ADM registration id.
    case invalidRegistrationId
    /// 400: `data` is not a map of strings.
    case invalidData
    /// 400: `consolidationKey` is not a string of at most 64 characters.
    case invalidConsolidationKey
    /// 400: `expiresAfter` is not a whole number of seconds from 60 to 2,678,400.
    case invalidExpiration
    /// 400: `md5` does not match the data.
    case invalidChecksum
    /// 400: the `X-Amzn-Type-Version` or `X-Amzn-Accept-Type` header names a type ADM does not know.
    case invalidType
    /// 400: the app instance is no longer registered (uninstalled, or it unregistered).
    case unregistered
    /// 401: the access token expired (or is not one Amazon issued).
    case accessTokenExpired
    /// 413: `data` is larger than 6 KB.
    case messageTooLarge
    /// 429: the sender exceeded its allowed rate; `Retry-After` says when to try again.
    case maxRateExceeded
    /// 500: an internal error of ADM.
    case internalServerError
    /// 503: ADM is temporarily unavailable.
    case serviceUnavailable
    /// A reason this adapter does not know, as ADM sent it (or `HTTP<status>` when the answer named none).
    case unknown(String)

    private static let known: [ADMReason] = [
        .invalidRegistrationId, .invalidData, .invalidConsolidationKey, .invalidExpiration, .invalidChecksum,
        .invalidType, .unregistered, .accessTokenExpired, .messageTooLarge, .maxRateExceeded, .internalServerError,
        .serviceUnavailable,
    ]
    private static let byName = Dictionary(known.map { ($0.rawValue, $0) }, uniquingKeysWith: { first, _ in first })

    /// The reason ADM's `rawValue` names, or ``unknown(_:)``.
    public init(rawValue: String) { self = Self.byName[rawValue] ?? .unknown(rawValue) }

    /// The reason as ADM sends it.
    public var rawValue: String {
        switch self {
        case .invalidRegistrationId: "InvalidRegistrationId"
        case .invalidData: "InvalidData"
        case .invalidConsolidationKey: "InvalidConsolidationKey"
        case .invalidExpiration: "InvalidExpiration"
        case .invalidChecksum: "InvalidChecksum"
        case .invalidType: "InvalidType"
        case .unregistered: "Unregistered"
        case .accessTokenExpired: "AccessTokenExpired"
        case .messageTooLarge: "MessageTooLarge"
        case .maxRateExceeded: "MaxRateExceeded"
        case .internalServerError: "InternalServerError"
        case .serviceUnavailable: "ServiceUnavailable"
        case .unknown(let reason): reason
        }
    }

    public var description: String { rawValue }
}
