/// Why FCM refused a message: the `errorCode` of its error answer (FCM's `ErrorCode` enum), else Google's canonical
/// `status`. A code FCM adds later arrives as ``unknown(_:)``, as does `HTTP<status>` for an answer naming none.
public enum FCMReason: Hashable, Sendable, CustomStringConvertible {
    case unspecifiedError
    case invalidArgument
    case unregistered
    case senderIDMismatch
    case quotaExceeded
    case unavailable
    case `internal`
    case thirdPartyAuthError
    case permissionDenied
    case unauthenticated
    case resourceExhausted
    case notFound
    /// A code this adapter does not know, as FCM spelled it.
    case unknown(String)

    private static let known: [FCMReason] = [
        .unspecifiedError, .invalidArgument, .unregistered, .senderIDMismatch, .quotaExceeded, .unavailable, .internal,
        .thirdPartyAuthError, .permissionDenied, .unauthenticated, .resourceExhausted, .notFound,
    ]
    private static let byName = Dictionary(known.map { ($0.rawValue, $0) }, uniquingKeysWith: { first, _ in first })

    /// The reason FCM names `rawValue`, or ``unknown(_:)``.
    public init(rawValue: String) { self = Self.byName[rawValue] ?? .unknown(rawValue) }

    /// The code as FCM spells it.
    public var rawValue: String {
        switch self {
        case .unspecifiedError: "UNSPECIFIED_ERROR"
        case .invalidArgument: "INVALID_ARGUMENT"
        case .unregistered: "UNREGISTERED"
        case .senderIDMismatch: "SENDER_ID_MISMATCH"
        case .quotaExceeded: "QUOTA_EXCEEDED"
        case .unavailable: "UNAVAILABLE"
        case .internal: "INTERNAL"
        case .thirdPartyAuthError: "THIRD_PARTY_AUTH_ERROR"
        case .permissionDenied: "PERMISSION_DENIED"
        case .unauthenticated: "UNAUTHENTICATED"
        case .resourceExhausted: "RESOURCE_EXHAUSTED"
        case .notFound: "NOT_FOUND"
        case .unknown(let text): text
        }
    }

    public var description: String { rawValue }
}
