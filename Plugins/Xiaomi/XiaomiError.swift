import AdapterKit

/// A failure of the Xiaomi adapter that is not about one device: Mi Push refused the app's credentials or package
/// name for a whole request, or the settings are unusable. The adapter logs it (an operator has to act) while every
/// device of the request ends with its outcome. It never carries the AppSecret.
public struct XiaomiError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What kind of failure this is. New codes can be added without breaking callers.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        let rawValue: String
        public var description: String { rawValue }

        /// Mi Push refused the AppSecret or the app (`21301`, `21302`, `22000`, `22006`, `22007`, `10031`, `10036`).
        public static let credentialsRejected = Code(rawValue: "credentialsRejected")
        /// Mi Push refused the package name the hub sent as `restricted_package_name` (`22022`).
        public static let packageNameRejected = Code(rawValue: "packageNameRejected")
        /// The settings cannot make an adapter.
        public static let invalidSettings = Code(rawValue: "invalidSettings")
    }

    /// What kind of failure this is.
    public var code: Code
    /// Mi Push's reason, when it named one.
    public var reason: XiaomiReason?
    /// What went wrong and what to fix, without secrets.
    public var message: String

    /// Creates an error.
    public init(_ code: Code, reason: XiaomiReason? = nil, _ message: String) {
        self.code = code
        self.reason = reason
        self.message = message
    }

    /// The request-level error a reason stands for, or `nil` when the reason is about the message or the devices.
    public init?(reason: XiaomiReason) {
        switch reason {
        case .authenticationFailed, .tokenAuthenticationFailed, .illegalApp, .invalidAppID, .invalidAppKey,
            .appBlacklisted, .appOperationForbidden:
            self.init(
                .credentialsRejected, reason: reason,
                "Mi Push refused the app's credentials (code \(reason.rawValue)); check appSecret and the app's state in the Xiaomi console")
        case .invalidPackageName:
            self.init(
                .packageNameRejected, reason: reason,
                "Mi Push refused the package name (code 22022); packageNames must be the app's package names in the Xiaomi console")
        default:
            return nil
        }
    }

    public var description: String { "\(code): \(message)" }
}
