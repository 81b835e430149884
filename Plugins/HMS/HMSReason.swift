/// Push Kit's result code of a send (the `code` of its answer), as Huawei's server API reference lists them. A code
/// this adapter does not know arrives as ``unknown(_:)``.
public enum HMSReason: Hashable, Sendable, CustomStringConvertible {
    /// `80000000`: sent to every token.
    case success
    /// `80100000`: sent to some tokens; the others are listed in `msg` as `illegal_tokens`.
    case partialSuccess
    /// `80100003`: the message is malformed.
    case illegalPayload
    /// `80200001`: the access token is missing, or belongs to another app.
    case oauthAuthenticationError
    /// `80200003`: the access token has expired.
    case oauthTokenExpired
    /// `80300007`: every token is invalid.
    case allTokensInvalid
    /// `80300008`: the message body is too large.
    case messageBodyTooLarge
    /// `80300010`: the message names no token or more than 1,000.
    case tokenCountOutOfRange
    /// `80600003`: requests come too fast (traffic control, HTTP 503).
    case requestRateTooHigh
    /// `81000001`: an internal error of Push Kit.
    case internalError
    /// A code this adapter does not know, as Push Kit sent it.
    case unknown(String)

    private static let known: [HMSReason] = [
        .success, .partialSuccess, .illegalPayload, .oauthAuthenticationError, .oauthTokenExpired, .allTokensInvalid,
        .messageBodyTooLarge, .tokenCountOutOfRange, .requestRateTooHigh, .internalError,
    ]
    private static let byCode = Dictionary(known.map { ($0.rawValue, $0) }, uniquingKeysWith: { first, _ in first })

    /// The reason Push Kit's code `rawValue` names, or ``unknown(_:)``.
    public init(rawValue: String) { self = Self.byCode[rawValue] ?? .unknown(rawValue) }

    /// The code as Push Kit sends it.
    public var rawValue: String {
        switch self {
        case .success: "80000000"
        case .partialSuccess: "80100000"
        case .illegalPayload: "80100003"
        case .oauthAuthenticationError: "80200001"
        case .oauthTokenExpired: "80200003"
        case .allTokensInvalid: "80300007"
        case .messageBodyTooLarge: "80300008"
        case .tokenCountOutOfRange: "80300010"
        case .requestRateTooHigh: "80600003"
        case .internalError: "81000001"
        case .unknown(let code): code
        }
    }

    public var description: String { rawValue }
}
