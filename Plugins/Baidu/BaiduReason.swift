/// Why Baidu Cloud Push refused a request: the `error_code` of its error answer (`{"request_id", "error_code",
/// "error_msg"}`), as the REST API 3.0 documents them ("SDK开发指南", error answers; the codes also listed by Baidu's
/// client SDKs: http://push.baidu.com/doc/restapi/sdk_developer). A code this adapter does not know arrives as
/// ``unknown(_:)``.
public enum BaiduReason: Hashable, Sendable, CustomStringConvertible {
    /// 30600 Internal Server Error.
    case internalServerError
    /// 30601 Method Not Allowed.
    case methodNotAllowed
    /// 30602 Request Params Not Valid: a parameter is missing or breaks its rule.
    case requestParamsNotValid
    /// 30603 Authentication Failed: the api key is unknown or the signature does not match.
    case authenticationFailed
    /// 30604 Quota Use Up Payment Required.
    case quotaUseUp
    /// 30605 Data Required Not Found.
    case dataRequiredNotFound
    /// 30606 Request Time Expires Timeout: the signature's `timestamp` (or `expires`) is out of its window.
    case requestTimeExpires
    /// 30607 Channel Token Timeout: the device's channel expired.
    case channelTokenTimeout
    /// 30608 Bind Relation Not Found: the channel is not bound to the app (uninstalled, unbound).
    case bindRelationNotFound
    /// 30609 Bind Number Too Many.
    case bindNumberTooMany
    /// 30699 Requests Are Too Frequent To Be Temporarily Rejected.
    case requestsTooFrequent
    /// A code this adapter does not know, as Baidu sent it (or `HTTP<status>` when the answer named none).
    case unknown(String)

    private static let known: [BaiduReason] = [
        .internalServerError, .methodNotAllowed, .requestParamsNotValid, .authenticationFailed, .quotaUseUp,
        .dataRequiredNotFound, .requestTimeExpires, .channelTokenTimeout, .bindRelationNotFound, .bindNumberTooMany,
        .requestsTooFrequent,
    ]
    private static let byCode = Dictionary(known.map { ($0.rawValue, $0) }, uniquingKeysWith: { first, _ in first })

    /// The reason Baidu's `rawValue` (its `error_code` as text) names, or ``unknown(_:)``.
    public init(rawValue: String) { self = Self.byCode[rawValue] ?? .unknown(rawValue) }

    /// The `error_code` as text, e.g. `30608`.
    public var rawValue: String {
        switch self {
        case .internalServerError: "30600"
        case .methodNotAllowed: "30601"
        case .requestParamsNotValid: "30602"
        case .authenticationFailed: "30603"
        case .quotaUseUp: "30604"
        case .dataRequiredNotFound: "30605"
        case .requestTimeExpires: "30606"
        case .channelTokenTimeout: "30607"
        case .bindRelationNotFound: "30608"
        case .bindNumberTooMany: "30609"
        case .requestsTooFrequent: "30699"
        case .unknown(let reason): reason
        }
    }

    /// Baidu's `error_msg` for a known code.
    public var message: String? {
        switch self {
        case .internalServerError: "Internal Server Error"
        case .methodNotAllowed: "Method Not Allowed"
        case .requestParamsNotValid: "Request Params Not Valid"
        case .authenticationFailed: "Authentication Failed"
        case .quotaUseUp: "Quota Use Up Payment Required"
        case .dataRequiredNotFound: "Data Required Not Found"
        case .requestTimeExpires: "Request Time Expires Timeout"
        case .channelTokenTimeout: "Channel Token Timeout"
        case .bindRelationNotFound: "Bind Relation Not Found"
        case .bindNumberTooMany: "Bind Number Too Many"
        case .requestsTooFrequent: "Requests Are Too Frequent To Be Temporarily Rejected"
        case .unknown: nil
        }
    }

    public var description: String { rawValue }
}
