/// Why Mi Push refused a send: the `code` of its answer, as Xiaomi's "服务端错误码参考" (server error codes,
/// https://dev.mi.com/xiaomihyperos/documentation/detail?pId=1560) lists them, plus ``badRegistrationID`` for the ids a
/// successful answer names in `data.bad_regids`. A code this adapter does not know arrives as ``unknown(_:)``; the
/// raw value is the code as text (`"21301"`), or `HTTP<status>` when an answer carries no code.
public enum XiaomiReason: Hashable, Sendable, CustomStringConvertible {
    /// `0`: accepted.
    case success
    /// `-1`: unknown error.
    case unknownError
    /// `1`: internal error.
    case internalError
    /// `10001`: system error.
    case systemError
    /// `10002`: the system is busy.
    case systemBusy
    /// `10003`: a remote service failed.
    case remoteServiceError
    /// `10008`: a parameter is wrong (see the API documentation).
    case parameterError
    /// `10012`: an illegal request.
    case illegalRequest
    /// `10016`: a required parameter is missing.
    case missingParameter
    /// `10017`: a parameter's value is illegal.
    case invalidParameter
    /// `10027`: the app calls the API too often.
    case apiCallsTooFrequent
    /// `10031`: the app is on the blacklist and may not send.
    case appBlacklisted
    /// `10034`: the app sent too many messages today.
    case dailyQuotaExceeded
    /// `10036`: the app's operations are forbidden.
    case appOperationForbidden
    /// `10037`: the request expired.
    case requestExpired
    /// `20301`: sending the message failed (Mi Push answers it when no target of the request is valid).
    case sendFailed
    /// `21301`: authentication failed (the `Authorization: key=<AppSecret>` is not the app's).
    case authenticationFailed
    /// `21302`: token authentication failed.
    case tokenAuthenticationFailed
    /// `21303`: the request is restricted.
    case restrictedRequest
    /// `21305`: a required parameter is missing.
    case missingRequiredParameter
    /// `22000`: the app is illegal.
    case illegalApp
    /// `22006`: the app id is illegal.
    case invalidAppID
    /// `22007`: the app key is illegal.
    case invalidAppKey
    /// `22022`: the package name (`restricted_package_name`) is not the app's.
    case invalidPackageName
    /// `22102`: sending the app's notification failed.
    case sendNotificationFailed
    /// `26003`: an internal call of Mi Push failed.
    case internalCallFailed
    /// `65009`: the message content is too long.
    case messageTooLong
    /// `65014`: too many key-value pairs (`extra.*`).
    case tooManyExtras
    /// `65015`: the key-value pairs are too long in total.
    case extrasTooLong
    /// `65029`: a remote service failed.
    case remoteServiceException
    /// `65036`: the callback parameter is too long.
    case callbackTooLong
    /// `65037`: the callback URL is too long.
    case callbackURLTooLong
    /// `65038`: the callback URL is illegal.
    case invalidCallbackURL
    /// A registration id a successful answer lists in `data.bad_regids`: not a device of this app (uninstalled,
    /// unregistered, or never one).
    case badRegistrationID
    /// A code this adapter does not know, as Mi Push sent it (or `HTTP<status>` when the answer named none).
    case unknown(String)

    private static let known: [XiaomiReason] = [
        .success, .unknownError, .internalError, .systemError, .systemBusy, .remoteServiceError, .parameterError,
        .illegalRequest, .missingParameter, .invalidParameter, .apiCallsTooFrequent, .appBlacklisted,
        .dailyQuotaExceeded, .appOperationForbidden, .requestExpired, .sendFailed, .authenticationFailed,
        .tokenAuthenticationFailed, .restrictedRequest, .missingRequiredParameter, .illegalApp, .invalidAppID,
        .invalidAppKey, .invalidPackageName, .sendNotificationFailed, .internalCallFailed, .messageTooLong,
        .tooManyExtras, .extrasTooLong, .remoteServiceException, .callbackTooLong, .callbackURLTooLong,
        .invalidCallbackURL, .badRegistrationID,
    ]
    private static let byName = Dictionary(known.map { ($0.rawValue, $0) }, uniquingKeysWith: { first, _ in first })

    /// The reason `rawValue` names, or ``unknown(_:)``.
    public init(rawValue: String) { self = Self.byName[rawValue] ?? .unknown(rawValue) }

    /// The reason as Mi Push sends it: its code as text.
    public var rawValue: String {
        switch self {
        case .success: "0"
        case .unknownError: "-1"
        case .internalError: "1"
        case .systemError: "10001"
        case .systemBusy: "10002"
        case .remoteServiceError: "10003"
        case .parameterError: "10008"
        case .illegalRequest: "10012"
        case .missingParameter: "10016"
        case .invalidParameter: "10017"
        case .apiCallsTooFrequent: "10027"
        case .appBlacklisted: "10031"
        case .dailyQuotaExceeded: "10034"
        case .appOperationForbidden: "10036"
        case .requestExpired: "10037"
        case .sendFailed: "20301"
        case .authenticationFailed: "21301"
        case .tokenAuthenticationFailed: "21302"
        case .restrictedRequest: "21303"
        case .missingRequiredParameter: "21305"
        case .illegalApp: "22000"
        case .invalidAppID: "22006"
        case .invalidAppKey: "22007"
        case .invalidPackageName: "22022"
        case .sendNotificationFailed: "22102"
        case .internalCallFailed: "26003"
        case .messageTooLong: "65009"
        case .tooManyExtras: "65014"
        case .extrasTooLong: "65015"
        case .remoteServiceException: "65029"
        case .callbackTooLong: "65036"
        case .callbackURLTooLong: "65037"
        case .invalidCallbackURL: "65038"
        case .badRegistrationID: "bad_regids"
        case .unknown(let reason): reason
        }
    }

    public var description: String { rawValue }
}
