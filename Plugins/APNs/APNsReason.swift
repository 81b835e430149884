/// Why APNs refused a notification: the `reason` of its error answer, as Apple's "Handling notification responses
/// from APNs" lists them. A reason APNs adds later arrives as ``unknown(_:)``.
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
        .invalidProviderToken, .missingProviderToken, .unrelatedKeyIDInToken, .badPath, .methodNotAllowed, .expiredToken,
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
}
