import Crypto
import Foundation

/// A hub's `securePush:` section: how secure notifications are stored, announced and fetched.
///
/// ```yaml
/// securePush:
///   encryptionKey: {env: HUB_SECURE_KEY}   # 32 bytes, base64 (AES-256-GCM); `hub token --new-key` prints one
///   defaultTimeToLiveSeconds: 86400
///   announcementStyle: background          # or alert: platforms that can show placeholder text do
///   alertText: "You have a new secure message"
/// ```
///
/// Devices fetch payloads with their user's bearer token, verified with the hub's ``DeviceAuthentication``
/// (`deviceAuthentication:`), which secure push requires.
public struct SecurePushConfiguration: Sendable {
    /// The AES-256-GCM key that encrypts payloads at rest.
    public var encryptionKey: SymmetricKey
    /// How long a secure notification may be fetched when the sender gives no time-to-live.
    public var defaultTimeToLiveSeconds: Double
    /// The longest time-to-live a sender may ask for.
    public var maximumTimeToLiveSeconds: Double
    /// How devices are told of a secure notification; each adapter announces in the style its platform can carry.
    public var announcementStyle: AnnouncementStyle
    /// The placeholder text of the `alert` style.
    public var alertText: String
    /// Seconds between purges of expired secure notifications.
    public var purgeIntervalSeconds: Double

    /// The settings that verify device tokens, now a hub-level section of their own.
    @available(*, deprecated, renamed: "DeviceAuthentication")
    public typealias Authentication = DeviceAuthentication

    /// How a device is told about a secure notification.
    public enum AnnouncementStyle: String, Sendable, Hashable {
        /// A silent background push carrying only the id.
        case background
        /// A visible alert with ``alertText`` as a placeholder, on platforms whose adapter can show one (the app
        /// replaces it with the fetched payload); a silent push elsewhere.
        case alert
    }

    /// Creates settings in code.
    public init(
        encryptionKey: SymmetricKey, defaultTimeToLiveSeconds: Double = 86_400,
        maximumTimeToLiveSeconds: Double = 30 * 86_400, announcementStyle: AnnouncementStyle = .background,
        alertText: String = "You have a new secure message", purgeIntervalSeconds: Double = 60
    ) {
        self.encryptionKey = encryptionKey
        self.defaultTimeToLiveSeconds = defaultTimeToLiveSeconds
        self.maximumTimeToLiveSeconds = maximumTimeToLiveSeconds
        self.announcementStyle = announcementStyle
        self.alertText = alertText
        self.purgeIntervalSeconds = purgeIntervalSeconds
    }

    init?(_ node: ConfigurationNode, deviceTokensConfigured: Bool) {
        guard node.isPresent else { return nil }
        let keyText = node.secret("encryptionKey")
        var key: SymmetricKey?
        if let keyText {
            if let data = Data(base64Encoded: keyText), data.count == 32 {
                key = SymmetricKey(data: data)
            } else {
                node.child("encryptionKey").report(
                    "encryptionKey must be 32 random bytes in base64 (44 characters); generate one with `hub token --new-key`")
            }
        }
        let defaultTTL = node.seconds("defaultTimeToLiveSeconds", default: 86_400, in: 1...31_536_000)
        let maximumTTL = node.seconds("maximumTimeToLiveSeconds", default: max(defaultTTL, 30 * 86_400), in: 1...31_536_000)
        if defaultTTL > maximumTTL {
            node.child("defaultTimeToLiveSeconds").report("defaultTimeToLiveSeconds must not exceed maximumTimeToLiveSeconds")
        }
        // `apnsStyle` is the key's former name, still read when `announcementStyle` is absent.
        let styleKey = node.child("announcementStyle").isPresent || !node.child("apnsStyle").isPresent ? "announcementStyle" : "apnsStyle"
        let style = AnnouncementStyle(rawValue: node.choice(styleKey, ["background", "alert"], default: "background")) ?? .background
        let alertText = node.string("alertText", default: "You have a new secure message")
        let purge = node.seconds("purgeIntervalSeconds", default: 60, in: 1...86_400)

        // `authentication` is read by ``DeviceAuthentication/read(hub:)`` (its former place); secure push needs
        // device tokens from one place or the other.
        _ = node.child("authentication")
        if !deviceTokensConfigured {
            node.report(
                "secure push needs device tokens: add a hub-level deviceAuthentication section saying how the app's JWTs are verified")
        }
        node.rejectUnknownKeys()
        guard let key else { return nil }
        self.init(
            encryptionKey: key, defaultTimeToLiveSeconds: defaultTTL,
            maximumTimeToLiveSeconds: maximumTTL, announcementStyle: style, alertText: alertText, purgeIntervalSeconds: purge)
    }
}

extension SecurePushConfiguration: Equatable {
    /// Equal when every setting is, the encryption key's bytes included.
    public static func == (lhs: SecurePushConfiguration, rhs: SecurePushConfiguration) -> Bool {
        lhs.encryptionKey.withUnsafeBytes { Array($0) } == rhs.encryptionKey.withUnsafeBytes { Array($0) }
            && lhs.defaultTimeToLiveSeconds == rhs.defaultTimeToLiveSeconds
            && lhs.maximumTimeToLiveSeconds == rhs.maximumTimeToLiveSeconds && lhs.announcementStyle == rhs.announcementStyle
            && lhs.alertText == rhs.alertText && lhs.purgeIntervalSeconds == rhs.purgeIntervalSeconds
    }
}
