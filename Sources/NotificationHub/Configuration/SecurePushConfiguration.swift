import Crypto
import Foundation

/// A hub's `securePush:` section: how secure notifications are stored, announced and fetched.
///
/// ```yaml
/// securePush:
///   encryptionKey: {env: HUB_SECURE_KEY}   # 32 bytes, base64 (AES-256-GCM); `hub token --new-key` prints one
///   defaultTimeToLiveSeconds: 86400
///   apnsStyle: background                  # or alert (mutable-content + placeholder text)
///   alertText: "You have a new secure message"
///   authentication:
///     issuer: https://id.example.com
///     audience: notification-hub
///     userClaim: sub
///     clockSkewSeconds: 60
///     hs256Secret: {env: APP_JWT_SECRET}   # and/or publicKeys (PEM, RS256/ES256), and/or jwks (a JWKS file)
/// ```
public struct SecurePushConfiguration: Sendable {
    /// The AES-256-GCM key that encrypts payloads at rest.
    public var encryptionKey: SymmetricKey
    /// How long a secure notification may be fetched when the sender gives no time-to-live.
    public var defaultTimeToLiveSeconds: Double
    /// The longest time-to-live a sender may ask for.
    public var maximumTimeToLiveSeconds: Double
    /// What an APNs device receives.
    public var apnsStyle: APNsStyle
    /// The placeholder text of the `alert` style.
    public var alertText: String
    /// How device requests are authenticated.
    public var authentication: Authentication
    /// Seconds between purges of expired secure notifications.
    public var purgeIntervalSeconds: Double

    /// How an APNs device is told about a secure notification.
    public enum APNsStyle: String, Sendable, Hashable {
        /// A silent background push (`content-available: 1`, priority 5).
        case background
        /// A visible alert with `mutable-content: 1` and placeholder text, replaced by a notification service extension.
        case alert
    }

    /// Verification of the app's bearer tokens (JWT).
    public struct Authentication: Sendable, Hashable {
        /// The required `iss`.
        public var issuer: String?
        /// The required `aud` (one of the token's audiences).
        public var audience: String?
        /// The claim that names the user. Default `sub`.
        public var userClaim: String
        /// Allowed clock skew for `exp`, `nbf` and `iat`, in seconds. Default 60.
        public var clockSkewSeconds: Double
        /// An HS256 shared secret.
        public var hs256Secret: String?
        /// PEM public keys (RSA for RS256, P-256 for ES256).
        public var publicKeysPEM: [String]
        /// A JSON Web Key Set document.
        public var jwksJSON: String?

        /// Creates settings.
        public init(
            issuer: String? = nil, audience: String? = nil, userClaim: String = "sub", clockSkewSeconds: Double = 60,
            hs256Secret: String? = nil, publicKeysPEM: [String] = [], jwksJSON: String? = nil
        ) {
            self.issuer = issuer
            self.audience = audience
            self.userClaim = userClaim
            self.clockSkewSeconds = clockSkewSeconds
            self.hs256Secret = hs256Secret
            self.publicKeysPEM = publicKeysPEM
            self.jwksJSON = jwksJSON
        }
    }

    /// Creates settings in code.
    public init(
        encryptionKey: SymmetricKey, authentication: Authentication, defaultTimeToLiveSeconds: Double = 86_400,
        maximumTimeToLiveSeconds: Double = 30 * 86_400, apnsStyle: APNsStyle = .background,
        alertText: String = "You have a new secure message", purgeIntervalSeconds: Double = 60
    ) {
        self.encryptionKey = encryptionKey
        self.authentication = authentication
        self.defaultTimeToLiveSeconds = defaultTimeToLiveSeconds
        self.maximumTimeToLiveSeconds = maximumTimeToLiveSeconds
        self.apnsStyle = apnsStyle
        self.alertText = alertText
        self.purgeIntervalSeconds = purgeIntervalSeconds
    }

    init?(_ node: ConfigurationNode) {
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
        let style = APNsStyle(rawValue: node.choice("apnsStyle", ["background", "alert"], default: "background")) ?? .background
        let alertText = node.string("alertText", default: "You have a new secure message")
        let purge = node.seconds("purgeIntervalSeconds", default: 60, in: 1...86_400)

        let authNode = node.child("authentication")
        var authentication = Authentication()
        if !authNode.isPresent {
            authNode.report("missing required key 'authentication': say how device tokens (JWT) are verified")
        } else {
            authentication.issuer = authNode.string("issuer")
            authentication.audience = authNode.string("audience")
            authentication.userClaim = authNode.string("userClaim", default: "sub")
            authentication.clockSkewSeconds = authNode.seconds("clockSkewSeconds", default: 60, in: 0...3600)
            authentication.hs256Secret = authNode.secret("hs256Secret", required: false)
            if let secret = authentication.hs256Secret, secret.utf8.count < 32 {
                authNode.child("hs256Secret").report("an HS256 secret must be at least 32 bytes")
            }
            let keysNode = authNode.child("publicKeys")
            for (index, element) in keysNode.elements().enumerated() {
                if let pem = element.secretValue() {
                    if pem.contains("-----BEGIN") {
                        authentication.publicKeysPEM.append(pem)
                    } else {
                        element.report("publicKeys[\(index)] is not a PEM public key")
                    }
                }
            }
            authentication.jwksJSON = authNode.secret("jwks", required: false)
            if authentication.hs256Secret == nil, authentication.publicKeysPEM.isEmpty, authentication.jwksJSON == nil {
                authNode.report("give at least one of hs256Secret, publicKeys or jwks to verify device tokens")
            }
            authNode.rejectUnknownKeys()
        }
        node.rejectUnknownKeys()
        guard let key else { return nil }
        self.init(
            encryptionKey: key, authentication: authentication, defaultTimeToLiveSeconds: defaultTTL,
            maximumTimeToLiveSeconds: maximumTTL, apnsStyle: style, alertText: alertText, purgeIntervalSeconds: purge)
    }
}
