/// Why APNs refused a notification: the `reason` of its error answer, as Apple's "Handling notification responses
/// from APNs" lists them. A reason APNs adds later arrives as ``unknown(_:)``.
///
/// The 403 reasons about the key that signed the provider token came with team-scoped keys restricted to one
/// environment (February 2025): Apple's table lists `UnrelatedKeyIdInToken` ("the key ID in the provider token isn't
/// related to the key ID of the token used in the first push of this connection") and `BadEnvironmentKeyIdInToken`
/// ("the key ID in the provider token doesn't match the environment"); APNs has also been seen answering the second
/// as `BadEnvironmentKeyInToken`, so both spellings are known (``isWrongEnvironmentKey``).
public enum APNsReason: Hashable, Sendable, CustomStringConvertible {
    case badCollapseID
    case badDeviceToken
    case badExpirationDate
    case badMessageID
    case badPriority
    case badTopic
    case deviceTokenNotForTopic
    case duplicateHeaders
    case idleTimeout
    case invalidPushType
    case missingDeviceToken
    case missingTopic
    case payloadEmpty
    case topicDisallowed
    case badCertificate
    case badCertificateEnvironment
    case expiredProviderToken
    case forbidden
    case invalidProviderToken
    case missingProviderToken
    case unrelatedKeyIDInToken
    /// 403: the key that signed the provider token is restricted to the other environment (Apple's spelling).
    case badEnvironmentKeyIDInToken
    /// 403: the same, as APNs has been seen to spell it.
    case badEnvironmentKeyInToken
    case badPath
    case methodNotAllowed
    case expiredToken
    case unregistered
    case payloadTooLarge
    case tooManyProviderTokenUpdates
    case tooManyRequests
    case internalServerError
    case serviceUnavailable
    case shutdown
    /// A reason this adapter does not know, as APNs spelled it.
    case unknown(String)

    private static let known: [APNsReason] = [
        .badCollapseID, .badDeviceToken, .badExpirationDate, .badMessageID, .badPriority, .badTopic,
        .deviceTokenNotForTopic, .duplicateHeaders, .idleTimeout, .invalidPushType, .missingDeviceToken, .missingTopic,
        .payloadEmpty, .topicDisallowed, .badCertificate, .badCertificateEnvironment, .expiredProviderToken, .forbidden,
        .invalidProviderToken, .missingProviderToken, .unrelatedKeyIDInToken, .badEnvironmentKeyIDInToken,
        .badEnvironmentKeyInToken, .badPath, .methodNotAllowed, .expiredToken,
        .unregistered, .payloadTooLarge, .tooManyProviderTokenUpdates, .tooManyRequests, .internalServerError,
        .serviceUnavailable, .shutdown,
    ]
    private static let byName = Dictionary(known.map { ($0.rawValue, $0) }, uniquingKeysWith: { first, _ in first })

    /// The reason APNs names `rawValue`, or ``unknown(_:)``.
    public init(rawValue: String) { self = Self.byName[rawValue] ?? .unknown(rawValue) }

    /// The reason as APNs spells it.
    public var rawValue: String {
        switch self {
        case .badCollapseID: "BadCollapseId"
        case .badDeviceToken: "BadDeviceToken"
        case .badExpirationDate: "BadExpirationDate"
        case .badMessageID: "BadMessageId"
        case .badPriority: "BadPriority"
        case .badTopic: "BadTopic"
        case .deviceTokenNotForTopic: "DeviceTokenNotForTopic"
        case .duplicateHeaders: "DuplicateHeaders"
        case .idleTimeout: "IdleTimeout"
        case .invalidPushType: "InvalidPushType"
        case .missingDeviceToken: "MissingDeviceToken"
        case .missingTopic: "MissingTopic"
        case .payloadEmpty: "PayloadEmpty"
        case .topicDisallowed: "TopicDisallowed"
        case .badCertificate: "BadCertificate"
        case .badCertificateEnvironment: "BadCertificateEnvironment"
        case .expiredProviderToken: "ExpiredProviderToken"
        case .forbidden: "Forbidden"
        case .invalidProviderToken: "InvalidProviderToken"
        case .missingProviderToken: "MissingProviderToken"
        case .unrelatedKeyIDInToken: "UnrelatedKeyIdInToken"
        case .badEnvironmentKeyIDInToken: "BadEnvironmentKeyIdInToken"
        case .badEnvironmentKeyInToken: "BadEnvironmentKeyInToken"
        case .badPath: "BadPath"
        case .methodNotAllowed: "MethodNotAllowed"
        case .expiredToken: "ExpiredToken"
        case .unregistered: "Unregistered"
        case .payloadTooLarge: "PayloadTooLarge"
        case .tooManyProviderTokenUpdates: "TooManyProviderTokenUpdates"
        case .tooManyRequests: "TooManyRequests"
        case .internalServerError: "InternalServerError"
        case .serviceUnavailable: "ServiceUnavailable"
        case .shutdown: "Shutdown"
        case .unknown(let text): text
        }
    }

    public var description: String { rawValue }

    /// Whether the key that signed the provider token is restricted to the other environment
    /// (`BadEnvironmentKeyIdInToken`, `BadEnvironmentKeyInToken`).
    public var isWrongEnvironmentKey: Bool { self == .badEnvironmentKeyIDInToken || self == .badEnvironmentKeyInToken }

    /// Whether the reason is about which key signed the provider token (the wrong-environment reasons and
    /// `UnrelatedKeyIdInToken`), so its outcome names the key to fix.
    public var isAboutTheKey: Bool { isWrongEnvironmentKey || self == .unrelatedKeyIDInToken }
}
